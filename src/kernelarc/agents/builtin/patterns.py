"""Pattern facts read off a captured graph: where the GEMM, row-wise, reduction, attention and conv
work is, and what surrounds it. The moves read these instead of re-walking the graph.

Keys of `TaskAnalysis.facts` (each absent when not found; names are node names, input names or
`self.<param>` accessors, i.e. valid expressions in generated code):
- `gemm`: the largest matmul. `node`, `form` (linear, matmul, mm, addmm, bmm, baddbmm), `a` (the
  M x K operand), `a_stored` (None, or the K x M tensor `a` is the 2-D transpose of: `A.T @ B`), `b` (the
  weight as stored), `trans_b` (the op uses b transposed, as linear does),
  `bias` (None or a length-N vector), `M`, `N`, `K`, `batch` (None, or the bmm batch), `dtype`,
  `bias_node` (the node holding matmul + bias: the GEMM itself, or the add that applies the bias),
  `epilogue` (pointwise steps applied to the result in order, each with the `node` holding its result:
  {"op": "gelu", "approximate": "none"},
  {"op": "mul", "scalar": 2.0}, {"op": "add", "tensor": ref, "broadcast": "full" | "row"},
  {"op": "leaky_relu", "negative_slope": 0.1}, ...), `out` (the node holding the epilogue's result).
- `gemms`: every matmul whose operands the analysis can name, in graph order, each with `gemm`'s operand keys
  (`node`, `form`, `a`, `b`, `trans_b`, `bias` (the op's own bias argument only), `M`, `N`, `K`, `batch`,
  `dtype`, `flops`); no epilogue. (addmm/baddbmm with a scale other than 1 are left out, here and in `gemm`.)
- `gemm_dual`: two GEMMs of the same A whose results meet in act(A @ Wg [+ bg]) * (A @ Wu [+ bu]), a
  product the forward returns (SwiGLU, GeGLU). `a`, `M`, `N`, `K`, `dtype`, `gate` and `up` (each
  {"b", "trans_b", "bias", "node"} as in `gemm`), `activation` (an epilogue step without its node:
  {"op": "silu"}, {"op": "gelu", "approximate": "tanh"}, ...), `node` and `out` (the product).
- `rowwise`: `op` (softmax, log_softmax, layer_norm, rms_norm, cross_entropy), `form` (fused: one
  aten op; decomposed: the maths written out), `node` (the op, or the node holding the decomposed
  result), `input` (as stored: a cast the pattern alone reads is looked through), `input_cast` (None,
  or {"node", "dtype"} of that cast), `dim`, `rows`, `cols`, `dtype` (the op's), `weight`, `bias`,
  `eps`, `target`, `epilogue` (as gemm's, plus dtype casts {"op": "cast", "dtype": "bfloat16"}), `out`.
- `reduction`: `op` (sum, mean, amax, amin), `input`, `dims`, `keepdim`, `node`, `out`,
  `input_shape`, `dtype`, `unrolled` (how many partial reductions were folded into it; 1 if none).
- `elementwise`: the whole forward is pointwise: `nodes`, `inputs`, `out`, `numel`, `dtype`.
- `attention`: `form` (sdpa or matmul_softmax), `q`, `k`, `v`, `scale` (None: 1/sqrt(D)), `causal`,
  `attn_mask`, `masked_fill` (matmul_softmax: the boolean mask whose True positions are filled with
  -inf before the softmax, or None), `node` (sdpa, or the second matmul), `out`, `shape` (of q), `dtype`.
- `conv`: `node`, `target`, `input`, `weight`, `bias`, `dims`.
The analysis adds `emit_blocker` (why the graph cannot be re-emitted as code, or None),
`launch_bound` and `total_elements`. Imports without torch. Budget: about 420 lines.
"""

from __future__ import annotations

import math
from typing import Any

from kernelarc.agents.builtin.moves.base import OpNode, TaskAnalysis

GEMM_OPS = {"aten.linear", "aten.matmul", "aten.mm", "aten.addmm", "aten.bmm", "aten.baddbmm"}
TRANSPOSES = {"aten.t", "aten.transpose.int", "aten.permute", "aten.numpy_T"}
"""Ops that, on a 2-D B, make it B^T (`W.t()`, `W.transpose(0, 1)`, `W.permute(1, 0)`, `W.T`)."""
SOFTMAX_OPS = {"aten.softmax.int": "softmax", "aten._softmax": "softmax", "aten._safe_softmax": "softmax",
               "aten.log_softmax.int": "log_softmax", "aten._log_softmax": "log_softmax"}
