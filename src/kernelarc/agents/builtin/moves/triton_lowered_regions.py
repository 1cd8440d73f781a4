"""Generated Triton kernels for the forward traced through ATen's decompositions: its pointwise runs
(as triton_pointwise_regions writes them), its reductions, its GEMMs (gemm_nodes), its convolutions
(conv_nodes), its poolings (pool_nodes) and its cumulative sums and products (scan_nodes), each one
kernel.

Traced that way (`TaskAnalysis.lowered`), a GroupNorm, a LayerNorm, a BatchNorm, a softmax or a
log-softmax is reductions (sum, mean, max, min, variance) and pointwise maths; a GEMM (`aten.mm`,
`bmm`, `addmm`), a convolution of any rank (`aten.convolution`, transposed or not) and a max or
average pooling and a cumsum or cumprod are one generated kernel each; argmin and argmax are index reductions (the first extreme
element, as torch picks it); what has no generated form (an adaptive pooling, a gather) is replayed
as the reference computes it. A reduction over any dims is one kernel: the host
moves the reduced dims last (a copy only when they are not already), a program reduces one row in
blocks, in fp32 (the variance in two passes over the row, as precise as the reference's), and the
result takes the node's shape. Family `triton_lowered_regions`, strategy fusion. Imports neither torch
nor triton. Budget: 200 lines.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kernelarc.agents.builtin.moves import conv_nodes, gemm_nodes, pool_nodes, register_family, scan_nodes
from kernelarc.agents.builtin.moves.base import Move, OpNode, TaskAnalysis
from kernelarc.agents.builtin.moves.emit import indent, jit_kernel, launch, literal
from kernelarc.agents.builtin.moves.facts import Patterns
from kernelarc.agents.builtin.moves.triton_common import claim, dedupe, describe_params, launch_keywords
from kernelarc.agents.builtin.moves.triton_pointwise_regions import (
    FLOAT_DTYPES,
    MAX_KERNELS,
    TRITON_IMPORTS,
    find_regions,
    forward_source,
    regions_source,
    too_many_kernels,
)
from kernelarc.agents.builtin.pytorch_source import emit_reason, pytorch_module

# target -> (reduction, index of the dims argument or None for all dims)
REDUCTIONS: dict[str, tuple[str, int | None]] = {
    "aten.sum.dim_IntList": ("sum", 1), "aten.sum": ("sum", None), "prims.sum.default": ("sum", 1),
    "aten.mean.dim": ("mean", 1), "aten.mean": ("mean", None),
    "aten.amax": ("max", 1), "prims.amax.default": ("max", 1),
    "aten.amin": ("min", 1), "prims.amin.default": ("min", 1),
    "prims.var.default": ("var", 1), "aten.var.correction": ("var", 1),
    "aten.argmin": ("argmin", 1), "aten.argmax": ("argmax", 1),
}
_IDENTITY = {"sum": "0.0", "mean": "0.0", "var": "0.0", "max": '-float("inf")', "min": 'float("inf")',
             "argmin": 'float("inf")', "argmax": '-float("inf")'}
ARG_REDUCTIONS = {"argmin": "<", "argmax": ">"}
"""Reductions to the index of the first extreme element (int64 results), with their comparison."""


@dataclass(frozen=True)
class Reduction:
    """One reduction node of the lowered graph."""

    node: OpNode
    op: str
    source: str
    """The ref it reduces."""
    dims: tuple[int, ...] | None
    """Dims reduced (None: all)."""
    correction: float
    keepdim: bool

    @property
    def kernel(self) -> str:
        return f"_reduce_{self.node.name}"


def find_reductions(analysis: TaskAnalysis) -> list[Reduction]:
    """The reductions of floats this family writes as kernels."""
    values = analysis.typed_refs()
    found = []
    for node in analysis.nodes:
        kind = REDUCTIONS.get(node.target)
        result_dtypes = ("int64",) if kind and kind[0] in ARG_REDUCTIONS else FLOAT_DTYPES
        if kind is None or node.dtype not in result_dtypes or not node.args or not isinstance(node.args[0], str):
            continue
        shape, dtype = values.get(node.args[0], (None, None))
        if shape is None or dtype not in FLOAT_DTYPES or node.shape is None:
            continue
        op, at = kind
        dims = node.args[at] if at is not None and len(node.args) > at else node.kwargs.get("dim")
        dims = (dims,) if isinstance(dims, int) else dims  # argmin / argmax take one dim
        dims = tuple(int(d) % max(len(shape), 1) for d in dims) if dims else None
        correction = node.args[2] if node.target == "prims.var.default" and len(node.args) > 2 else node.kwargs.get(
            "correction", 1)
        keepdim = (node.args[2] if len(node.args) > 2 and isinstance(node.args[2], bool)
                   else bool(node.kwargs.get("keepdim", False)))
        found.append(Reduction(node, op, node.args[0], dims, float(correction if correction is not None else 1),
                               keepdim))
    return found


def kernel_source(r: Reduction) -> str:
    """One program per row: the row reduced in blocks of BLOCK_SIZE, in fp32."""
    load = "tl.load(x_ptr + row * n_cols + cols, mask=mask, other={other}).to(tl.float32)"
    body = ["row = tl.program_id(0).to(tl.int64)", f"acc = tl.full([BLOCK_SIZE], {_IDENTITY[r.op]}, tl.float32)",
            "for start in range(0, n_cols, BLOCK_SIZE):", "    cols = start + tl.arange(0, BLOCK_SIZE)",
            "    mask = cols < n_cols", f"    x = {load.format(other=_IDENTITY[r.op])}"]
    if r.op in ARG_REDUCTIONS:  # per lane the first extreme seen; then the first index among the lanes' best
        body.insert(2, "at = tl.zeros([BLOCK_SIZE], tl.int64)")
        body += [f"    take = x {ARG_REDUCTIONS[r.op]} acc", "    acc = tl.where(take, x, acc)",
                 "    at = tl.where(take, cols.to(tl.int64), at)",
                 f"best = {'tl.min' if r.op == 'argmin' else 'tl.max'}(acc, axis=0)",
                 "result = tl.min(tl.where(acc == best, at, n_cols), axis=0)"]
    elif r.op == "max":
        body += ["    acc = tl.maximum(acc, x)", "result = tl.max(acc, axis=0)"]
    elif r.op == "min":
        body += ["    acc = tl.minimum(acc, x)", "result = tl.min(acc, axis=0)"]
    else:
        body += ["    acc += x", "result = tl.sum(acc, axis=0)"]
    if r.op == "mean":
        body.append("result = result / n_cols")
    if r.op == "var":  # the mean first, then the squared deviations: as precise as the reference's
        body += ["mean = result / n_cols", "acc = tl.zeros([BLOCK_SIZE], tl.float32)",
                 "for start in range(0, n_cols, BLOCK_SIZE):", "    cols = start + tl.arange(0, BLOCK_SIZE)",
                 "    mask = cols < n_cols", f"    x = {load.format(other='0.0')}",
                 "    acc += tl.where(mask, (x - mean) * (x - mean), 0.0)",
                 f"result = tl.sum(acc, axis=0) / tl.maximum(n_cols - {literal(r.correction)}, 0.0)"]
    body.append("tl.store(out_ptr + row, result.to(out_ptr.dtype.element_ty))")
    return jit_kernel(r.kernel, ["out_ptr, x_ptr,", "n_cols,", "BLOCK_SIZE: tl.constexpr,"],
                      f"{r.op} of {r.source} over {'all dims' if r.dims is None else f'dims {list(r.dims)}'}.",
                      "\n".join(body))


def wrapper_source(r: Reduction, params: dict[str, Any]) -> str:
    """Host function: the reduced dims moved last, one program per kept element, the node's shape back."""
    dims = "tuple(range(x.dim()))" if r.dims is None else repr(tuple(r.dims))
    lines = [f"dims = {dims}", "x_shape = tuple(x.shape)", "kept = [d for d in range(x.dim()) if d not in dims]",
             "rows = math.prod(x.shape[d] for d in kept)", "n_cols = math.prod(x.shape[d] for d in dims)",
             "x = x.permute(*kept, *dims).reshape(rows, n_cols).contiguous()",
             f"out = torch.empty(rows, device=x.device, dtype=torch.{r.node.dtype})",
             "if rows:", indent(launch(r.kernel, "(rows,)", ["out, x", "n_cols", launch_keywords(params)])),
             f"return out.reshape([x_shape[d] if d not in dims else 1 for d in range(len(x_shape))"
             f"{'' if r.keepdim else ' if d not in dims'}])"]
    return (f"def {r.kernel}_call(x):\n    \"\"\"{r.op} reduction as one kernel launch.\"\"\"\n"
            f"{indent(chr(10).join(lines))}\n")


