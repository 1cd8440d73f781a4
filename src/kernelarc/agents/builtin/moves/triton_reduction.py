"""Triton reduction templates: sum, mean, amax and amin over one dim (or adjacent dims) of any tensor.

The host views the input as [n_outer, n_reduce, n_inner] (a view for contiguous inputs) and passes
its strides, so reducing the last dim and reducing a middle dim are the same kernel: a
[BLOCK_P outputs, BLOCK_R reduced] tile walked along the reduced dim, accumulated in fp32.
Two families, strategy reduction:
- `triton_reduction`: one pass, each program owns BLOCK_P outputs.
- `triton_reduction_split`: two stages for few outputs over a long dim: SPLIT programs per output
  block each reduce a share into an fp32 workspace, a second kernel combines the shares in a fixed
  order (deterministic) and casts once.

Reads `facts["reduction"]` (agents/builtin/patterns.py). Imports neither torch nor triton. Budget: 300 lines.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

from kernelarc.agents.builtin.moves import register_family
from kernelarc.agents.builtin.moves.base import Move, TaskAnalysis
from kernelarc.agents.builtin.moves.emit import indent, module_source
from kernelarc.agents.builtin.moves.triton_common import (
    TemplateFacts,
    claim,
    dedupe,
    describe_params,
    elem_bytes,
    launch_keywords,
    next_power_of_2,
    require_leaf,
    require_whole_forward,
)

# op -> (identity for masked lanes, how two partials combine, the final tile reduction)
OPS: dict[str, tuple[str, str, str]] = {
    "sum": ("0.0", "{a} + {b}", "tl.sum({x}, axis={axis})"),
    "mean": ("0.0", "{a} + {b}", "tl.sum({x}, axis={axis})"),
    "amax": ('-float("inf")', "tl.maximum({a}, {b})", "tl.max({x}, axis={axis})"),
    "amin": ('float("inf")', "tl.minimum({a}, {b})", "tl.min({x}, axis={axis})"),
}
SPLIT_MIN_REDUCE = 2048
"""The split family is for reductions at least this long ..."""
SPLIT_MAX_OUTPUTS = 4096
"""... producing at most this many outputs (too few output blocks to fill the GPU otherwise)."""
TILE_ELEMENTS = (4096, 2048, 8192, 1024)
"""BLOCK_P x BLOCK_R budgets tried, most promising first."""


@dataclass(frozen=True)
class ReductionFacts:
    """`facts["reduction"]`: the whole forward is one reduction over adjacent dims of an input."""

    op: str
    """sum, mean, amax or amin."""
    x: str
    """The input's source expression."""
    first: int
    """First reduced dim."""
    last: int
    """Last reduced dim (the reduced dims are first..last)."""
    keepdim: bool
    """Whether reduced dims stay as size 1."""
    shape: tuple[int, ...]
    """The input's shape on the first workload."""
    dtype: str
    """Dtype of input and output."""

    @classmethod
    def parse(cls, raw: dict[str, Any], analysis: TaskAnalysis) -> ReductionFacts:
        """From `facts["reduction"]`; ValueError if this template cannot serve it."""
        if raw["op"] not in OPS:
            raise ValueError(f"reduction {raw['op']!r} is not templated")
        require_whole_forward(analysis, raw["out"])
        require_leaf(analysis, raw["input"])
        dims = sorted(raw["dims"])
        if not dims or dims != list(range(dims[0], dims[-1] + 1)):
            raise ValueError(f"reduced dims {dims} are not adjacent")
        return cls(op=raw["op"], x=raw["input"], first=dims[0], last=dims[-1], keepdim=bool(raw["keepdim"]),
                   shape=tuple(raw["input_shape"]), dtype=raw["dtype"])

    @property
    def sizes(self) -> tuple[int, int, int]:
        """(n_outer, n_reduce, n_inner) on the first workload."""
        return (math.prod(self.shape[:self.first]), math.prod(self.shape[self.first:self.last + 1]),
                math.prod(self.shape[self.last + 1:]))


def _accumulate(op: str) -> list[str]:
    """The reduce loop body: load a [BLOCK_P, BLOCK_R] tile along the reduced dim and fold it into `acc`."""
    identity, combine, _ = OPS[op]
    return [
        "offs_r = (r * BLOCK_R + tl.arange(0, BLOCK_R)).to(tl.int64)",
        "mask = p_mask[:, None] & (offs_r[None, :] < n_reduce)",
        f"x = tl.load(x_rows[:, None] + offs_r[None, :] * stride_xr, mask=mask, other={identity}).to(tl.float32)",
        f"acc = {combine.format(a='acc', b='x')}",
    ]