REDUCTION_OPS = {"aten.sum.dim_IntList": "sum", "aten.mean.dim": "mean", "aten.amax": "amax", "aten.amin": "amin",
                 "aten.sum": "sum", "aten.mean": "mean"}
UNARY_EPILOGUE = {"gelu", "relu", "silu", "sigmoid", "tanh", "leaky_relu"}
BINARY_EPILOGUE = {"add", "sub", "mul", "div"}
CASTS = {"aten.to.dtype", "aten._to_copy", "aten.to.dtype_layout"}
CONV_OPS = {"aten.conv1d", "aten.conv2d", "aten.conv3d", "aten.convolution", "aten.conv_transpose1d",
            "aten.conv_transpose2d", "aten.conv_transpose3d"}


class Graph:
    """Lookups over an analysis' nodes: by name, consumers, shapes of any value."""

    def __init__(self, analysis: TaskAnalysis):
        self.analysis = analysis
        self.nodes = analysis.nodes
        self.by_name = {n.name: n for n in analysis.nodes}
        self.users: dict[str, list[OpNode]] = {}
        for n in self.nodes:
            for ref in {r for r in _refs(n.args) + _refs(tuple(n.kwargs.values())) if isinstance(r, str)}:
                self.users.setdefault(ref, []).append(n)

    def shape(self, ref: Any) -> tuple[int, ...] | None:
        if isinstance(ref, str) and ref in self.by_name:
            return self.by_name[ref].shape
        return self.analysis.values.get(ref, (None, None))[0] if isinstance(ref, str) else None

    def dtype(self, ref: Any) -> str | None:
        if isinstance(ref, str) and ref in self.by_name:
            return self.by_name[ref].dtype
        return self.analysis.values.get(ref, (None, None))[1] if isinstance(ref, str) else None

    def is_ref(self, value: Any) -> bool:
        return isinstance(value, str) and (value in self.by_name or value in self.analysis.values)

    def sole_user(self, name: str) -> OpNode | None:
        """The one node consuming `name`, when it is not also an output."""
        users = self.users.get(name, [])
        return users[0] if len(users) == 1 and name not in self.analysis.output_names else None


def _refs(values: tuple[Any, ...]) -> list[Any]:
    out: list[Any] = []
    for v in values:
        out.extend(_refs(tuple(v)) if isinstance(v, (list, tuple)) else [v])
    return out


def op_name(target: str) -> str:
    """`add` for `aten.add.Tensor`, `relu` for `aten.relu_`."""
    return target.split(".")[1].rstrip("_") if target.startswith("aten.") else target


def find_facts(analysis: TaskAnalysis) -> dict[str, Any]:
    """Every pattern found in the analysis' graph (see the module docstring for the keys)."""
    g = Graph(analysis)
    gemms = _gemms(g)
    found = {"gemm": _gemm(g, gemms), "gemms": gemms or None, "gemm_dual": _gemm_dual(g, gemms),
             "rowwise": _rowwise(g), "reduction": _reduction(g), "elementwise": _elementwise(g),
             "attention": _attention(g), "conv": _conv(g)}
    return {k: v for k, v in found.items() if v is not None}


def _prod(dims: tuple[int, ...] | None) -> int:
    return math.prod(dims) if dims else 1


# --- gemm ----------------------------------------------------------------------------------------

def _gemms(g: Graph) -> list[dict[str, Any]]:
    return [f for n in g.nodes if n.target in GEMM_OPS and n.shape is not None and (f := _gemm_operands(g, n))]


