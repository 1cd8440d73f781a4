"""Algebraic simplification of a captured graph: identities that hold for every finite input.

References written the way KernelBench's are often compute far more than their result needs: a
max or a logsumexp over a dim a keepdim sum left at size 1, a softmax over one element, `x - x.mean(1)`
where dim 1 has size 1, a sum over the columns of a GEMM whose every column was computed. `simplify`
finds these and says how to write each affected node instead; `pytorch_source.forward_body` then
drops the nodes nothing needs any more (the GEMM whose columns were summed, the convolution under a
softmax of one element).

The rules, each exact in real arithmetic and each assuming finite values, as a valid reference's
outputs are. All but the linear reduction give the reference's result to the bit; that one reassociates
sums, and at fp32's 1e-4 a large GEMM's own rounding can already exceed the tolerance near zero (a
1024 x 8192 x 8192 GEMM of randn weights summed over its columns: 2-7 of 1024 sums out of 1e-4 against
the reference on the CPU in four draws, the reference itself off the fp64 result by up to 0.004; 1.27%
out on the H200, level2 14, docs/benchmarks.md session 16; nn.Linear's 90x smaller weights passed
there, level2 18), so it can be left out (`reassociate=False`):
- identity: a sum, mean, amax, amin, max, min, logsumexp or prod over dims that all have size 1 is
  its input (squeezed without keepdim); x * 1, x / 1, x + 0, x - 0 and a cast to the dtype x has are x.
- constant: a softmax over a dim of size 1 is ones, a log_softmax zeros, x - x zeros, max/min's
  indices over a dim of size 1 zeros. Written with the traced shape, so only where the task has one
  workload (one shape).
- linear reduction: a sum or mean over the N dim of an affine function of a GEMM's result (scales
  constant along N, any added terms) is that function of the GEMM with B summed over N, a GEMV:
  sum_n (s (A B)_mn + c_n) = s (A (B 1))_m + sum_n c_n; and likewise over the M dim of a 2-D product.
  fp32 and fp64 GEMMs only (`EXACT_FLOATS` says why). Convolutions, the other linear op, are left
  alone: cuDNN computes them in tf32 by default, and such a reference differs from any other
  convolution by more than 1e-4 on many elements (18% of a ConvTranspose2d's, docs/benchmarks.md,
  session 13).

Imports without torch. Budget: about 370 lines.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from kernelarc.agents.builtin.moves.base import OpNode, TaskAnalysis
from kernelarc.agents.builtin.moves.emit import literal
from kernelarc.agents.builtin.moves.facts import GemmOperands, Patterns
from kernelarc.agents.builtin.patterns import CASTS, SOFTMAX_OPS, Graph, op_name
from kernelarc.agents.builtin.pytorch_source import device_source

REDUCTIONS = {"sum", "mean", "amax", "amin", "logsumexp", "prod", "max", "min"}
"""Reductions that return their input when every reduced dim has size 1."""
SELECTING = {"max", "min"}
"""Reductions over a dim that return (values, indices)."""
LINEAR_GEMMS = {"linear", "matmul", "mm", "addmm"}
"""GEMM forms whose column or row sums the linear-reduction rule rewrites."""
EXACT_FLOATS = {"float32", "float64"}
"""GEMM dtypes the linear-reduction rule rewrites. In bf16 or fp16 the reference rounds each of the N
products to the dtype before summing them, and the sum of those N roundings is noise a GEMV does not
reproduce: on the CPU, 1 of 32 sums over 96 bf16 columns (the GEMV in fp32) fell outside bf16's 1e-2."""


@dataclass(frozen=True)
class Rewrite:
    """How to write one node instead, and why."""

    node: str
    expression: str
    """Python source over node, input and parameter names: the node's new value."""
    rule: str
    """`size1_reduction` (a reduction kernel dropped), `identity` (a cheap op dropped), `constant` or
    `linear_reduction`."""
    what: str
    """One line for the candidate's docstring: which identity, on which node."""


@dataclass(frozen=True)
class Simplification:
    """Every rewrite `simplify` found, in graph order."""

    rewrites: tuple[Rewrite, ...]

    def expressions(self) -> dict[str, str]:
        """Node -> expression, as `pytorch_source.forward_body` takes them."""
        return {r.node: r.expression for r in self.rewrites}

    @property
    def removes_work(self) -> bool:
        """Some rewrite drops a kernel or replaces computation (a constant, a GEMV), not only a cheap op."""
        return any(r.rule != "identity" for r in self.rewrites)


