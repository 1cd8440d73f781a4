"""Pooling nodes of a lowered graph (`aten.max_pool{2,3}d_with_indices`, `aten.avg_pool{2,3}d`; a 1-D
pooling reaches the graph as the 2-D one) as one generated Triton kernel each.

One template for max and average over 1 to 3 spatial dims: the host views the input as (rows, D, H, W)
(missing dims of size 1), a program owns a block of flattened outputs and reads their windows in
tiles (stride, padding, dilation, ceil mode). An average divides by PyTorch's count: the taps inside
the padded input (`count_include_pad`), the taps inside the input, or the divisor override. A max pool
whose indices are read later is left to the reference (the kernel writes only values). Used by
triton_lowered_regions. Imports neither torch nor triton. Budget: 160 lines.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from kernelarc.agents.builtin.moves.base import OpNode, TaskAnalysis
from kernelarc.agents.builtin.moves.conv_nodes import int_tuple
from kernelarc.agents.builtin.moves.emit import indent, jit_kernel, launch, literal
from kernelarc.agents.builtin.pytorch_source import live_nodes

# target -> (op, spatial rank, argument names after the input, in order)
POOLS: dict[str, tuple[str, int, tuple[str, ...]]] = {
    **{f"aten.max_pool{r}d_with_indices": ("max", r, ("kernel_size", "stride", "padding", "dilation", "ceil_mode"))
       for r in (2, 3)},
    **{f"aten.avg_pool{r}d": ("avg", r, ("kernel_size", "stride", "padding", "ceil_mode", "count_include_pad",
                                         "divisor_override")) for r in (2, 3)},
}
POOL_DTYPES = frozenset({"float32", "float16", "bfloat16"})
_DEFAULTS = {"stride": (), "padding": 0, "dilation": 1, "ceil_mode": False, "count_include_pad": True,
             "divisor_override": None}


@dataclass(frozen=True)
class Pool:
    node: OpNode
    output: OpNode
    """The node whose value the kernel computes (the max pool's values getitem, else the node)."""
    op: str
    x: str
    kernel_size: tuple[int, ...]
    stride: tuple[int, ...]
    padding: tuple[int, ...]
    dilation: tuple[int, ...]
    ceil_mode: bool
    count_include_pad: bool
    divisor: int | None

    @property
    def kernel(self) -> str:
        return f"_pool_{self.node.name}"

    @property
    def call(self) -> str:
        return f"{self.kernel}_call({self.x})"


def find_pools(analysis: TaskAnalysis) -> list[Pool]:
    """The poolings of floats with literal geometry whose every live output the kernel writes."""
    values = analysis.typed_refs()
    live = set(live_nodes(analysis, {}))
    found = []
    for node in analysis.nodes:
        kind = POOLS.get(node.target)
        if kind is None or not node.args or not isinstance(node.args[0], str):
            continue
        op, rank, names = kind
        output = node
        if op == "max":
            items = {n.args[1]: n for n in analysis.nodes if n.target == "getitem" and n.args[0] == node.name}
            if 0 not in items or (1 in items and items[1].name in live):
                continue
            output = items[0]
        args = dict(zip(names, node.args[1:])) | {k: v for k, v in node.kwargs.items() if k in names}
        args = {k: args.get(k, _DEFAULTS.get(k)) for k in names}
        geometry = [int_tuple(args.get(k, 1), rank) for k in ("kernel_size", "padding", "dilation")]
        stride = int_tuple(args["stride"], rank) if args["stride"] not in ((), [], None) else geometry[0]
        divisor = args.get("divisor_override")
        if (any(g is None for g in geometry) or stride is None or output.dtype not in POOL_DTYPES
                or values.get(node.args[0], (None, None))[1] != output.dtype or output.shape is None
                or not (divisor is None or isinstance(divisor, int))):
            continue
        found.append(Pool(node, output, op, node.args[0], geometry[0], stride, geometry[1], geometry[2],
                          bool(args["ceil_mode"]), bool(args.get("count_include_pad", True)), divisor))
    return found


def kernel_source(p: Pool) -> str:
    """Every tap checked against the input (padding and ceil mode can both leave it)."""
    dims = ["d", "h", "w"][3 - len(p.kernel_size):]
    split, taps = [], []
    for i, d in reversed(list(enumerate(dims))):
        D = d.upper()
        split += [f"o{d} = t % O{D}", f"t = t // O{D}", f"b{d} = o{d} * S{D} - P{D}"]
        taps += [f"k{d} = q % K{D}", f"q = q // K{D}", f"i{d} = b{d}[:, None] + (k{d} * D{D})[None, :]",
                 f"ok = ok & (i{d} >= 0) & (i{d} < I{D})", f"x_off += i{d} * s_x{i + 4 - len(dims)}"]
        if p.op == "avg" and p.count_include_pad and not p.divisor:
            taps.append(f"padded = padded & (i{d} < I{D} + P{D})")
    identity = '-float("inf")' if p.op == "max" else "0.0"
    window = " * ".join(f"K{d.upper()}" for d in dims)
    update = "acc = tl.maximum(acc, x)" if p.op == "max" else "acc += x"
    if p.op == "max":
        result = "result = tl.max(acc, axis=1)"
    elif p.divisor:
        result = f"result = tl.sum(acc, axis=1) / {literal(float(p.divisor))}"
    else:
        result = "result = tl.sum(acc, axis=1) / tl.maximum(tl.sum(cnt, axis=1), 1.0)"
    counted = "padded" if p.count_include_pad else "ok"
    counts = p.op == "avg" and not p.divisor
    body = f"""offs = tl.program_id(0).to(tl.int64) * BLOCK_O + tl.arange(0, BLOCK_O)
o_mask = offs < total
t = offs
{chr(10).join(split)}
rr = tl.arange(0, BLOCK_W).to(tl.int64)
acc = tl.full((BLOCK_O, BLOCK_W), {identity}, tl.float32)
{"cnt = tl.zeros((BLOCK_O, BLOCK_W), tl.float32)" + chr(10) if counts else ""}for r0 in range(0, {window}, BLOCK_W):
    q = r0 + rr
    ok = o_mask[:, None] & (q < {window})[None, :]
    padded = ok
    x_off = (t * s_x0)[:, None]
{indent(chr(10).join(taps))}
    x = tl.load(x_ptr + x_off, mask=ok, other={identity}).to(tl.float32)
    {update}{chr(10) + "    cnt += tl.where(" + counted + ", 1.0, 0.0)" if counts else ""}
{result}
tl.store(out_ptr + offs, result.to(out_ptr.dtype.element_ty), mask=o_mask)"""
    args = ["out_ptr, x_ptr,", "total, ID, IH, IW, OD, OH, OW,", "s_x0, s_x1, s_x2, s_x3,",
            "KD: tl.constexpr, KH: tl.constexpr, KW: tl.constexpr, SD: tl.constexpr, SH: tl.constexpr,",
            "SW: tl.constexpr, PD: tl.constexpr, PH: tl.constexpr, PW: tl.constexpr,",
            "DD: tl.constexpr, DH: tl.constexpr, DW: tl.constexpr,", "BLOCK_O: tl.constexpr, BLOCK_W: tl.constexpr,"]
    return jit_kernel(p.kernel, args, f"{p.op} pooling of {p.x}: each output reads its window, in fp32.", body)


def wrapper_source(p: Pool, params: dict[str, Any]) -> str:
    """Host function: leading dims as rows, three spatial dims, the output size as PyTorch computes it."""
    rank, pad = len(p.kernel_size), 3 - len(p.kernel_size)
    geometry = [(1,) * pad + p.kernel_size, (1,) * pad + p.stride, (0,) * pad + p.padding, (1,) * pad + p.dilation]
    block_w = min(1 << max(math.prod(p.kernel_size) - 1, 0).bit_length(), 64)
    ceil = "s - 1" if p.ceil_mode else "0"
    lines = [f"lead = x.shape[:x.dim() - {rank}]", f"x4 = x.reshape(-1, *([1] * {pad}), *x.shape[x.dim() - {rank}:])",
             f"spatial = [(i + 2 * p - d * (k - 1) - 1 + {ceil}) // s + 1 for i, k, s, p, d in "
             f"zip(x4.shape[1:], {geometry[0]}, {geometry[1]}, {geometry[2]}, {geometry[3]})]",
             *([f"spatial = [o - 1 if (o - 1) * s >= i + p else o for o, i, s, p in "
                f"zip(spatial, x4.shape[1:], {geometry[1]}, {geometry[2]})]"] if p.ceil_mode else []),
             f"out = torch.empty(x4.shape[0], *spatial, device=x.device, dtype=torch.{p.output.dtype})",
             f"grid = (triton.cdiv(out.numel(), {4 * params['BLOCK_SIZE'] // block_w}),)",
             "if out.numel():",
             indent(launch(p.kernel, "grid", [
                 "out, x4", "out.numel(), *x4.shape[1:], *spatial", "*x4.stride()",
                 "KD={}, KH={}, KW={}, SD={}, SH={}, SW={}, PD={}, PH={}, PW={}, DD={}, DH={}, DW={}".format(
                     *geometry[0], *geometry[1], *geometry[2], *geometry[3]),
                 f"BLOCK_O={4 * params['BLOCK_SIZE'] // block_w}, BLOCK_W={block_w}, "
                 f"num_warps={params['num_warps']}"])),
             f"return out.reshape(*lead, *out.shape[{1 + pad}:])"]
    return (f"def {p.kernel}_call(x):\n    \"\"\"{p.node.target} as one kernel launch.\"\"\"\n"
            f"{indent(chr(10).join(lines))}\n")


__all__ = ["POOLS", "Pool", "find_pools", "kernel_source", "wrapper_source"]