@dataclass(frozen=True)
class TritonLoweredRegionsFamily:
    """Pointwise runs and reductions of the decomposed forward, each a generated Triton kernel."""

    name: str = "triton_lowered_regions"
    strategy: str = "fusion"
    language: str = "triton"

    def applies(self, analysis: TaskAnalysis) -> str | None:
        lowered = analysis.lowered
        if lowered is None:
            return "the forward does not trace through ATen's decompositions"
        reason = emit_reason(lowered)
        if reason:
            return f"the decomposed forward cannot be written back: {reason}"
        others = [*find_reductions(lowered), *conv_nodes.find_convs(lowered), *pool_nodes.find_pools(lowered),
                  *scan_nodes.find_scans(lowered)]
        gemms, regions = gemm_nodes.find_gemms(lowered), find_regions(lowered)
        if not (others or gemms):
            return ("the decomposed forward has no reduction, scan, GEMM, convolution or pooling to write "
                    "(triton_pointwise_regions covers pointwise runs)")
        if Patterns.of(analysis).gemm and not (others or regions):
            return "a lone GEMM, nothing to fuse: the GEMM families (tensor_cores, arch) write it"
        kernels = len(others) + len(gemms) + len(regions)
        if kernels > MAX_KERNELS:
            return too_many_kernels(kernels)
        return None

    def space(self, analysis: TaskAnalysis) -> list[dict[str, Any]]:
        return dedupe([dict(BLOCK_SIZE=b, num_warps=w, gemm_m=m, gemm_n=n, gemm_k=k, conv_m=cm, conv_n=cn, conv_k=ck)
                       for b, w, m, n, k, cm, cn, ck in ((1024, 4, 64, 64, 32, 128, 32, 32),
                                                         (2048, 8, 128, 128, 32, 256, 64, 32),
                                                         (512, 4, 32, 64, 32, 64, 32, 32))])

    def render(self, analysis: TaskAnalysis, params: dict[str, Any]) -> Move:
        reason = self.applies(analysis)
        if reason:
            raise ValueError(f"{self.name} cannot render: {reason}")
        lowered = analysis.lowered
        reductions = find_reductions(lowered)
        gemms = gemm_nodes.find_gemms(lowered)
        convs = conv_nodes.find_convs(lowered)
        pools = pool_nodes.find_pools(lowered)
        scans = scan_nodes.find_scans(lowered)
        regions = find_regions(lowered)
        calls = {r.node.name: f"{r.kernel}_call({r.source})" for r in reductions}
        calls.update({g.node.name: g.call for g in gemms})
        calls.update({c.node.name: c.call for c in convs})
        calls.update({p.output.name: p.call for p in pools})
        calls.update({s.node.name: s.call for s in scans})
        small = {k: v for k, v in params.items() if k in ("BLOCK_SIZE", "num_warps")}
        helpers = "\n\n".join([*(f"{kernel_source(r)}\n\n{wrapper_source(r, small)}" for r in reductions),
                               *(f"{gemm_nodes.kernel_source(g)}\n\n{gemm_nodes.wrapper_source(g, params)}"
                                 for g in gemms),
                               *(f"{conv_nodes.kernel_source(c)}\n\n{conv_nodes.wrapper_source(c, params)}"
                                 for c in convs),
                               *(f"{pool_nodes.kernel_source(p)}\n\n{pool_nodes.wrapper_source(p, small)}"
                                 for p in pools),
                               *(f"{scan_nodes.kernel_source(s)}\n\n{scan_nodes.wrapper_source(s, small)}"
                                 for s in scans),
                               *([regions_source(lowered, regions, small)] if regions else [])])
        ops = sum(r.ops for r in regions)
        kernels = len(gemms) + len(convs) + len(pools) + len(scans) + len(reductions) + len(regions)
        doc = (f"Triton lowered regions: the forward traced through ATen's decompositions, its {len(gemms)} GEMM(s), "
               f"{len(convs)} convolution(s), {len(pools)} pooling(s), {len(scans)} scan(s), {len(reductions)} reduction(s) and {ops} "
               f"pointwise op(s) in "
               f"{kernels} generated kernel(s); other ops as the reference computes them.\n"
               f"Point: {describe_params(params)}. Generated by kernelarc ({self.name}).")
        source = pytorch_module(lowered, doc=doc, body=forward_source(lowered, regions, calls), helpers=helpers,
                                imports="import math\n" + TRITON_IMPORTS)
        text = (f"{len(gemms)} GEMM(s), {len(convs)} convolution(s), {len(pools)} pooling(s), {len(scans)} scan(s), {len(reductions)} "
                f"reduction(s) and {ops} pointwise op(s) of the decomposed forward as Triton kernels")
        return Move(family=self.name, params=dict(params), source=source, claim=claim(text))


FAMILIES = (register_family(TritonLoweredRegionsFamily()),)
"""The registered family."""

__all__ = ["FAMILIES", "REDUCTIONS", "Reduction", "TritonLoweredRegionsFamily", "find_reductions"]
