"""Triton GEMM templates: C = epilogue(A @ B) with the analysis' pointwise chain fused before the store.

Five families share one renderer, each a variant serving one strategy:
- `triton_gemm` (tensor_cores): tiled, GROUP_M-swizzled tiles, fp32 accumulation.
- `triton_gemm_epilogue` (fusion): the same kernel, offered only when there is an epilogue to fuse.
- `triton_gemm_persistent` (scheduling): one program per SM looping over tiles with `tl.range`.
- `triton_gemm_tma` (arch): operands through Hopper TMA descriptors (`tl.make_tensor_descriptor`),
  fp16/bf16 with dims that are multiples of 16.
- `triton_gemm_splitk` (reduction): K split across programs for skinny GEMMs (small M, large K), a
  deterministic second kernel sums the fp32 partials and applies the epilogue.

Reads `facts["gemm"]` (see `GemmFacts`). Imports neither torch nor triton. Budget: 450 lines.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from functools import partial
from typing import Any, ClassVar

from kernelarc.agents.builtin.moves import register_family
from kernelarc.agents.builtin.moves.base import Move, TaskAnalysis
from kernelarc.agents.builtin.moves.emit import indent, jit_kernel, launch, module_source
from kernelarc.agents.builtin.moves.facts import GemmFacts
from kernelarc.agents.builtin.moves.triton_common import (
    LOW_PRECISION,
    TemplateFacts,
    claim,
    dedupe,
    describe_params,
    elem_bytes,
    launch_keywords,
    next_power_of_2,
    operand_names,
)

SPLIT_K_MAX_M = 64
"""Split-K applies to GEMMs with at most this many rows: too few output tiles to fill the GPU."""
SPLIT_K_MIN_K = 256
"""... and at least this much K (and 8 x M): enough reduction work to share out."""
TMA_MULTIPLE = 16
"""TMA needs 16-byte aligned rows; dims that are multiples of 16 satisfy it for every dtype."""

# (BLOCK_M, BLOCK_N, BLOCK_K, GROUP_M, num_warps, num_stages), most promising first. For 16-bit
# operands 128x256x64 leads: on gemm_bf16_4096 on the H200 it ran at 0.80-0.82x cuBLAS in three runs,
# 128x128x64 and 256x128x64 at 0.66-0.70x (docs/benchmarks.md).
TILES_LOW_PRECISION = [
    (128, 256, 64, 8, 8, 3), (128, 128, 64, 8, 8, 3), (256, 128, 64, 8, 8, 3), (128, 256, 64, 8, 8, 4),
    (128, 128, 64, 8, 4, 4), (64, 256, 32, 8, 4, 4), (128, 64, 32, 8, 4, 4), (64, 128, 32, 8, 4, 4),
    (64, 64, 64, 8, 4, 4), (128, 128, 128, 8, 8, 4), (64, 32, 32, 8, 2, 5),
]
TILES_FP32 = [
    (64, 64, 32, 8, 4, 3), (128, 64, 32, 8, 4, 3), (64, 128, 32, 8, 4, 3), (128, 128, 32, 8, 8, 3),
    (32, 64, 32, 8, 4, 4), (128, 128, 64, 8, 8, 4), (32, 32, 32, 8, 2, 3),
]
# (BLOCK_M, BLOCK_N, BLOCK_K, SPLIT_K, num_warps, num_stages) for skinny shapes.
TILES_SPLIT_K = [
    (16, 64, 128, 8, 4, 3), (16, 128, 64, 4, 4, 4), (32, 64, 64, 8, 4, 3), (16, 64, 64, 16, 4, 3),
    (64, 64, 64, 4, 4, 3), (16, 32, 128, 2, 2, 3),
]


class GemmVariant(str, Enum):
    """How the tiles are scheduled and loaded."""

    TILED = "tiled"
    """One program per output tile, grouped (swizzled) launch order."""
    PERSISTENT = "persistent"
    """One program per SM, each looping over tiles."""
    TMA = "tma"
    """Tiled, operands loaded through TMA descriptors (Hopper)."""
    SPLIT_K = "split_k"
    """K shared out across programs, fp32 partials summed by a second kernel."""


GEMM_NAMES = ("a", "b", "c", "ws")
"""Names the GEMM kernel and wrapper use themselves, so no epilogue operand takes them."""


def _kernel_operand_args(facts: GemmFacts) -> list[str]:
    """Kernel parameters for the epilogue's tensor operands: pointer, then strides for full tiles."""
    tensors = [s for s in facts.epilogue if s.tensor]
    return [f"{name}_ptr, stride_{name}m, stride_{name}n," if step.broadcast == "full" else f"{name}_ptr,"
            for step, name in zip(tensors, operand_names(facts.epilogue, GEMM_NAMES))]


