"""Two Triton kernels for a GEMM whose result a row-wise op reads: C = epilogue(A @ B) tile by tile,
then the op (layer_norm, rms_norm, softmax, ...) with its own epilogue over C's rows.

A norm or a softmax needs the whole row, wider than a GEMM tile at transformer widths, so it cannot
join the GEMM's store; the pointwise ops after the product (bias, activation) can. Two kernels then
write C once and read it once, where eager writes and reads it once per op. The kernels and host
wrappers are triton_gemm's tiled template and triton_rowwise's; this module only checks that the two
patterns chain and composes them.

One family, strategy fusion: `gemm_then_rowwise`. Reads `facts["gemm"]` and `facts["rowwise"]`.
Imports neither torch nor triton.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

from kernelarc.agents.builtin.moves import register_family
from kernelarc.agents.builtin.moves.base import Move, TaskAnalysis
from kernelarc.agents.builtin.moves.emit import module_source
from kernelarc.agents.builtin.moves.triton_common import (
    claim,
    dedupe,
    describe_params,
    elem_bytes,
    next_power_of_2,
    read_facts,
)
from kernelarc.agents.builtin.moves.facts import GemmFacts, Patterns, RowwiseFacts
from kernelarc.agents.builtin.moves.triton_gemm import (
    TILE_COORDS,
    GemmVariant,
    kernels_source,
    smem_bytes,
    tile_points,
)
from kernelarc.agents.builtin.moves.triton_gemm import wrapper_source as gemm_wrapper
from kernelarc.agents.builtin.moves.triton_rowwise import (
    MAX_SINGLE_BLOCK,
    kernel_source,
    row_points,
)
from kernelarc.agents.builtin.moves.triton_rowwise import wrapper_source as row_wrapper
from kernelarc.agents.builtin.patterns import Graph

ROW_KEYS = {"ROW_BLOCK": "BLOCK_SIZE", "ROWS_PER_PROGRAM": "ROWS_PER_PROGRAM", "row_warps": "num_warps"}
"""A point's keys for the row-wise kernel -> the row-wise wrapper's; the GEMM's keep their own names."""
ROW_ALTERNATIVES = 2
"""Row-wise points besides the default tried, each with the default GEMM tile."""


@dataclass(frozen=True)
class Chain:
    """The GEMM and the row-wise op over its result."""

    gemm: GemmFacts
    row: RowwiseFacts
    """Its x is the GEMM's result C."""
    looped: bool
    """Rows too wide for one block: the row-wise kernel walks them in chunks."""


def read_chain(analysis: TaskAnalysis) -> tuple[Chain | None, str | None]:
    """The chain, or one line saying why the forward is not GEMM -> row-wise op."""
    gemm, reason = read_facts(analysis, "gemm", partial(GemmFacts.parse, whole_forward=False))
    if gemm is None:
        return None, reason
    patterns = Patterns.of(analysis)
    out, found = patterns.gemm.out, patterns.rowwise
    parse = partial(RowwiseFacts.parse, produced=out)
    if found is None:
        return None, read_facts(analysis, "rowwise", parse)[1]
    if found.input != out:
        return None, f"the row-wise {found.op} reads {found.input}, not the GEMM's result {out}"
    if out in analysis.output_names:
        return None, f"the forward also returns the GEMM's result {out}"
    order = {n.name: i for i, n in enumerate(analysis.nodes)}
    outside = [n.name for n in Graph(analysis).users.get(out, []) if order[n.name] > order.get(found.node, -1)]
    if outside:
        return None, f"the GEMM's result {out} is also read by {', '.join(outside)}, after the row-wise op"
    row, reason = read_facts(analysis, "rowwise", parse)
    if row is None:
        return None, reason
    return Chain(gemm, row, looped=next_power_of_2(row.cols) > MAX_SINGLE_BLOCK), None


def _split(params: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(GEMM point, row-wise point) of a chain point."""
    return ({k: v for k, v in params.items() if k not in ROW_KEYS},
            {name: params[key] for key, name in ROW_KEYS.items() if key in params})


@dataclass(frozen=True)
class GemmThenRowwiseFamily:
    """The tiled Triton GEMM with its epilogue fused, then the row-wise kernel over its output."""

    name: str = "gemm_then_rowwise"
    strategy: str = "fusion"
    language: str = "triton"

    def applies(self, analysis: TaskAnalysis) -> str | None:
        return read_chain(analysis)[1]

    def space(self, analysis: TaskAnalysis) -> list[dict[str, Any]]:
        """Every GEMM tile with the row-wise default, then the default tile with the next row-wise points."""
        chain, _ = read_chain(analysis)
        if chain is None:
            return []
        tiles = tile_points(chain.gemm, GemmVariant.TILED)
        rows = [{key: p[name] for key, name in ROW_KEYS.items() if name in p}
                for p in row_points(chain.row, chain.looped)]
        return dedupe([{**t, **rows[0]} for t in tiles] + [{**tiles[0], **r} for r in rows[1:1 + ROW_ALTERNATIVES]])

    def resources(self, params: dict[str, Any], analysis: TaskAnalysis | None = None) -> int:
        """Shared memory of the GEMM's block (the row-wise kernel's reductions need far less); without
        the analysis the element size is taken as 4 bytes, an upper bound."""
        chain = read_chain(analysis)[0] if analysis is not None else None
        return smem_bytes(params, chain.gemm.dtype if chain else "float32")

    def render(self, analysis: TaskAnalysis, params: dict[str, Any]) -> Move:
        chain, reason = read_chain(analysis)
        if chain is None:
            raise ValueError(f"{self.name} cannot render: {reason}")
        gemm, row = chain.gemm, chain.row
        tile, row_point = _split(params)
        body = "\n\n".join([TILE_COORDS, kernels_source(gemm, tile, GemmVariant.TILED),
                            gemm_wrapper(gemm, tile, GemmVariant.TILED), kernel_source(row, chain.looped),
                            row_wrapper(row, row_point, chain.looped)])
        c_bytes = gemm.M * gemm.N * elem_bytes(gemm.dtype)
        doc = (f"Triton GEMM then {row.op}: C = {gemm.formula}, then {row.formula} over C's rows.\n\n"
               f"M={gemm.M} N={gemm.N} K={gemm.K} {gemm.dtype}: {2 * gemm.M * gemm.N * gemm.K} FLOPs; C ({c_bytes} "
               f"bytes) written once and read once.\nPoint: {describe_params(params)}. "
               f"Generated by kernelarc ({self.name}).")
        product = f"gemm({', '.join([gemm.a, gemm.b, *(s.tensor for s in gemm.epilogue if s.tensor)])})"
        call = f"{row.op}({', '.join([product, *(ref for _, ref in row.operands())])})"
        fused = "".join(f"+{s.op}" for s in gemm.epilogue)
        row_fused = "".join(f"+{r.step.op if r.step else 'cast'}" for r in row.epilogue)
        text = (f"Triton GEMM{fused} {tile['BLOCK_M']}x{tile['BLOCK_N']}x{tile['BLOCK_K']} w{tile['num_warps']} "
                f"s{tile['num_stages']}, then {row.op}{row_fused} over its rows: C makes one round trip")
        return Move(family=self.name, params=dict(params), source=module_source(analysis, doc=doc, body=body,
                                                                                 call=call), claim=claim(text))


FAMILY = register_family(GemmThenRowwiseFamily())
"""The registered family."""

__all__ = ["Chain", "FAMILY", "GemmThenRowwiseFamily", "ROW_KEYS", "read_chain"]