_SETUP = [
    "offs_p = (tl.program_id(0) * BLOCK_P + tl.arange(0, BLOCK_P)).to(tl.int64)",
    "p_mask = offs_p < n_outer * n_inner",
    "x_rows = x_ptr + (offs_p // n_inner) * stride_xo + (offs_p % n_inner) * stride_xi",
]
_ARGS = "x_ptr, stride_xo, stride_xr, stride_xi,\nn_outer, n_reduce, n_inner,\n"


def kernels_source(facts: ReductionFacts, split: bool) -> str:
    """The one-pass kernel, or the partial and finishing kernels of the split variant."""
    identity, combine, final = OPS[facts.op]
    init = f"acc = tl.full([BLOCK_P, BLOCK_R], {identity}, dtype=tl.float32)"
    scale = " / n_reduce" if facts.op == "mean" else ""
    name = f"_reduce_{facts.op}"
    if not split:
        body = [*_SETUP, init, "for r in range(0, tl.cdiv(n_reduce, BLOCK_R)):",
                *("    " + line for line in _accumulate(facts.op)),
                f"result = {final.format(x='acc', axis=1)}{scale}",
                "tl.store(out_ptr + offs_p, result.to(out_ptr.dtype.element_ty), mask=p_mask)"]
        return (f"@triton.jit\ndef {name}_kernel(\n{indent('out_ptr,' + chr(10) + _ARGS)}"
                f"    BLOCK_P: tl.constexpr, BLOCK_R: tl.constexpr,\n):\n"
                f'    """out[o, i] = {facts.op} over r of x[o, r, i]; fp32 accumulation, one cast at the store."""\n'
                f"{indent(chr(10).join(body))}\n")
    partial = [*_SETUP, "split = tl.program_id(1)",
               "chunks = tl.cdiv(tl.cdiv(n_reduce, BLOCK_R), SPLIT)  # BLOCK_R chunks per split", init,
               "for chunk in range(0, chunks):", "    r = split * chunks + chunk",
               *("    " + line for line in _accumulate(facts.op)),
               f"tl.store(ws_ptr + split * stride_wss + offs_p, {final.format(x='acc', axis=1)}, mask=p_mask)"]
    finish = ["offs_p = (tl.program_id(0) * BLOCK_P + tl.arange(0, BLOCK_P)).to(tl.int64)",
              "p_mask = offs_p < n_outputs",
              f"result = tl.load(ws_ptr + offs_p, mask=p_mask, other={identity})",
              "for split in tl.static_range(1, SPLIT):  # fixed order: deterministic",
              f"    part = tl.load(ws_ptr + split * stride_wss + offs_p, mask=p_mask, other={identity})",
              f"    result = {combine.format(a='result', b='part')}",
              f"result = result{scale}",
              "tl.store(out_ptr + offs_p, result.to(out_ptr.dtype.element_ty), mask=p_mask)"]
    return (f"@triton.jit\ndef {name}_partial_kernel(\n{indent('ws_ptr, stride_wss,' + chr(10) + _ARGS)}"
            f"    BLOCK_P: tl.constexpr, BLOCK_R: tl.constexpr, SPLIT: tl.constexpr,\n):\n"
            f'    """ws[split, p] = {facts.op} of x over split\'s share of the reduced dim, in fp32."""\n'
            f"{indent(chr(10).join(partial))}\n\n\n"
            f"@triton.jit\ndef {name}_finish_kernel(\n    out_ptr,\n    ws_ptr, stride_wss,\n"
            f"    n_outputs, n_reduce,\n    BLOCK_P: tl.constexpr, SPLIT: tl.constexpr,\n):\n"
            f'    """out[p] = the SPLIT shares of ws combined{", divided by n_reduce" if scale else ""}; one cast."""\n'
            f"{indent(chr(10).join(finish))}\n")


def wrapper_source(facts: ReductionFacts, params: dict[str, Any], split: bool) -> str:
    """Host function `reduce_<op>(x)`: view as [outer, reduce, inner], allocate, launch."""
    f, last = facts.first, facts.last
    kept = f"1 if {f} <= i <= {last} else d" if facts.keepdim else "d"
    where = "" if facts.keepdim else f" if not {f} <= i <= {last}"
    lines = [
        f"n_outer, n_reduce, n_inner = x.shape[:{f}].numel(), x.shape[{f}:{last + 1}].numel(), "
        f"x.shape[{last + 1}:].numel()",
        "x3 = x.reshape(n_outer, n_reduce, n_inner)  # a view when x is contiguous",
        f"out = torch.empty([{kept} for i, d in enumerate(x.shape){where}], device=x.device, dtype=x.dtype)",
    ]
    block_p = params["BLOCK_P"]
    x_args = "x3, x3.stride(0), x3.stride(1), x3.stride(2),\nn_outer, n_reduce, n_inner"
    name = f"_reduce_{facts.op}"
    if split:
        s = params["SPLIT"]
        lines += [f"ws = torch.empty(({s}, n_outer * n_inner), device=x.device, dtype=torch.float32)",
                  f"{name}_partial_kernel[(triton.cdiv(n_outer * n_inner, {block_p}), {s})](\n"
                  + indent(f"ws, ws.stride(0),\n{x_args},\n{launch_keywords(params)},") + "\n)",
                  f"{name}_finish_kernel[(triton.cdiv(n_outer * n_inner, {block_p}),)](\n"
                  + indent(f"out, ws, ws.stride(0), n_outer * n_inner, n_reduce,\n"
                           f"{launch_keywords(dict(BLOCK_P=block_p, SPLIT=s, num_warps=params['num_warps']))},")
                  + "\n)"]
    else:
        lines.append(f"{name}_kernel[(triton.cdiv(n_outer * n_inner, {block_p}),)](\n"
                     + indent(f"out,\n{x_args},\n{launch_keywords(params)},") + "\n)")
    lines.append("return out")
    dims = f"dims {f}..{last}" if last > f else f"dim {f}"
    launches = "two launches" if split else "one launch"
    return (f"def reduce_{facts.op}(x):\n"
            f'    """{facts.op} of x over {dims} (keepdim={facts.keepdim}); {launches}."""\n'
            f"{indent(chr(10).join(lines))}\n")