def _launch_operand_args(facts: GemmFacts) -> list[str]:
    """Launch arguments matching `_kernel_operand_args` (full operands are flattened to [M, N])."""
    tensors = [s for s in facts.epilogue if s.tensor]
    return [f"{name}, {name}.stride(0), {name}.stride(1)" if step.broadcast == "full" else name
            for step, name in zip(tensors, operand_names(facts.epilogue, GEMM_NAMES))]


def epilogue_source(facts: GemmFacts) -> str:
    """Lines that apply the epilogue to `accumulator` (fp32) and store tile (pid_m, pid_n) of C once."""
    lines = [
        "offs_cm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)",
        "offs_cn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)",
        "c_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)",
    ]
    names = iter(operand_names(facts.epilogue, GEMM_NAMES))
    for step in facts.epilogue:
        operand = None
        if step.tensor:
            name = next(names)
            if step.broadcast == "row":
                lines.append(f"{name} = tl.load({name}_ptr + offs_cn, mask=offs_cn < N, other=0.0).to(tl.float32)")
                operand = f"{name}[None, :]"
            else:
                lines.append(f"{name} = tl.load({name}_ptr + offs_cm[:, None] * stride_{name}m"
                             f" + offs_cn[None, :] * stride_{name}n, mask=c_mask, other=0.0).to(tl.float32)")
                operand = name
        lines.append(f"accumulator = {step.expression('accumulator', operand)}  # {step.describe()}")
    lines += [
        "c_ptrs = c_ptr + offs_cm[:, None] * stride_cm + offs_cn[None, :] * stride_cn",
        "tl.store(c_ptrs, accumulator.to(c_ptr.dtype.element_ty), mask=c_mask)",
    ]
    return "\n".join(lines)


def dot_source(dtype: str, params: dict[str, Any], b: str = "b", acc: str = "accumulator") -> str:
    """`acc += a @ b` with `tl.dot` in fp32; fp32 operands use IEEE products unless the point asks for tf32."""
    if dtype in LOW_PRECISION:
        return f"{acc} = tl.dot(a, {b}, {acc})"
    return f'{acc} = tl.dot(a, {b}, {acc}, input_precision="{params.get("precision", "ieee")}")'


