"""Triton fused elementwise template: the whole pointwise forward as ONE kernel, each input read once
and the output written once, instead of one pass through memory per op.

The captured graph (analysis.nodes named in `facts["elementwise"]`) is translated op by op into
Triton expressions computed in fp32 (`translate_node`). Inputs may be full tensors, vectors along
the last dim (a bias), per-row columns (`[..., 1]`) or single values; anything else, and any op
without a translation, makes `applies()` say which. Family `triton_fused_elementwise`, strategy
fusion. Imports neither torch nor triton. Budget: 300 lines.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, ClassVar

from kernelarc.agents.builtin.moves import register_family
from kernelarc.agents.builtin.moves.base import Move, OpNode, TaskAnalysis
from kernelarc.agents.builtin.moves.emit import indent, literal, module_source
from kernelarc.agents.builtin.moves.triton_common import (
    BINARY,
    TemplateFacts,
    UNARY,
    claim,
    dedupe,
    describe_params,
    elem_bytes,
    launch_keywords,
    next_power_of_2,
    power,
    require_whole_forward,
    unary,
)

COMPARISONS = {"gt": ">", "lt": "<", "ge": ">=", "le": "<=", "eq": "==", "ne": "!="}
UNARY_OPS = frozenset(UNARY) - {"gelu", "gelu_tanh"}
"""aten ops named like their entry in triton_common.UNARY (gelu takes its `approximate` argument)."""
FLOAT_DTYPES = ("float32", "float16", "bfloat16", "float64")


def _op(target: str) -> str:
    """`add` for `aten.add.Tensor`, `relu` for `aten.relu_`."""
    return target.split(".")[1].rstrip("_") if target.startswith("aten.") else target


def translate_node(node: OpNode, value: dict[str, str]) -> str:
    """The Triton expression computing `node` from earlier values (`value` maps refs to variable names).

    Raises:
        ValueError: the op (or this use of it) has no translation here.
    """
    def arg(i: int, default: Any = None) -> str:
        a = node.args[i] if i < len(node.args) else default
        if isinstance(a, str):
            return value[a]
        if isinstance(a, bool) or not isinstance(a, (int, float)):
            raise ValueError(f"{node.target}: argument {a!r} is not a tensor or a number")
        return literal(float(a))

    op, n = _op(node.target), len(node.args)
    if op in ("add", "sub", "rsub") and node.kwargs.get("alpha", 1) != 1:
        other = f"({arg(1)} * {literal(float(node.kwargs['alpha']))})"
        return f"{other} - {arg(0)}" if op == "rsub" else BINARY[op].format(x=arg(0), y=other)
    if op == "rsub":
        return f"{arg(1)} - {arg(0)}"
    if op == "div" and node.kwargs.get("rounding_mode") is not None:
        raise ValueError(f"div with rounding_mode={node.kwargs['rounding_mode']!r} is not translated")
    if op in BINARY and n == 2:
        return BINARY[op].format(x=arg(0), y=arg(1))
    if op in UNARY_OPS and n == 1:
        return unary(op, arg(0))
    if op == "gelu":
        approximate = node.kwargs.get("approximate", node.args[1] if n > 1 else "none")
        return unary("gelu_tanh" if approximate == "tanh" else "gelu", arg(0))
    if op == "leaky_relu":
        return unary("leaky_relu", arg(0), negative_slope=float(node.args[1]) if n > 1 else 0.01)
    if op in COMPARISONS and n == 2:
        return f"{arg(0)} {COMPARISONS[op]} {arg(1)}"
    if op == "where" and n == 3:
        return f"tl.where({arg(0)}, {arg(1)}, {arg(2)})"
    if op in ("clamp", "hardtanh", "clamp_min", "clamp_max"):
        defaults = {"hardtanh": (-1.0, 1.0)}.get(op, (None, None))
        lo = node.args[1] if n > 1 else node.kwargs.get("min", defaults[0])
        hi = node.args[2] if n > 2 else node.kwargs.get("max", defaults[1])
        if op == "clamp_max":
            lo, hi = None, lo
        expr = arg(0)
        if lo is not None:
            expr = f"tl.maximum({expr}, {value[lo] if isinstance(lo, str) else literal(float(lo))})"
        if hi is not None:
            expr = f"tl.minimum({expr}, {value[hi] if isinstance(hi, str) else literal(float(hi))})"
        return expr
    if op == "pow" and n == 2 and isinstance(node.args[1], (int, float)):
        return power(arg(0), float(node.args[1]))
    if op == "softplus":
        beta = float(node.args[1]) if n > 1 else float(node.kwargs.get("beta", 1.0))
        threshold = float(node.args[2]) if n > 2 else float(node.kwargs.get("threshold", 20.0))
        scaled = f"({arg(0)} * {literal(beta)})"
        return f"tl.where({scaled} > {literal(threshold)}, {arg(0)}, tl.log(1.0 + tl.exp({scaled})) / {literal(beta)})"
    if op == "elu":
        alpha = float(node.args[1]) if n > 1 else float(node.kwargs.get("alpha", 1.0))
        scale = float(node.args[2]) if n > 2 else float(node.kwargs.get("scale", 1.0))
        input_scale = float(node.args[3]) if n > 3 else float(node.kwargs.get("input_scale", 1.0))
        x = arg(0)
        return (f"{literal(scale)} * tl.where({x} > 0.0, {x}, "
                f"{literal(alpha)} * (tl.exp({x} * {literal(input_scale)}) - 1.0))")
    raise ValueError(f"{node.target} is not translated (supported: {', '.join(sorted(_SUPPORTED))})")


_SUPPORTED = {*BINARY, *UNARY_OPS, *COMPARISONS, "rsub", "gelu", "leaky_relu", "where", "clamp", "clamp_min",
              "clamp_max", "hardtanh", "pow (by a constant)", "softplus", "elu"}


@dataclass(frozen=True)
class Leaf:
    """One forward input or parameter the chain reads."""

    ref: str
    """Its source expression (input name or `self.<param>` accessor)."""
    var: str
    """The kernel's name for it (pointer `<var>_ptr`, loaded value `<var>`)."""
    kind: str
    """full (the output's shape), row (vector along the last dim), column (`[..., 1]`), one (a single
    element), scalar (a Python number passed as an argument)."""