def simplify(analysis: TaskAnalysis, reassociate: bool = True) -> Simplification:
    """The rewrites that apply to the analysis' graph (none when its graph is empty); without
    `reassociate`, only those whose result is the reference's to the bit (no linear reduction)."""
    return _Simplifier(analysis, reassociate).run()


class _Simplifier:
    def __init__(self, analysis: TaskAnalysis, reassociate: bool):
        self.analysis = analysis
        self.reassociate = reassociate
        self.g = Graph(analysis)
        self.alias: dict[str, str] = {}
        """Node -> the name whose value it is (an identity)."""
        self.selects: dict[str, tuple[str, tuple[int, ...], bool]] = {}
        """A max/min over dims of size 1 -> (input, dims, keepdim): its getitems are rewritten."""
        self.rewrites: list[Rewrite] = []
        self.one_shape = len(analysis.task.workloads) == 1
        self.mutates = any(n.target.startswith("aten.") and n.target.split(".")[1].endswith("_") for n in self.g.nodes)
        """The graph writes some tensor in place: a value an identity makes of another must then be a copy."""
        self.gemms = {g.node: g for g in Patterns.of(analysis).gemms if g.batch is None and g.form in LINEAR_GEMMS}
        self.downstream: set[str] = set()
        """The GEMMs and every node computed from one."""
        stack = list(self.gemms)
        while stack:
            name = stack.pop()
            if name not in self.downstream:
                self.downstream.add(name)
                stack.extend(user.name for user in self.g.users.get(name, []))

    def run(self) -> Simplification:
        for node in self.g.nodes:
            for rule in (self._reduction, self._select_item, self._constant, self._neutral, self._cast,
                         self._linear_reduction):
                if rule(node):
                    break
        return Simplification(tuple(self.rewrites))

    # --- helpers ---------------------------------------------------------------------------------

    def ref(self, value: Any) -> Any:
        while isinstance(value, str) and value in self.alias:
            value = self.alias[value]
        return value

    def _emit(self, node: OpNode, expression: str, rule: str, what: str) -> bool:
        self.rewrites.append(Rewrite(node.name, expression, rule, what))
        return True

    def _same(self, node: OpNode, name: str, what: str, rule: str = "identity") -> bool:
        """`node` is the value of `name`. A copy where one name for both could be seen: an output that would
        be an input itself, or any value in a graph that writes tensors in place (`y.add_(1)` on what was a
        fresh reduction would otherwise write into `name`, an input perhaps)."""
        self.alias[node.name] = name
        is_value = name in self.analysis.values and node.name in self.analysis.output_names
        return self._emit(node, f"{name}.clone()" if is_value or self.mutates else name, rule, what)

    def _full(self, node: OpNode, value: float) -> bool:
        if not self.one_shape or node.shape is None or node.dtype is None:
            return False
        device = device_source(self.analysis)
        return self._emit(node, f"torch.full({list(node.shape)}, {literal(value)}, dtype=torch.{node.dtype}, "
                                f"device={device}.device)", "constant",
                          f"{node.name} ({op_name(node.target)}) is the constant {value:g}")

    def _reduced(self, node: OpNode) -> tuple[str, tuple[int, ...], bool] | None:
        """(input, reduced dims, keepdim) of a reduction node, dims normalized; None if it is none."""
        op = op_name(node.target)
        if op not in REDUCTIONS or not node.args or node.kwargs.get("dtype") is not None:
            return None
        x = node.args[0]
        shape = self.g.shape(x)
        if shape is None:
            return None
        dims = node.args[1] if len(node.args) > 1 else node.kwargs.get("dim")
        keepdim = node.args[2] if len(node.args) > 2 else node.kwargs.get("keepdim", False)
        if op in SELECTING and dims is None:
            return None  # torch.max(x): one value, no indices
        if isinstance(dims, int):
            dims = [dims]
        if not isinstance(keepdim, bool) or not (dims is None or isinstance(dims, (list, tuple))):
            return None
        every = range(len(shape))
        dims = tuple(sorted({d % len(shape) for d in dims} if dims and shape else every))
        return x, dims, keepdim

    # --- rules (each returns True when it rewrote the node) ----------------------------------------

    def _reduction(self, node: OpNode) -> bool:
        """A reduction over dims of size 1 is its input."""
        reduced = self._reduced(node)
        if reduced is None:
            return False
        x, dims, keepdim = reduced
        shape = self.g.shape(x)
        if any(shape[d] != 1 for d in dims) or (self.g.dtype(x) != node.dtype and op_name(node.target) not in SELECTING):
            return False
        if op_name(node.target) in SELECTING:
            self.selects[node.name] = (x, dims, keepdim)
            return True
        what = f"{op_name(node.target)} over size-1 dims {list(dims)} of {x} is {x}"
        if keepdim or not dims:
            return self._same(node, x, what, "size1_reduction")
        return self._emit(node, f"torch.ops.aten.squeeze.dims({x}, {list(dims)})", "size1_reduction", what)

    def _select_item(self, node: OpNode) -> bool:
        """The values of a max/min over dims of size 1 are its input; the indices are zeros."""
        if node.target != "getitem" or node.args[0] not in self.selects:
            return False
        x, dims, keepdim = self.selects[node.args[0]]
        if node.args[1] == 1:
            return self._full(node, 0)
        what = f"max/min over size-1 dims {list(dims)} of {x} is {x}"
        if keepdim:
            return self._same(node, x, what, "size1_reduction")
        return self._emit(node, f"torch.ops.aten.squeeze.dims({x}, {list(dims)})", "size1_reduction", what)

    def _constant(self, node: OpNode) -> bool:
        """softmax over one element is 1, log_softmax 0, x - x 0."""
        kind = SOFTMAX_OPS.get(node.target)
        shape = self.g.shape(node.args[0]) if node.args else None
        if kind and shape and isinstance(node.args[1], int) and shape[node.args[1] % len(shape)] == 1:
            return self._full(node, 1.0 if kind == "softmax" else 0.0)
        if (op_name(node.target) == "sub" and len(node.args) == 2 and node.kwargs.get("alpha", 1) == 1
                and self.g.is_ref(node.args[0]) and self.ref(node.args[0]) == self.ref(node.args[1])
                and node.dtype is not None and node.dtype.startswith(("float", "bfloat"))):
            return self._full(node, 0.0)
        return False

    def _neutral(self, node: OpNode) -> bool:
        """x * 1, 1 * x, x / 1, x + 0, 0 + x, x - 0."""
        op = op_name(node.target)
        if op not in ("mul", "div", "add", "sub") or len(node.args) != 2 or node.kwargs.get("alpha", 1) != 1:
            return False
        neutral = 1 if op in ("mul", "div") else 0
        a, b = node.args
        commutes = op in ("mul", "add")
        for x, other in ((a, b), (b, a)) if commutes else ((a, b),):
            if (_is_number(other) and other == neutral and self.g.is_ref(x)
                    and self.g.shape(x) == node.shape and self.g.dtype(x) == node.dtype):
                return self._same(node, x, f"{node.name} = {x} {op} {neutral} is {x}")
        return False

    def _cast(self, node: OpNode) -> bool:
        """A cast to the dtype a value already has."""
        if node.target not in CASTS or not node.args or not self.g.is_ref(node.args[0]):
            return False
        x = node.args[0]
        plain = set(node.kwargs) <= {"dtype", "copy", "non_blocking"} and not node.kwargs.get("copy")
        if plain and self.g.dtype(x) == node.dtype and self.g.shape(x) == node.shape:
            return self._same(node, x, f"{node.name} casts {x} to the {node.dtype} it is")
        return False

    def _linear_reduction(self, node: OpNode) -> bool:
        """sum/mean over a GEMM's N (or a 2-D product's M) dim of an affine function of it: a GEMV."""
        reduced = self._reduced(node)
        if not self.reassociate or reduced is None or op_name(node.target) not in ("sum", "mean"):
            return False
        x, dims, keepdim = reduced
        found = self._affine_chain(x)
        if found is None or found[0].dtype not in EXACT_FLOATS:
            return False
        gemm, steps = found
        shape = self.g.shape(gemm.node)
        axis = {len(shape) - 1: "n", 0: "m"}.get(dims[0]) if len(dims) == 1 else None
        if axis is None or (axis == "m" and len(shape) != 2):
            return False
        if any(not self._constant_along(s[1], shape, dims) for s in steps if s[0] in ("scale", "divide")):
            return False
        n_dim = 0 if gemm.trans_b else -1  # where B keeps its N columns
        if axis == "n":  # rows of A times B's row sums; count is N
            count = f"{gemm.b}.shape[{n_dim}]"
            value = f"torch.matmul({gemm.a}, {gemm.b}.sum({n_dim})).unsqueeze(-1)"
        else:  # A's column sums times B; count is M
            count = f"{gemm.a}.shape[0]"
            value = f"torch.matmul({gemm.a}.sum(0), {gemm.b_kn}).unsqueeze(0)"
        if gemm.bias is not None:
            value = f"({value} + {gemm.bias}.sum())" if axis == "n" else f"({value} + {gemm.bias} * {count})"
        for kind, other in steps:
            value = self._step(kind, other, value, shape, dims, count)
        if op_name(node.target) == "mean":
            value = f"({value} / {count})"
        if not keepdim:
            value = f"{value}.squeeze({dims[0]})"
        what = (f"{op_name(node.target)} over the {axis.upper()} dim of {gemm.node} and its affine epilogue: "
                f"one GEMV on the {'column' if axis == 'n' else 'row'} sums, the GEMM dropped")
        return self._emit(node, value, "linear_reduction", what)

    def _affine_chain(self, x: Any) -> tuple[GemmOperands, list[tuple[str, Any]]] | None:
        """(the GEMM fact, its affine steps in order) when `x` is an affine function of one GEMM's result
        that nothing else reads; None otherwise."""
        steps: list[tuple[str, Any]] = []
        current = self.ref(x)
        while current not in self.gemms:
            node = self.g.by_name.get(current) if isinstance(current, str) else None
            if node is None or self.g.sole_user(current) is None:
                return None
            step = self._affine_step(node)
            if step is None:
                return None
            kind, main, other = step
            steps.append((kind, other))
            current = self.ref(main)
        if self.g.sole_user(current) is None:
            return None
        return self.gemms[current], steps[::-1]

    def _affine_step(self, node: OpNode) -> tuple[str, str, Any] | None:
        """(kind, the operand that leads to the GEMM, the other) of an affine pointwise node."""
        op, args = op_name(node.target), node.args
        if op == "neg" and len(args) == 1:
            return "neg", args[0], None
        if op not in ("mul", "div", "add", "sub", "rsub") or len(args) != 2 or node.kwargs.get("alpha", 1) != 1:
            return None
        a, b = args
        if op == "rsub":  # rsub(a, b) = b - a
            a, b, op = b, a, "sub"
        on_chain = [v for v in (a, b) if self._leads_to_gemm(v)]
        if len(on_chain) != 1 or self.g.shape(on_chain[0]) != node.shape:
            return None
        main = on_chain[0]
        other = b if main == a else a
        if not (_is_number(other) or self.g.is_ref(other)):
            return None
        if op == "mul":
            return "scale", main, other
        if op == "add":
            return "add", main, other
        if main != a:
            return ("rsub", main, other) if op == "sub" else None
        return ("divide" if op == "div" else "sub"), main, other

    def _leads_to_gemm(self, value: Any) -> bool:
        """`value` is one of the GEMMs or computed from one."""
        return isinstance(value, str) and value in self.downstream

    def _constant_along(self, other: Any, shape: tuple[int, ...], dims: tuple[int, ...]) -> bool:
        """A scale that does not vary along the reduced dims (a number, or size 1 there once broadcast)."""
        if _is_number(other):
            return True
        extent = self._extents(other, shape, dims)
        return extent is not None and all(e == 1 for e in extent)

    def _extents(self, other: Any, shape: tuple[int, ...], dims: tuple[int, ...]) -> list[int] | None:
        """`other`'s sizes along the reduced dims of `shape`, right-aligned as broadcasting aligns them."""
        own = self.g.shape(other)
        if own is None or len(own) > len(shape):
            return None
        offset = len(shape) - len(own)
        return [own[d - offset] if d >= offset else 1 for d in dims]

    def _step(self, kind: str, other: Any, value: str, shape: tuple[int, ...], dims: tuple[int, ...],
              count: str) -> str:
        """`value`, the sum over `dims` of the chain so far, after one more affine step."""
        if kind == "neg":
            return f"(-{value})"
        if kind == "scale":
            return f"({value} * {_operand(other)})"
        if kind == "divide":
            return f"({value} / {_operand(other)})"
        extents = [1] if _is_number(other) else self._extents(other, shape, dims)
        if extents is None:
            raise ValueError(f"cannot broadcast {other} against the GEMM's result")  # shapes from one trace
        if all(e == 1 for e in extents):
            summed = f"({_operand(other)} * {count})"
        else:
            offset = len(shape) - len(self.g.shape(other))
            summed = f"{other}.sum({[d - offset for d in dims]}, keepdim=True)"
        sign = {"add": "+", "sub": "-"}.get(kind)
        return f"({value} {sign} {summed})" if sign else f"({summed} - {value})"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _operand(value: Any) -> str:
    return literal(value) if _is_number(value) else str(value)


__all__ = ["Rewrite", "Simplification", "simplify"]