def mainloop_source(facts: GemmFacts, params: dict[str, Any], variant: GemmVariant) -> str:
    """Lines that leave A[pid_m tile] @ B[:, pid_n tile] (or this split's share of K) in `accumulator`."""
    head = ["accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)"]
    if variant is GemmVariant.TMA:
        b_block = ("[N, K], strides=[stride_bn, 1], block_shape=[BLOCK_N, BLOCK_K]" if facts.b_layout == "nk"
                   else "[K, N], strides=[stride_bk, 1], block_shape=[BLOCK_K, BLOCK_N]")
        b_at = "[pid_n * BLOCK_N, k * BLOCK_K]" if facts.b_layout == "nk" else "[k * BLOCK_K, pid_n * BLOCK_N]"
        return "\n".join([
            "a_desc = tl.make_tensor_descriptor(a_ptr, shape=[M, K], strides=[stride_am, 1], "
            "block_shape=[BLOCK_M, BLOCK_K])",
            f"b_desc = tl.make_tensor_descriptor(b_ptr, shape={b_block})",
            *head,
            "for k in range(0, tl.cdiv(K, BLOCK_K)):",
            "    a = a_desc.load([pid_m * BLOCK_M, k * BLOCK_K])  # out of bounds reads as 0",
            f"    b = b_desc.load({b_at})",
            "    " + dot_source(facts.dtype, params, "b.T" if facts.b_layout == "nk" else "b"),
        ])
    split = variant is GemmVariant.SPLIT_K
    offs_k = "(k_first * BLOCK_K + offs_k{})" if split else "offs_k{}"
    lines = [
        "offs_am = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)",
        "offs_bn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)",
        "offs_k = tl.arange(0, BLOCK_K)",
    ]
    if split:
        lines += ["k_tiles = tl.cdiv(tl.cdiv(K, BLOCK_K), SPLIT_K)  # K tiles per split",
                  "k_first = pid_k * k_tiles"]
    else:
        lines.append("k_tiles = tl.cdiv(K, BLOCK_K)")
    lines += [
        f"a_ptrs = a_ptr + offs_am[:, None] * stride_am + {offs_k.format('[None, :]')}.to(tl.int64) * stride_ak",
        f"b_ptrs = b_ptr + {offs_k.format('[:, None]')}.to(tl.int64) * stride_bk + offs_bn[None, :] * stride_bn",
        *head,
        "for k in range(0, k_tiles):",
        f"    k_remaining = K - {'(k_first + k)' if split else 'k'} * BLOCK_K",
        "    a_mask = (offs_am[:, None] < M) & (offs_k[None, :] < k_remaining)",
        "    b_mask = (offs_k[:, None] < k_remaining) & (offs_bn[None, :] < N)",
        "    a = tl.load(a_ptrs, mask=a_mask, other=0.0)",
        "    b = tl.load(b_ptrs, mask=b_mask, other=0.0)",
        "    " + dot_source(facts.dtype, params),
        "    a_ptrs += BLOCK_K * stride_ak",
        "    b_ptrs += BLOCK_K * stride_bk",
    ]
    return "\n".join(lines)


TILE_COORDS = '''@triton.jit
def _tile_coords(tile_id, M, N, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, GROUP_M: tl.constexpr):
    """(pid_m, pid_n) of a tile in grouped order: GROUP_M row tiles sweep the columns together, so the
    B tiles they share are still in L2."""
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    num_pid_in_group = GROUP_M * num_pid_n
    first_pid_m = (tile_id // num_pid_in_group) * GROUP_M
    group_size_m = tl.minimum(num_pid_m - first_pid_m, GROUP_M)
    pid_m = first_pid_m + (tile_id % num_pid_in_group) % group_size_m
    pid_n = (tile_id % num_pid_in_group) // group_size_m
    return pid_m, pid_n
'''

NUM_SMS = '''def _num_sms(device: torch.device) -> int:
    """Programs of the persistent grid: the SM count (2 on the CPU, where Triton is interpreted)."""
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return 2
'''

TMA_SCRATCH = '''def _tma_scratch(size: int, alignment: int, stream):
    """Global memory Triton asks for when a kernel builds TMA descriptors on the device."""
    return torch.empty(size, device="cuda", dtype=torch.int8)
'''

_AB_ARGS = ["a_ptr, stride_am, stride_ak,", "b_ptr, stride_bk, stride_bn,"]
_TILE_ARGS = "BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr,"
TILE_OF_PROGRAM = "pid_m, pid_n = _tile_coords(tl.program_id(0), M, N, BLOCK_M, BLOCK_N, GROUP_M)"
_WS_ARGS = "ws_ptr, stride_wsk, stride_wsm, stride_wsn,"
_SPLITK_PARTIAL = """offs_cm = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
offs_cn = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)
ws_mask = (offs_cm[:, None] < M) & (offs_cn[None, :] < N)
ws_ptrs = ws_ptr + pid_k * stride_wsk + offs_cm[:, None] * stride_wsm + offs_cn[None, :] * stride_wsn
tl.store(ws_ptrs, accumulator, mask=ws_mask)"""
_SPLITK_SUM = """pid_m = tl.program_id(0)
pid_n = tl.program_id(1)
offs_m = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
offs_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)
ws_mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
ws_ptrs = ws_ptr + offs_m[:, None] * stride_wsm + offs_n[None, :] * stride_wsn
accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
for split in tl.static_range(SPLIT_K):  # fixed order: deterministic sums
    accumulator += tl.load(ws_ptrs + split * stride_wsk, mask=ws_mask, other=0.0)"""