@dataclass(frozen=True)
class ElementwiseFacts:
    """`facts["elementwise"]` with its nodes translated: the whole forward is this chain."""

    leaves: tuple[Leaf, ...]
    """What the kernel reads, in argument order."""
    lines: tuple[str, ...]
    """`<node var> = <expression>`, one per node, in order."""
    out: str
    """The node holding the result."""
    shape: tuple[int, ...]
    """The output's shape on the first workload."""
    dtype: str
    """The output's dtype."""

    @classmethod
    def parse(cls, raw: dict[str, Any], analysis: TaskAnalysis) -> ElementwiseFacts:
        """Translate the chain; ValueError naming the first input or op that cannot be."""
        require_whole_forward(analysis, raw["out"])
        nodes = {n.name: n for n in analysis.nodes}
        shape = nodes[raw["out"]].shape
        leaves, value = [], {}
        order = [r for r in (*analysis.input_names, *analysis.param_names) if r in raw["inputs"]]
        for ref in order:
            leaf = _leaf(analysis, ref, shape, RESERVED | {lf.var for lf in leaves})
            leaves.append(leaf)
            value[ref] = leaf.var
        if not any(lf.kind == "full" for lf in leaves):
            raise ValueError("no input has the output's shape; nothing to index the kernel by")
        lines = []
        for name in raw["nodes"]:
            value[name] = name
            lines.append(f"{name} = {translate_node(nodes[name], value)}")
        return cls(leaves=tuple(leaves), lines=tuple(lines), out=raw["out"], shape=tuple(shape), dtype=raw["dtype"])


def _leaf(analysis: TaskAnalysis, ref: str, out_shape: tuple[int, ...], taken: set[str]) -> Leaf:
    shape, dtype = analysis.values.get(ref, (None, None))
    var = re.sub(r"\W", "_", ref.removeprefix("self.")).strip("_") or "arg"
    while var in taken or var.startswith("v_"):
        var = f"in_{var}"
    if shape is None:
        if dtype not in ("float", "int"):
            raise ValueError(f"input {ref} of type {dtype} is not a number or a tensor")
        return Leaf(ref, var, "scalar")
    if dtype not in FLOAT_DTYPES:
        raise ValueError(f"input {ref} is {dtype}; the fused kernel computes in floating point")
    if tuple(shape) == tuple(out_shape):
        kind = "full"
    elif math.prod(shape) == 1:
        kind = "one"
    elif math.prod(shape) == out_shape[-1] and shape[-1] == out_shape[-1]:
        kind = "row"
    elif len(shape) == len(out_shape) and tuple(shape) == (*out_shape[:-1], 1):
        kind = "column"
    else:
        raise ValueError(f"input {ref} of shape {tuple(shape)} broadcasts to {tuple(out_shape)} in a way not "
                         "templated (full, last-dim vector, [..., 1] column or one element)")
    return Leaf(ref, var, kind)


RESERVED = frozenset({"out", "offs", "mask", "pid", "n_elements", "n_cols", "BLOCK_SIZE", "tl", "triton", "torch"})
"""Names the kernel and wrapper use themselves; an input so named is renamed."""
_INDEX = {"full": "offs", "row": "offs % n_cols", "column": "offs // n_cols"}


