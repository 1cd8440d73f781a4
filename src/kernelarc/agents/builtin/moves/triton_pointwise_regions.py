"""Triton kernels for the pointwise regions of any forward; every other op as the reference computes it.

The captured graph is replayed as `torch.ops.aten` calls (pytorch_source.forward_body's way), except
that each maximal run of pointwise ops (consecutive in graph order, one output shape, ops
`triton_elementwise.translate_node` can write) becomes one generated Triton kernel: its inputs read
once, every value the rest of the forward needs written once, the intermediates never touching
memory. A convolution or GEMM followed by a bias, an activation and a scale thus keeps the library's
convolution and gets one kernel for the rest. Inputs broadcast in any way PyTorch allows (each is
expanded to the region's shape and indexed through its strides; a contiguous full-shape input is
read at the flat offset). Values are computed in fp32 and rounded to a node's own low-precision
dtype where the reference computes in it. Family `triton_pointwise_regions`, strategy fusion.
Imports neither torch nor triton. Budget: 250 lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from kernelarc.agents.builtin.moves import register_family
from kernelarc.agents.builtin.moves.base import Move, OpNode, TaskAnalysis
from kernelarc.agents.builtin.moves.emit import indent, jit_kernel, launch
from kernelarc.agents.builtin.moves.triton_common import claim, dedupe, describe_params, launch_keywords
from kernelarc.agents.builtin.moves.triton_elementwise import translate_node
from kernelarc.agents.builtin.pytorch_source import emit_reason, live_nodes, node_line, pytorch_module

IDENTITY = frozenset({"aten.clone", "aten.alias", "aten.detach", "aten.lift_fresh_copy", "aten._to_copy",
                      "aten.to.dtype", "aten.type_as"})
"""Ops that pass their input's value through (casts too: a node is rounded to its own dtype)."""
FLOAT_DTYPES = frozenset({"float32", "float16", "bfloat16", "float64"})
LOW_PRECISION = frozenset({"float16", "bfloat16"})
TRITON_IMPORTS = "import triton\nimport triton.language as tl\n"


MAX_KERNELS = 128
"""Beyond this many generated kernels the forward is a loop the trace unrolled (a row sum written as
512 slice-adds became 512 pointwise kernels, or 1024 with its reductions lowered, and over 1 MB of
source): one kernel per node then launches more than the reference's own ops and takes minutes to
compile; triton_reduction folds such unrolled sums."""


def too_many_kernels(kernels: int) -> str:
    """Why a generating family leaves a forward alone (see MAX_KERNELS)."""
    return (f"the forward would be {kernels} generated kernels (over {MAX_KERNELS}): a loop the trace unrolled, "
            "left to the families that fold it")


@dataclass(frozen=True)
class Region:
    """One run of pointwise nodes that becomes one kernel."""

    index: int
    nodes: tuple[OpNode, ...]
    tensors: tuple[str, ...]
    """Refs of the tensors it reads (forward inputs, parameters, earlier nodes), in first-use order."""
    scalars: tuple[str, ...]
    """Refs of Python numbers it reads (SOL-ExecBench scalar inputs)."""
    exports: tuple[str, ...]
    """Its nodes the rest of the forward (or the output) needs."""
    rank: int

    @property
    def kernel(self) -> str:
        return f"_pointwise_region_{self.index}"

    @property
    def ops(self) -> int:
        return sum(1 for n in self.nodes if n.target not in IDENTITY)


def _value_spec(analysis: TaskAnalysis, nodes: dict[str, OpNode], ref: str) -> tuple[tuple[int, ...] | None, str | None]:
    if ref in nodes:
        return nodes[ref].shape, nodes[ref].dtype
    return analysis.values.get(ref, (None, None))


def _broadcasts(shape: tuple[int, ...], to: tuple[int, ...]) -> bool:
    return len(shape) <= len(to) and all(a in (1, b) for a, b in zip(reversed(shape), reversed(to)))


def _refs(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, (list, tuple)):
        return [r for v in value for r in _refs(v)]
    return []