def kernels_source(facts: GemmFacts, params: dict[str, Any], variant: GemmVariant) -> str:
    """The `@triton.jit` kernels of one variant."""
    doc = f"C = {facts.formula}, tile by tile; fp32 accumulation, one cast at the store."
    operands = _kernel_operand_args(facts)
    mainloop, epilogue = mainloop_source(facts, params, variant), epilogue_source(facts)
    if variant is GemmVariant.SPLIT_K:
        coords = f"{TILE_OF_PROGRAM}\npid_k = tl.program_id(1)"
        partial = jit_kernel("_gemm_splitk_kernel", [_WS_ARGS, *_AB_ARGS, "M, N, K,",
                                                     _TILE_ARGS + " SPLIT_K: tl.constexpr,"],
                             "Partial sums of A @ B over split pid_k's share of K, in fp32, into ws[pid_k].",
                             f"{coords}\n{mainloop}\n{_SPLITK_PARTIAL}")
        finish = jit_kernel("_splitk_reduce_kernel", ["c_ptr, stride_cm, stride_cn,", _WS_ARGS, *operands, "M, N,",
                                                      "BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, "
                                                      "SPLIT_K: tl.constexpr,"],
                            doc, f"{_SPLITK_SUM}\n{epilogue}")
        return f"{partial}\n\n{finish}"
    if variant is GemmVariant.PERSISTENT:
        body = ("num_tiles = tl.cdiv(M, BLOCK_M) * tl.cdiv(N, BLOCK_N)\n"
                "for tile_id in tl.range(tl.program_id(0), num_tiles, tl.num_programs(0)):\n"
                "    pid_m, pid_n = _tile_coords(tile_id, M, N, BLOCK_M, BLOCK_N, GROUP_M)\n"
                f"{indent(mainloop)}\n{indent(epilogue)}")
    else:
        body = f"{TILE_OF_PROGRAM}\n{mainloop}\n{epilogue}"
    return jit_kernel("_gemm_kernel", ["c_ptr, stride_cm, stride_cn,", *_AB_ARGS, *operands, "M, N, K,", _TILE_ARGS],
                      doc, body)


def wrapper_source(facts: GemmFacts, params: dict[str, Any], variant: GemmVariant) -> str:
    """The host function `gemm(a, b, <operands>)`: check, allocate, launch."""
    names = operand_names(facts.epilogue, GEMM_NAMES)
    tensors = [s for s in facts.epilogue if s.tensor]
    n_of_b, b_k, b_strides = (("b.shape[0]", "b.shape[1]", "b.stride(1), b.stride(0)") if facts.b_layout == "nk"
                              else ("b.shape[1]", "b.shape[0]", "b.stride(0), b.stride(1)"))
    contiguous = ".contiguous()" if variant is GemmVariant.TMA else ""
    lines = [
        "a = a.t()  # stored [K, M]: read through its strides, not copied" if facts.a_layout == "km" else "",
        f"a2 = a.reshape(-1, a.shape[-1]){contiguous}",
        f"b = b{contiguous}" if contiguous else "",
        "M, K = a2.shape",
        f"N = {n_of_b}",
        f"if {b_k} != K:",
        f'    raise ValueError(f"gemm: A is {{tuple(a.shape)}} but B is {{tuple(b.shape)}} ({facts.b_layout} layout)")',
        *[f"{n} = {n}.reshape(M, N)" for s, n in zip(tensors, names) if s.broadcast == "full"],
        "c = torch.empty((M, N), device=a.device, dtype=a.dtype)",
    ]
    ab = ["a2, a2.stride(0), a2.stride(1)", f"b, {b_strides}"]
    m, n = params["BLOCK_M"], params["BLOCK_N"]
    tiles = f"triton.cdiv(M, {m}) * triton.cdiv(N, {n})"
    keywords = launch_keywords({k: v for k, v in params.items() if k != "precision"})
    if variant is GemmVariant.SPLIT_K:
        split = params["SPLIT_K"]
        finish = launch_keywords({"BLOCK_M": m, "BLOCK_N": n, "SPLIT_K": split, "num_warps": params["num_warps"]})
        ws = "ws, ws.stride(0), ws.stride(1), ws.stride(2)"
        lines += [f"ws = torch.empty(({split}, M, N), device=a.device, dtype=torch.float32)",
                  launch("_gemm_splitk_kernel", f"({tiles}, {split})", [ws, *ab, "M, N, K", keywords]),
                  launch("_splitk_reduce_kernel", f"(triton.cdiv(M, {m}), triton.cdiv(N, {n}))",
                         ["c, c.stride(0), c.stride(1)", ws, *_launch_operand_args(facts), "M, N", finish])]
    else:
        grid = f"(min(_num_sms(a.device), {tiles}),)" if variant is GemmVariant.PERSISTENT else f"({tiles},)"
        if variant is GemmVariant.TMA:
            lines.append("triton.set_allocator(_tma_scratch)")
        lines.append(launch("_gemm_kernel", grid, ["c, c.stride(0), c.stride(1)", *ab, *_launch_operand_args(facts),
                                                   "M, N, K", keywords]))
    lines.append("return c.reshape(*a.shape[:-1], N)")
    args = ", ".join(["a", "b", *names])
    doc = (f'"""C = {facts.formula} for A {"[K, M]" if facts.a_layout == "km" else "[..., K]"} and B '
           f'{"[N, K]" if facts.b_layout == "nk" else "[K, N]"}; '
           f'one {variant.value} launch."""')
    return f"def gemm({args}):\n    {doc}\n" + indent("\n".join(line for line in lines if line)) + "\n"