def kernel_source(facts: ElementwiseFacts) -> str:
    """`_fused_elementwise_kernel`: load each leaf once, compute the chain in fp32, store once."""
    args = ["out_ptr,", *(f"{lf.var}_ptr," for lf in facts.leaves if lf.kind != "scalar"),
            *(f"{lf.var}," for lf in facts.leaves if lf.kind == "scalar"), "n_elements, n_cols,",
            "BLOCK_SIZE: tl.constexpr,"]
    body = ["pid = tl.program_id(0).to(tl.int64)",
            "offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)",
            "mask = offs < n_elements"]
    for lf in facts.leaves:
        if lf.kind == "one":
            body.append(f"{lf.var} = tl.load({lf.var}_ptr).to(tl.float32)")
        elif lf.kind != "scalar":
            body.append(f"{lf.var} = tl.load({lf.var}_ptr + {_INDEX[lf.kind]}, mask=mask, other=0.0).to(tl.float32)")
    body += [*facts.lines, f"tl.store(out_ptr + offs, {facts.out}.to(out_ptr.dtype.element_ty), mask=mask)"]
    return (f"@triton.jit\ndef _fused_elementwise_kernel(\n{indent(chr(10).join(args))}\n):\n"
            f'    """The forward\'s {len(facts.lines)} pointwise ops in one pass, in fp32."""\n'
            f"{indent(chr(10).join(body))}\n")


def wrapper_source(facts: ElementwiseFacts, params: dict[str, Any]) -> str:
    """Host function: contiguous inputs, one output, one launch."""
    names = [lf.var for lf in facts.leaves]
    full = next(lf.var for lf in facts.leaves if lf.kind == "full")
    lines = [f"{lf.var} = {lf.var}.contiguous()" for lf in facts.leaves if lf.kind != "scalar"]
    lines += [f"out = torch.empty({full}.shape, device={full}.device, dtype=torch.{facts.dtype})",
              "n_elements = out.numel()",
              f"_fused_elementwise_kernel[(triton.cdiv(n_elements, {params['BLOCK_SIZE']}),)](\n"
              + indent(",\n".join(["out", *names, "n_elements, out.shape[-1]", launch_keywords(params)])) + ",\n)",
              "return out"]
    return (f"def fused_elementwise({', '.join(names)}):\n"
            f'    """The pointwise forward as one kernel launch."""\n{indent(chr(10).join(lines))}\n')


@dataclass(frozen=True)
class TritonFusedElementwiseFamily(TemplateFacts):
    """One Triton kernel for a whole pointwise forward."""

    name: str = "triton_fused_elementwise"
    strategy: str = "fusion"
    language: str = "triton"

    FACT_KEY: ClassVar[str] = "elementwise"
    PARSE: ClassVar = ElementwiseFacts.parse

    def space(self, analysis: TaskAnalysis) -> list[dict[str, Any]]:
        facts, _ = self.facts(analysis)
        if facts is None:
            return []
        cap = max(128, next_power_of_2(math.prod(facts.shape)))
        return dedupe([dict(BLOCK_SIZE=min(b, cap), num_warps=w)
                       for b, w in ((1024, 4), (2048, 8), (4096, 8), (512, 4), (1024, 8), (8192, 16))])

    def render(self, analysis: TaskAnalysis, params: dict[str, Any]) -> Move:
        facts, reason = self.facts(analysis)
        if facts is None:
            raise ValueError(f"{self.name} cannot render: {reason}")
        numel = math.prod(facts.shape)
        elem = elem_bytes(facts.dtype)
        read = sum({"full": numel, "row": facts.shape[-1], "column": numel // facts.shape[-1], "one": 1,
                    "scalar": 0}[lf.kind] for lf in facts.leaves) * elem
        doc = (f"Triton fused elementwise: {len(facts.lines)} pointwise ops of the forward in one kernel.\n\n"
               f"{numel} elements {facts.dtype}: {read + numel * elem} bytes at least (each input read once, the "
               f"output written once), no matmul FLOPs.\nPoint: {describe_params(params)}. "
               f"Generated by kernelarc ({self.name}).")
        body = f"{kernel_source(facts)}\n\n{wrapper_source(facts, params)}"
        call = f"fused_elementwise({', '.join(lf.ref for lf in facts.leaves)})"
        text = (f"{len(facts.lines)} pointwise ops fused into one Triton kernel (BLOCK_SIZE={params['BLOCK_SIZE']}): "
                "one read of each input, one write")
        return Move(family=self.name, params=dict(params), source=module_source(analysis, doc=doc, body=body,
                                                                                 call=call), claim=claim(text))


FAMILIES = (register_family(TritonFusedElementwiseFamily()),)
"""The registered elementwise family."""

__all__ = ["ElementwiseFacts", "FAMILIES", "Leaf", "TritonFusedElementwiseFamily", "kernel_source",
           "translate_node", "wrapper_source"]