def _gemm(g: Graph, gemms: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The largest of `gemms`, with its epilogue (a copy: the list's entries stay epilogue-free)."""
    best = max(gemms, key=lambda f: f["flops"], default=None)
    if best is None:
        return None
    best = dict(best)
    best["epilogue"], best["out"], bias, best["bias_node"] = _epilogue(g, best["node"], best["N"], best["bias"] is None)
    best["bias"] = best["bias"] or bias
    return best


def _swaps_2d(g: Graph, n: OpNode) -> bool:
    """`n` is the transpose of a 2-D tensor (`x.t()`, `x.T`, `x.transpose(0, 1)`, `x.permute(1, 0)`), not an
    identity spelled as one (`x.transpose(1, 1)`, `x.permute(0, 1)`)."""
    shape = g.shape(n.name)
    if n.target not in TRANSPOSES or shape is None or len(shape) != 2:
        return False
    if n.target == "aten.transpose.int":
        return {d % 2 for d in n.args[1:3]} == {0, 1}
    if n.target == "aten.permute":
        return [d % 2 for d in n.args[1]] == [1, 0]
    return True


def _gemm_operands(g: Graph, n: OpNode) -> dict[str, Any] | None:
    args, form = n.args, op_name(n.target)
    bias = None
    if form == "linear":
        a, b, trans_b = args[0], args[1], True
        bias = args[2] if len(args) > 2 else n.kwargs.get("bias")
    else:
        if form in ("addmm", "baddbmm"):
            scales = [*args[3:5], n.kwargs.get("beta", 1), n.kwargs.get("alpha", 1)]
            if any(s != 1 for s in scales):
                return None  # beta * bias + alpha * (a @ b): not the plain product every GEMM move writes
            bias, args = args[0], args[1:]
        a, b = args[0], args[1]
        trans_b = False
        src = g.by_name.get(b) if isinstance(b, str) else None
        shape_b = g.shape(b)
        if src is not None and _swaps_2d(g, src):
            b, trans_b = src.args[0], True
    shape_a, shape_b = g.shape(a), g.shape(b)
    if not shape_a or not shape_b:
        return None
    k = shape_a[-1]
    m = _prod(shape_a[:-1]) if form in ("linear", "matmul") and len(shape_b) == 2 else shape_a[-2]
    n_dim = shape_b[-2] if trans_b else shape_b[-1]
    batch = shape_a[0] if form in ("bmm", "baddbmm") or (form == "matmul" and len(shape_b) > 2) else None
    if bias is not None and g.shape(bias) not in ((n_dim,), (1, n_dim)):
        return None  # addmm with a full matrix: not a bias this analysis can name
    src_a = g.by_name.get(a) if isinstance(a, str) else None
    a_stored = src_a.args[0] if src_a is not None and form != "linear" and _swaps_2d(g, src_a) else None
    return {"node": n.name, "form": form, "a": a, "a_stored": a_stored, "b": b, "trans_b": trans_b, "bias": bias,
            "M": m, "N": n_dim, "K": k, "batch": batch, "dtype": n.dtype, "flops": 2 * m * n_dim * k * (batch or 1)}


def _epilogue(g: Graph, name: str, n_dim: int, bias_free: bool,
              casts: bool = False) -> tuple[list[dict[str, Any]], str, Any, str]:
    """(steps, out, bias, bias node): pointwise steps (and dtype casts, if `casts`) consuming the result of
    `name` one after another, until the chain branches or ends; a row-vector add right after a bias-free
    GEMM is its bias."""
    steps: list[dict[str, Any]] = []
    out, bias, bias_node = name, None, name
    shape = g.by_name[name].shape
    while (user := g.sole_user(out)) is not None and (user.pointwise or (casts and user.target in CASTS)):
        op = op_name(user.target)
        if casts and user.target in CASTS and user.args[0] == out:
            step = {"op": "cast", "dtype": user.dtype}
        elif op in UNARY_EPILOGUE and user.args[0] == out:
            step: dict[str, Any] = {"op": op}
            if op == "gelu":
                step["approximate"] = user.kwargs.get("approximate", user.args[1] if len(user.args) > 1 else "none")
            if op == "leaky_relu":
                step["negative_slope"] = float(user.args[1]) if len(user.args) > 1 else 0.01
        elif (op in BINARY_EPILOGUE and len(user.args) >= 2 and out in user.args[:2]
              and user.kwargs.get("alpha", 1) == 1):
            other = user.args[1] if user.args[0] == out else user.args[0]
            if op in ("sub", "div") and user.args[0] != out:
                break
            if isinstance(other, (int, float)) and not isinstance(other, bool):
                step = {"op": op, "scalar": float(other)}
            elif g.is_ref(other) and g.shape(other) in (shape, (n_dim,), (1, n_dim)):
                row = g.shape(other) != shape
                if op == "add" and row and bias_free and not steps and bias is None:
                    bias, out, bias_node = other, user.name, user.name
                    continue
                step = {"op": op, "tensor": other, "broadcast": "row" if row else "full"}
            else:
                break
        else:
            break
        step["node"] = user.name
        steps.append(step)
        out = user.name
    return steps, out, bias, bias_node


def _gemm_dual(g: Graph, gemms: list[dict[str, Any]]) -> dict[str, Any] | None:
    """act(gate GEMM) * up GEMM over one A, returned: each result's pointwise chain ends in the product."""
    for gate in gemms:
        for up in gemms:
            same = all(gate[k] == up[k] for k in ("a", "M", "N", "K", "dtype"))
            if gate is up or not same or gate["batch"] or up["batch"]:
                continue
            gate_steps, out, gate_bias, gate_node = _epilogue(g, gate["node"], gate["N"], gate["bias"] is None)
            up_steps, up_out, up_bias, up_node = _epilogue(g, up["node"], up["N"], up["bias"] is None)
            if (len(gate_steps) != 2 or gate_steps[0]["op"] not in UNARY_EPILOGUE or out != up_out
                    or out not in g.analysis.output_names):
                continue
            activation = {k: v for k, v in gate_steps[0].items() if k != "node"}
            product = {"op": "mul", "broadcast": "full", "node": out}
            gate_meets_up = gate_steps[1] == {**product, "tensor": up_node}
            if gate_meets_up and up_steps == [{**product, "tensor": gate_steps[0]["node"]}]:
                return {"a": gate["a"], "M": gate["M"], "N": gate["N"], "K": gate["K"], "dtype": gate["dtype"],
                        "gate": _dual_operand(gate, gate_bias), "up": _dual_operand(up, up_bias),
                        "activation": activation, "node": out, "out": out}
    return None


def _dual_operand(fact: dict[str, Any], bias: Any) -> dict[str, Any]:
    return {"b": fact["b"], "trans_b": fact["trans_b"], "bias": fact["bias"] or bias, "node": fact["node"]}


# --- row-wise ------------------------------------------------------------------------------------

def _rowwise(g: Graph) -> dict[str, Any] | None:
    fact = _row_op(g)
    if fact is not None:
        fact["epilogue"], fact["out"] = _epilogue(g, fact["node"], fact["cols"], False, casts=True)[:2]
    return fact


def _row_op(g: Graph) -> dict[str, Any] | None:
    for n in g.nodes:
        kind = SOFTMAX_OPS.get(n.target)
        x = n.args[0] if n.args else None
        shape = g.shape(x)
        if kind and shape:
            dim = n.args[1] % len(shape)
            return _look_through_cast(g, _row_fact(kind, "fused", n, x, shape, dim, n.name), {n.name})
        if n.target in ("aten.layer_norm", "aten.rms_norm") and shape:
            cols = _prod(tuple(n.args[1]))
            weight = n.args[2] if len(n.args) > 2 else None
            fact = _row_fact(op_name(n.target), "fused", n, x, shape, len(shape) - 1, n.name, cols=cols)
            if n.target == "aten.layer_norm":
                fact.update(weight=weight, bias=n.args[3] if len(n.args) > 3 else None,
                            eps=n.args[4] if len(n.args) > 4 else 1e-5)
            else:
                fact.update(weight=weight, eps=n.args[3] if len(n.args) > 3 else None)
            return _look_through_cast(g, fact, {n.name})
        if n.target == "aten.cross_entropy_loss" and shape:
            fact = _row_fact("cross_entropy", "fused", n, x, shape, 1 if len(shape) > 1 else 0, n.name)
            fact["target"] = n.args[1]
            return _look_through_cast(g, fact, {n.name})
        if n.target == "aten.rsqrt":
            fact = _rms_decomposed(g, n)
            if fact:
                return fact
    return None


def _row_fact(op: str, form: str, n: OpNode, x: Any, shape: tuple[int, ...], dim: int, out: str,
              cols: int | None = None) -> dict[str, Any]:
    cols = cols or shape[dim]
    return {"op": op, "form": form, "node": n.name, "input": x, "dim": dim, "rows": _prod(shape) // max(cols, 1),
            "cols": cols, "dtype": n.dtype, "weight": None, "bias": None, "eps": None, "target": None, "out": out,
            "input_cast": None}


def _look_through_cast(g: Graph, fact: dict[str, Any], readers: set[str]) -> dict[str, Any]:
    """`x.float()` read only by the pattern's `readers`: the kernel reads x as stored (computing in fp32
    anyway), so the fact names x and notes the cast."""
    cast = g.by_name.get(fact["input"]) if isinstance(fact["input"], str) else None
    if (cast is not None and cast.target in CASTS and cast.name not in g.analysis.output_names
            and {u.name for u in g.users.get(cast.name, [])} <= readers):
        fact.update(input=cast.args[0], input_cast={"node": cast.name, "dtype": cast.dtype})
    return fact


def _rms_decomposed(g: Graph, rsqrt: OpNode) -> dict[str, Any] | None:
    """x * rsqrt(mean(x^2, -1, keepdim) + eps) [* weight], as written out by hand."""
    add = g.by_name.get(rsqrt.args[0])
    if add is None or op_name(add.target) != "add":
        return None
    mean = g.by_name.get(add.args[0])
    eps = add.args[1]
    if mean is None or op_name(mean.target) != "mean" or list(mean.args[1]) not in ([-1], [len(mean.shape) - 1]):
        return None
    square = g.by_name.get(mean.args[0])
    if square is None or not ((op_name(square.target) == "pow" and square.args[1] == 2)
                              or (op_name(square.target) == "mul" and square.args[0] == square.args[1])):
        return None
    x = square.args[0]
    scaled = next((u for u in g.users.get(rsqrt.name, []) if op_name(u.target) == "mul" and x in u.args), None)
    if scaled is None or g.shape(x) is None:
        return None
    fact = _row_fact("rms_norm", "decomposed", scaled, x, g.shape(x), len(g.shape(x)) - 1, scaled.name)
    fact["eps"] = eps
    weighted = g.sole_user(scaled.name)
    if weighted is not None and op_name(weighted.target) == "mul":
        other = weighted.args[1] if weighted.args[0] == scaled.name else weighted.args[0]
        if g.shape(other) == (fact["cols"],):
            fact.update(node=weighted.name, weight=other, out=weighted.name)
    return _look_through_cast(g, fact, {square.name, scaled.name})


# --- reductions ----------------------------------------------------------------------------------

def _reduction(g: Graph) -> dict[str, Any] | None:
    best = _unrolled_sum(g)
    for n in g.nodes:
        op = REDUCTION_OPS.get(n.target)
        shape = g.shape(n.args[0]) if n.args else None
        if op and shape and (best is None or _prod(shape) > _prod(best["input_shape"])):
            dims = list(n.args[1]) if len(n.args) > 1 and n.args[1] is not None else list(range(len(shape)))
            keepdim = bool(n.args[2]) if len(n.args) > 2 else bool(n.kwargs.get("keepdim", False))
            best = {"op": op, "input": n.args[0], "dims": [d % len(shape) for d in dims], "keepdim": keepdim,
                    "node": n.name, "out": n.name, "input_shape": shape, "dtype": n.dtype, "unrolled": 1}
    return best


def _unrolled_sum(g: Graph) -> dict[str, Any] | None:
    """A running total of sums over slices that together cover one dim: the same as one sum over it."""
    for out in g.analysis.output_names:
        terms, node = [], g.by_name.get(out)
        while node is not None and op_name(node.target) == "add" and len(node.args) == 2:
            terms.append(node.args[1])
            node = g.by_name.get(node.args[0])
        if node is not None and node.target not in ("aten.zeros", "aten.zeros_like"):
            terms.append(node.name)
        parts = [_slice_sum(g, t) for t in terms]
        if len(parts) < 2 or None in parts or len({(p[0], p[1], p[2]) for p in parts}) != 1:
            continue
        x, dim, keepdim = parts[0][:3]
        covered = sorted((p[3], p[4]) for p in parts)
        size = g.shape(x)[dim]
        if covered[0][0] == 0 and min(covered[-1][1], size) == size and all(
                a[1] == b[0] for a, b in zip(covered, covered[1:])):
            return {"op": "sum", "input": x, "dims": [dim], "keepdim": keepdim, "node": out, "out": out,
                    "input_shape": g.shape(x), "dtype": g.by_name[out].dtype, "unrolled": len(parts)}
    return None


def _slice_sum(g: Graph, name: Any) -> tuple[Any, int, bool, int, int] | None:
    """(x, dim, keepdim, start, end) for `sum(x[..., start:end, ...], dim)`, else None."""
    s = g.by_name.get(name) if isinstance(name, str) else None
    if s is None or s.target != "aten.sum.dim_IntList" or len(s.args[1]) != 1:
        return None
    sl = g.by_name.get(s.args[0])
    if sl is None or sl.target != "aten.slice.Tensor" or (len(sl.args) > 4 and sl.args[4] != 1):
        return None
    shape = g.shape(sl.args[0])
    dim = sl.args[1] % len(shape)
    if s.args[1][0] % len(shape) != dim:
        return None
    return sl.args[0], dim, bool(s.args[2]) if len(s.args) > 2 else False, sl.args[2], sl.args[3]


# --- elementwise, attention, conv ----------------------------------------------------------------

def _elementwise(g: Graph) -> dict[str, Any] | None:
    if not g.nodes or len(g.analysis.output_names) != 1 or not all(n.pointwise for n in g.nodes):
        return None
    inputs = sorted({r for n in g.nodes for r in _refs(n.args) if g.is_ref(r) and r not in g.by_name})
    out = g.by_name.get(g.analysis.output_names[0])
    if out is None:
        return None
    return {"nodes": [n.name for n in g.nodes], "inputs": inputs, "out": out.name, "numel": _prod(out.shape),
            "dtype": out.dtype}


def _attention(g: Graph) -> dict[str, Any] | None:
    for n in g.nodes:
        if n.target == "aten.scaled_dot_product_attention":
            a = list(n.args) + [None] * (8 - len(n.args))
            return {"form": "sdpa", "q": a[0], "k": a[1], "v": a[2], "attn_mask": a[3] or n.kwargs.get("attn_mask"),
                    "causal": bool(a[5] or n.kwargs.get("is_causal", False)), "scale": a[6] or n.kwargs.get("scale"),
                    "node": n.name, "out": n.name, "shape": g.shape(a[0]), "dtype": n.dtype}
        if n.target in SOFTMAX_OPS and SOFTMAX_OPS[n.target] == "softmax":
            fact = _matmul_softmax(g, n)
            if fact:
                return fact
    return None


def _matmul_softmax(g: Graph, softmax: OpNode) -> dict[str, Any] | None:
    """matmul(softmax(masked_fill(matmul(q, k^T) * scale, mask, -inf)), v): the scale a mul or div by
    a constant, the masked_fill optional, a dtype cast between softmax and the second matmul allowed."""
    probs, second = softmax.name, g.sole_user(softmax.name)
    while second is not None and second.target in CASTS:  # softmax(..., dtype=float32).to(q.dtype)
        probs, second = second.name, g.sole_user(second.name)
    if second is None or op_name(second.target) not in ("matmul", "bmm") or second.args[0] != probs:
        return None
    masked_fill, node = None, g.by_name.get(softmax.args[0])
    if node is not None and op_name(node.target) == "masked_fill" and node.args[2] == -math.inf:
        masked_fill, node = node.args[1], g.by_name.get(node.args[0])
    scale = 1.0
    while node is not None and op_name(node.target) in ("mul", "div") and isinstance(node.args[1], (int, float)):
        scale = scale * node.args[1] if op_name(node.target) == "mul" else scale / node.args[1]
        node = g.by_name.get(node.args[0])
    if node is None or op_name(node.target) not in ("matmul", "bmm"):
        return None
    kt = g.by_name.get(node.args[1])
    if kt is None or kt.target != "aten.transpose.int" or sorted(a % 4 for a in kt.args[1:3]) != [2, 3]:
        return None
    q = node.args[0]
    return {"form": "matmul_softmax", "q": q, "k": kt.args[0], "v": second.args[1], "attn_mask": None,
            "masked_fill": masked_fill, "causal": False, "scale": scale, "node": second.name, "out": second.name,
            "shape": g.shape(q), "dtype": second.dtype}


def _conv(g: Graph) -> dict[str, Any] | None:
    for n in g.nodes:
        if n.target in CONV_OPS:
            return {"node": n.name, "target": n.target, "input": n.args[0], "weight": n.args[1],
                    "bias": n.args[2] if len(n.args) > 2 else None, "dims": len(g.shape(n.args[0]) or ()) - 2}
    return None


__all__ = ["Graph", "find_facts", "op_name", "GEMM_OPS", "SOFTMAX_OPS", "REDUCTION_OPS"]