def find_regions(analysis: TaskAnalysis) -> list[Region]:
    """The maximal runs of translatable pointwise nodes of one output shape, in graph order."""
    nodes = {n.name: n for n in analysis.nodes}
    users: dict[str, list[int]] = {}
    for i, n in enumerate(analysis.nodes):
        for ref in _refs((n.args, list(n.kwargs.values()))):
            users.setdefault(ref, []).append(i)
    runs: list[list[int]] = []
    for i, node in enumerate(analysis.nodes):
        run = runs[-1] if runs and runs[-1][-1] == i - 1 else None
        shape = nodes[analysis.nodes[run[0]].name].shape if run else node.shape
        if _fusible(node, i, shape, analysis, nodes, users, run or []):
            if run is not None:
                run.append(i)
            else:
                runs.append([i])
    regions = []
    for run in runs:
        members = [analysis.nodes[i] for i in run]
        if not any(m.target not in IDENTITY for m in members):
            continue
        names = {m.name for m in members}
        reads = [r for m in members for r in _refs((m.args, list(m.kwargs.values()))) if r not in names]
        reads = list(dict.fromkeys(r for r in reads if r in nodes or r in analysis.values))
        tensors = tuple(r for r in reads if _value_spec(analysis, nodes, r)[0] is not None)
        if not tensors:
            continue
        exports = tuple(m.name for m in members if m.name in analysis.output_names
                        or any(u > run[-1] for u in users.get(m.name, [])))
        regions.append(Region(len(regions), tuple(members), tensors,
                              tuple(r for r in reads if r not in tensors), exports, len(members[0].shape)))
    return regions


def _fusible(node: OpNode, i: int, shape: tuple[int, ...] | None, analysis: TaskAnalysis, nodes: dict[str, OpNode],
             users: dict[str, list[int]], run: list[int]) -> bool:
    """Whether `node` can join the run (or start one): a translatable pointwise op on floats of the run's
    shape, whose tensor arguments broadcast to it; an in-place op only on a value nothing reads later."""
    if not (node.pointwise or node.target in IDENTITY) or node.shape is None or node.shape != shape:
        return False
    if node.dtype not in FLOAT_DTYPES and node.dtype != "bool":
        return False
    for ref in _refs((node.args, list(node.kwargs.values()))):
        spec = _value_spec(analysis, nodes, ref)
        if spec[0] is not None and (not _broadcasts(spec[0], shape) or (spec[1] not in FLOAT_DTYPES and spec[1] != "bool")):
            return False
    if node.target.split(".")[1].endswith("_"):  # in place: the old value must be dead after it
        first = node.args[0] if node.args else None
        if not isinstance(first, str) or first not in nodes or any(u > i for u in users.get(first, []) if u != i):
            return False
    try:
        translate_node(node, _Names())
    except (ValueError, KeyError, TypeError, IndexError):
        return node.target in IDENTITY
    return True


class _Names(dict):
    """A value map that names any ref after itself (to test that a node translates)."""

    def __missing__(self, key: str) -> str:
        return re.sub(r"\W", "_", key)


def _var(ref: str) -> str:
    return "in_" + re.sub(r"\W", "_", ref.removeprefix("self.")).strip("_")


def kernel_source(region: Region) -> str:
    """The region's kernel: index, load each tensor once, compute every node in fp32, store the exports."""
    dims = [f"D{d}" for d in range(region.rank)]
    args = [", ".join(f"out{k}_ptr" for k in range(len(region.exports))) + ",",
            ", ".join(f"{_var(r)}_ptr" for r in region.tensors) + ","]
    if region.scalars:
        args.append(", ".join(_var(r) for r in region.scalars) + ",")
    args.append(", ".join(["n_elements", *dims]) + ",")  # a 0-d region (a scalar result) has no dims
    for r in region.tensors:
        if region.rank:
            args.append("".join(f"{_var(r)}_s{d}, " for d in range(region.rank)).rstrip(" "))
    args += [f"{_var(r).upper()}_FLAT: tl.constexpr," for r in region.tensors]
    args.append("INDEX_64: tl.constexpr, BLOCK_SIZE: tl.constexpr,")
    body = ["if INDEX_64:  # an offset may pass 2**31",
            "    offs = tl.program_id(0).to(tl.int64) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)",
            "else:  # 32-bit index arithmetic: a 64-bit division is a long instruction sequence on the GPU",
            "    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)",
            "mask = offs < n_elements", "rest = offs"]
    for d in reversed(range(region.rank)):
        body += [f"i{d} = rest % D{d}", f"rest = rest // D{d}"]
    value = {r: _var(r) for r in (*region.tensors, *region.scalars)}
    for r in region.tensors:
        v = _var(r)
        strided = " + ".join(f"i{d} * {v}_s{d}" for d in range(region.rank)) or "0"
        body += [f"if {v.upper()}_FLAT:", f"    {v} = tl.load({v}_ptr + offs, mask=mask, other=0)",
                 "else:", f"    {v} = tl.load({v}_ptr + {strided}, mask=mask, other=0)",
                 f"if {v}.dtype != tl.int1:", f"    {v} = {v}.to(tl.float32)"]
    for n in region.nodes:
        value[n.name] = n.name
        expr = value[n.args[0]] if n.target in IDENTITY else translate_node(n, value)
        body.append(f"{n.name} = {expr}")
        if n.dtype in LOW_PRECISION:  # the reference rounds here: so does the kernel
            body.append(f"{n.name} = {n.name}.to(tl.{n.dtype}).to(tl.float32)")
    for k, name in enumerate(region.exports):
        body.append(f"tl.store(out{k}_ptr + offs, {name}.to(out{k}_ptr.dtype.element_ty), mask=mask)")
    return jit_kernel(region.kernel, args, f"{region.ops} pointwise ops of the forward, in one pass.", "\n".join(body))