@dataclass(frozen=True)
class TritonReductionFamily(TemplateFacts):
    """A reduction over adjacent dims, in one pass or two stages."""

    name: str
    """Registered family id."""
    split: bool
    """Two stages: SPLIT programs share each output block's reduced dim."""
    strategy: str = "reduction"
    language: str = "triton"

    FACT_KEY: ClassVar[str] = "reduction"
    PARSE: ClassVar = ReductionFacts.parse

    def applies(self, analysis: TaskAnalysis) -> str | None:
        facts, reason = self.facts(analysis)
        if facts is None:
            return reason
        outer, reduce, inner = facts.sizes
        if self.split and not (reduce >= SPLIT_MIN_REDUCE and outer * inner <= SPLIT_MAX_OUTPUTS):
            return (f"two-stage reduction is for long reductions into few outputs (n_reduce >= {SPLIT_MIN_REDUCE}, "
                    f"outputs <= {SPLIT_MAX_OUTPUTS}), got {reduce} into {outer * inner}")
        return None

    def space(self, analysis: TaskAnalysis) -> list[dict[str, Any]]:
        facts, _ = self.facts(analysis)
        if facts is None:
            return []
        outer, reduce, inner = facts.sizes
        cap_p, cap_r = next_power_of_2(outer * inner), next_power_of_2(reduce)
        # Reducing the innermost dim: few outputs per program, long contiguous BLOCK_R rows; otherwise the
        # outputs are the contiguous direction, so BLOCK_P leads.
        leads = (1, 4, 16) if inner == 1 else (64, 256, 16)
        points = []
        for elements in TILE_ELEMENTS:
            for lead in leads:
                block_p = min(cap_p, lead)
                point = dict(BLOCK_P=block_p, BLOCK_R=max(1, min(cap_r, elements // block_p)),
                             num_warps=4 if elements <= 2048 else 8)
                points += [dict(point, SPLIT=s) for s in (8, 16, 32, 4)] if self.split else [point]
        return dedupe(points)

    def render(self, analysis: TaskAnalysis, params: dict[str, Any]) -> Move:
        facts, reason = self.facts(analysis)
        if facts is None:
            raise ValueError(f"{self.name} cannot render: {reason}")
        outer, reduce, inner = facts.sizes
        moved = (outer * reduce * inner + outer * inner) * elem_bytes(facts.dtype)
        doc = (f"Triton {facts.op} over dims {facts.first}..{facts.last} of a {facts.shape} {facts.dtype} tensor"
               f"{' in two stages' if self.split else ''}.\n\n{outer} x {reduce} x {inner} (outer, reduced, inner): "
               f"{moved} bytes at least, no matmul FLOPs.\nPoint: {describe_params(params)}. "
               f"Generated by kernelarc ({self.name}).")
        body = f"{kernels_source(facts, self.split)}\n\n{wrapper_source(facts, params, self.split)}"
        how = f"{params['SPLIT']}-way split, two stages" if self.split else "one pass"
        text = (f"Triton {facts.op} ({how}), {params['BLOCK_P']}x{params['BLOCK_R']} tiles, fp32 accumulation: "
                "the input read once at full bandwidth")
        return Move(family=self.name, params=dict(params), claim=claim(text),
                    source=module_source(analysis, doc=doc, body=body, call=f"reduce_{facts.op}({facts.x})"))


FAMILIES = tuple(register_family(f) for f in (
    TritonReductionFamily("triton_reduction", split=False),
    TritonReductionFamily("triton_reduction_split", split=True),
))
"""The registered reduction families."""

__all__ = ["FAMILIES", "ReductionFacts", "TritonReductionFamily", "kernels_source", "wrapper_source"]