def tile_points(facts: GemmFacts, variant: GemmVariant) -> list[dict[str, Any]]:
    """The variant's tile points for this GEMM, most promising first, capped at the problem's dims."""
    cap_m, cap_n, cap_k = (max(16, next_power_of_2(d)) for d in (facts.M, facts.N, facts.K))
    points = []
    if variant is GemmVariant.SPLIT_K:
        for m, n, k, s, w, st in TILES_SPLIT_K:
            bk = min(k, cap_k)
            split = max(1, min(s, -(-facts.K // bk)))
            points.append(dict(BLOCK_M=min(m, cap_m), BLOCK_N=min(n, cap_n), BLOCK_K=bk, GROUP_M=8,
                               SPLIT_K=split, num_warps=w, num_stages=st))
    else:
        table = TILES_LOW_PRECISION if facts.dtype in LOW_PRECISION else TILES_FP32
        for m, n, k, g, w, st in table:
            points.append(dict(BLOCK_M=min(m, cap_m), BLOCK_N=min(n, cap_n), BLOCK_K=min(k, cap_k), GROUP_M=g,
                               num_warps=w, num_stages=st))
    if facts.dtype not in LOW_PRECISION:
        points = [dict(p, precision="ieee") for p in points] + [dict(points[0], precision="tf32")]
    return dedupe(points)


def smem_bytes(params: dict[str, Any], dtype: str) -> int:
    """Shared memory one block of a tile point needs: the A and B tiles of every pipeline stage.

    Compare with `triton_common.SMEM_PER_BLOCK_BYTES` (H200: 227 KiB) before trying a point.
    """
    tile = params["BLOCK_M"] * params["BLOCK_K"] + params["BLOCK_K"] * params["BLOCK_N"]
    return tile * elem_bytes(dtype) * params["num_stages"]


@dataclass(frozen=True)
class TritonGemmFamily(TemplateFacts):
    """A Triton GEMM template variant bound to one strategy."""

    name: str
    """Registered family id."""
    strategy: str
    """The catalogue strategy it serves."""
    variant: GemmVariant
    """Which kernel shape it writes."""
    needs_epilogue: bool = False
    """Only offered when the analysis found pointwise ops to fuse after the product."""
    language: str = "triton"

    FACT_KEY: ClassVar[str] = "gemm"
    PARSE: ClassVar = partial(GemmFacts.parse, transposed_a=True)

    @property
    def gpu_only(self) -> bool:
        """TMA descriptors are a Hopper unit: the interpreter's run of them says nothing of it."""
        return self.variant is GemmVariant.TMA

    def applies(self, analysis: TaskAnalysis) -> str | None:
        facts, reason = self.facts(analysis)
        if facts is None:
            return reason
        if self.needs_epilogue and not facts.epilogue:
            return "the GEMM has no epilogue (bias, activation, scaling, residual) to fuse"
        if self.variant is GemmVariant.TMA:
            if facts.a_layout == "km":
                return "TMA reads A K-major: a transposed A would be copied first"
            if facts.dtype not in LOW_PRECISION:
                return f"TMA template is for fp16/bf16 operands, got {facts.dtype}"
            if any(d % TMA_MULTIPLE for d in (facts.M, facts.N, facts.K)):
                return f"TMA needs M, N, K multiples of {TMA_MULTIPLE}, got {facts.M}x{facts.N}x{facts.K}"
        if self.variant is GemmVariant.SPLIT_K and not (
                facts.M <= SPLIT_K_MAX_M and facts.K >= max(SPLIT_K_MIN_K, 8 * facts.M)):
            return (f"split-K is for skinny GEMMs (M <= {SPLIT_K_MAX_M}, K >= max({SPLIT_K_MIN_K}, 8M)), "
                    f"got M={facts.M} K={facts.K}")
        return None

    def space(self, analysis: TaskAnalysis) -> list[dict[str, Any]]:
        facts, _ = self.facts(analysis)
        return tile_points(facts, self.variant) if facts is not None else []

    def resources(self, params: dict[str, Any], analysis: TaskAnalysis | None = None) -> int:
        """Shared memory bytes one block needs (see `smem_bytes`); without the analysis the element size
        is taken as 4 bytes, an upper bound."""
        facts = self.facts(analysis)[0] if analysis is not None else None
        return smem_bytes(params, facts.dtype if facts else "float32")

    def render(self, analysis: TaskAnalysis, params: dict[str, Any]) -> Move:
        facts, reason = self.facts(analysis)
        if facts is None:
            raise ValueError(f"{self.name} cannot render: {reason}")
        helpers = [TILE_COORDS]
        if self.variant is GemmVariant.PERSISTENT:
            helpers.append(NUM_SMS)
        if self.variant is GemmVariant.TMA:
            helpers.append(TMA_SCRATCH)
        body = "\n\n".join([*helpers, kernels_source(facts, params, self.variant),
                            wrapper_source(facts, params, self.variant)])
        elem = elem_bytes(facts.dtype)
        operand_bytes = sum(facts.N if s.broadcast == "row" else facts.M * facts.N
                            for s in facts.epilogue if s.tensor) * elem
        moved = (facts.M * facts.K + facts.K * facts.N + facts.M * facts.N) * elem + operand_bytes
        doc = (f"Triton GEMM ({self.variant.value}) with the epilogue fused: C = {facts.formula}.\n\n"
               f"M={facts.M} N={facts.N} K={facts.K} {facts.dtype}: {2 * facts.M * facts.N * facts.K} FLOPs, "
               f"{moved} bytes at least.\nPoint: {describe_params(params)}. Generated by kernelarc ({self.name}).")
        b, operands = facts.b, [s.tensor for s in facts.epilogue if s.tensor]
        call = f"gemm({', '.join([facts.a, b, *operands])})"
        source = module_source(analysis, doc=doc, body=body, call=call)
        fused = ", ".join(s.describe() for s in facts.epilogue) or "no epilogue"
        text = (f"Triton {self.variant.value} GEMM {params['BLOCK_M']}x{params['BLOCK_N']}x{params['BLOCK_K']} "
                f"w{params['num_warps']} s{params['num_stages']}, fused {fused}: one pass over C")
        return Move(family=self.name, params=dict(params), source=source, claim=claim(text))


FAMILIES = tuple(register_family(f) for f in (
    TritonGemmFamily("triton_gemm", "tensor_cores", GemmVariant.TILED),
    TritonGemmFamily("triton_gemm_epilogue", "fusion", GemmVariant.TILED, needs_epilogue=True),
    TritonGemmFamily("triton_gemm_persistent", "scheduling", GemmVariant.PERSISTENT),
    TritonGemmFamily("triton_gemm_tma", "arch", GemmVariant.TMA),
    TritonGemmFamily("triton_gemm_splitk", "reduction", GemmVariant.SPLIT_K),
))
"""The registered GEMM families."""

__all__ = ["FAMILIES", "GemmVariant", "TILE_COORDS", "TILE_OF_PROGRAM", "TritonGemmFamily", "dot_source",
           "epilogue_source", "kernels_source", "mainloop_source", "smem_bytes", "tile_points", "wrapper_source"]