def wrapper_source(region: Region, dtypes: tuple[str, ...], params: dict[str, Any]) -> str:
    """Host function: the launch facts of the operands' layout (computed once per layout, `PLAN`), one
    launch, its exports returned."""
    names = [_var(r) for r in (*region.tensors, *region.scalars)]
    tensors = [_var(r) for r in region.tensors]
    plans = f"{region.kernel}_plans"
    key = ", ".join(f"{t}.shape, {t}.stride()" for t in tensors)
    lines = [f"key = ({key})", f"plan = {plans}.get(key)", "if plan is None:",
             f"    plan = {plans}[key] = _region_plan(({', '.join(tensors)},), {params['BLOCK_SIZE']})",
             "shape, n_elements, strides, flat, index_64, grid = plan",
             f"device = {tensors[0]}.device"]
    lines += [f"out{k} = torch.empty(shape, device=device, dtype=torch.{d})" for k, d in enumerate(dtypes)]
    launch_args = [", ".join(f"out{k}" for k in range(len(dtypes))), ", ".join(tensors)]
    if region.scalars:
        launch_args.append(", ".join(_var(r) for r in region.scalars))
    launch_args += ["n_elements, *shape", "*strides"]
    launch_args += [f"{t.upper()}_FLAT=flat[{i}]" for i, t in enumerate(tensors)]
    launch_args.append("INDEX_64=index_64")
    launch_args.append(launch_keywords(params))
    lines += ["if n_elements:", indent(launch(region.kernel, "grid", launch_args))]
    outs = ", ".join(f"out{k}" for k in range(len(dtypes)))
    lines.append(f"return {outs}" + ("," if len(dtypes) == 1 else ""))
    return (f"{plans} = {{}}\n\n\n"
            f"def {region.kernel}_call({', '.join(names)}):\n"
            f'    """Region {region.index}: {region.ops} pointwise ops as one kernel launch."""\n'
            f"{indent(chr(10).join(lines))}\n")


def forward_source(analysis: TaskAnalysis, regions: list[Region], calls: dict[str, str] | None = None) -> str:
    """The forward: live nodes in order as aten calls, each region as one call at its last node, and each
    node named in `calls` as the given expression (another family's generated kernel)."""
    calls = calls or {}
    in_region = {n.name: r for r in regions for n in r.nodes}
    refs = {n.name for n in analysis.nodes} | set(analysis.values)
    rewrites = {e: f"{r.kernel}_call({', '.join((*r.tensors, *r.scalars))})" for r in regions for e in r.exports}
    live = set(live_nodes(analysis, {**rewrites, **calls}))
    lines = []
    for node in analysis.nodes:
        region = in_region.get(node.name)
        if region is None:
            if node.name in live:
                lines.append(f"{node.name} = {calls[node.name]}" if node.name in calls
                             else node_line(node, analysis, refs))
        elif node is region.nodes[-1] and any(e in live for e in region.exports):
            call = rewrites[region.exports[0]]
            lines.append(f"{', '.join(region.exports)}, = {call}")
    outs = ", ".join(analysis.output_names)
    lines.append(f"return ({outs})" if analysis.returns_tuple else f"return {outs}")
    return "\n".join(lines)


PLAN = '''def _region_plan(tensors, block):
    """A region's launch facts for its operands' shapes and strides: the region's shape and size, each
    operand's strides broadcast to it, which operands are read at the flat offset, whether an offset may
    pass 2**31 (then the kernel indexes in 64 bits), the grid."""
    shape = torch.broadcast_shapes(*(t.shape for t in tensors))
    n = math.prod(shape)
    strides, flat, reach = [], [], 0
    for t in tensors:
        view = t.expand(shape)
        strides += view.stride()
        flat.append(t.is_contiguous() and tuple(t.shape) == tuple(shape))
        reach = max(reach, sum((d - 1) * s for d, s in zip(shape, view.stride())))
    index_64 = n > 2**31 - 2**16 or reach >= 2**31  # the last block's lanes run past n
    return tuple(shape), n, tuple(strides), tuple(flat), index_64, (triton.cdiv(n, block),)
'''
"""Host helper of the region wrappers, run once per operand layout: a call then costs a dict lookup in
Python beside Triton's own launch. Computed on every call, this host work took 40 us of the 85 us a
region's call cost on the H200's host (Triton's launch 23 us; eager's whole multiply 13 us), and decided
the wall time of a kernel 1.6x faster than eager's on the device (level1 12, docs/benchmarks.md)."""


def regions_source(analysis: TaskAnalysis, regions: list[Region], params: dict[str, Any]) -> str:
    """Every region's kernel and host function, after their shared helper."""
    nodes = {n.name: n for n in analysis.nodes}
    return "\n\n".join([PLAN] + [f"{kernel_source(r)}\n\n{wrapper_source(r, tuple(nodes[e].dtype for e in r.exports), params)}"
                                   for r in regions])


@dataclass(frozen=True)
class TritonPointwiseRegionsFamily:
    """Generated Triton kernels for the pointwise parts of any captured forward."""

    name: str = "triton_pointwise_regions"
    strategy: str = "fusion"
    language: str = "triton"

    def applies(self, analysis: TaskAnalysis) -> str | None:
        reason = emit_reason(analysis)
        if reason:
            return reason
        regions = find_regions(analysis)
        if not regions:
            return "the forward has no run of pointwise ops to fuse (or none whose ops have a Triton form)"
        if len(regions) > MAX_KERNELS:
            return too_many_kernels(len(regions))
        try:
            forward_source(analysis, regions)
        except ValueError as e:
            return str(e)
        return None

    def space(self, analysis: TaskAnalysis) -> list[dict[str, Any]]:
        return dedupe([dict(BLOCK_SIZE=b, num_warps=w) for b, w in ((1024, 4), (2048, 8), (512, 4), (4096, 8))])

    def render(self, analysis: TaskAnalysis, params: dict[str, Any]) -> Move:
        regions = find_regions(analysis)
        if not regions:
            raise ValueError(f"{self.name} cannot render: {self.applies(analysis)}")
        helpers = regions_source(analysis, regions, params)
        ops = sum(r.ops for r in regions)
        doc = (f"Triton pointwise regions: {ops} pointwise ops of the forward in {len(regions)} generated kernel(s), "
               "each reading its inputs once and writing only what the rest of the forward needs; every other op "
               f"as the reference computes it.\nPoint: {describe_params(params)}. Generated by kernelarc ({self.name}).")
        source = pytorch_module(analysis, doc=doc, body=forward_source(analysis, regions), helpers=helpers,
                                imports="import math\n" + TRITON_IMPORTS)
        text = f"{ops} pointwise ops fused into {len(regions)} Triton kernel(s); library ops kept"
        return Move(family=self.name, params=dict(params), source=source, claim=claim(text))


FAMILIES = (register_family(TritonPointwiseRegionsFamily()),)
"""The registered family."""

__all__ = ["FAMILIES", "MAX_KERNELS", "Region", "TRITON_IMPORTS", "TritonPointwiseRegionsFamily", "find_regions", "forward_source",
           "kernel_source", "regions_source", "too_many_kernels", "wrapper_source"]
