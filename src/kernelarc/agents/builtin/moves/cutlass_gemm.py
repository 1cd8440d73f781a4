"""Architecture move `cutlass_gemm`: a 16-bit GEMM as a CUTLASS 3 Hopper kernel (TMA, wgmma, warp-specialized).

On the H200 the Triton templates reached 0.80-0.84x of cuBLAS on the 4096³ bf16 GEMM, and TunableOp
and cuBLASLt 0.91-0.92x (docs/benchmarks.md): Triton 3.6 does not warp-specialize on Hopper. The
fastest Hopper GEMMs are persistent and warp-specialized: a producer warp feeds shared memory
through TMA while consumer warpgroups issue wgmma on large tiles, thread-block clusters multicasting
the operands. CUTLASS's collective builders produce such a kernel from a tile shape, a cluster
shape and a schedule, so this family writes one per point and builds it with
`load_inline` (nvcc, `sm_90a`), the headers from the `nvidia-cutlass` package (its
`cutlass_library` ships them). Off the GPU the candidate runs the reference's own computation;
on a GPU other than sm_90 it refuses to build. KernelBench tasks only (SOL-ExecBench refuses C++
builds in Python solutions); the whole forward must be one 2-D GEMM without epilogue (cuBLASLt's
epilogue serves bias and activation, library_gemm). Budget: about 200 lines.
"""

from __future__ import annotations

import hashlib
import importlib.util
from typing import Any

from kernelarc.agents.builtin.moves import register_family
from kernelarc.agents.builtin.moves.base import Move, TaskAnalysis
from kernelarc.agents.builtin.moves.cuda_common import nvcc_reason
from kernelarc.agents.builtin.moves.facts import GemmFacts
from kernelarc.agents.builtin.moves.triton_common import next_power_of_2, read_facts
from kernelarc.agents.builtin.notation import claim_text, point_text
from kernelarc.agents.builtin.pytorch_source import EAGER_NAME, call_args, pytorch_module
from kernelarc.task.model import TaskFormat

ELEMENTS = {"bfloat16": "cutlass::bfloat16_t", "float16": "cutlass::half_t"}
ALIGNMENT = 8
"""Elements per 16-byte TMA access of a 16-bit type: every leading dimension must be a multiple."""
SCHEDULES = {
    "cooperative": ("cutlass::gemm::KernelTmaWarpSpecializedCooperative",
                    "cutlass::epilogue::TmaWarpSpecializedCooperative"),
    "pingpong": ("cutlass::gemm::KernelTmaWarpSpecializedPingpong", "cutlass::epilogue::TmaWarpSpecialized"),
}
"""Mainloop and epilogue schedule per point: two consumer warpgroups on one tile, or alternating tiles."""
POINTS = (
    {"tile": "256x128x64", "cluster": "2x1", "schedule": "cooperative", "raster": "AlongN"},
    {"tile": "128x256x64", "cluster": "1x2", "schedule": "cooperative"},
    {"tile": "256x128x64", "cluster": "1x2", "schedule": "cooperative", "raster": "AlongN"},
    {"tile": "128x256x64", "cluster": "1x2", "schedule": "cooperative", "raster": "AlongM"},
    {"tile": "256x128x64", "cluster": "1x2", "schedule": "cooperative"},
    {"tile": "128x256x64", "cluster": "2x1", "schedule": "cooperative"},
    {"tile": "256x128x64", "cluster": "2x1", "schedule": "cooperative", "swizzle": 4},
    {"tile": "256x128x64", "cluster": "2x1", "schedule": "cooperative"},
    {"tile": "128x256x64", "cluster": "1x2", "schedule": "cooperative", "swizzle": 4},
    {"tile": "128x128x64", "cluster": "2x1", "schedule": "pingpong"},
    {"tile": "128x256x64", "cluster": "1x1", "schedule": "cooperative", "scheduler": "streamk"},
    {"tile": "256x128x64", "cluster": "2x1", "schedule": "cooperative", "swizzle": 8, "raster": "AlongN"},
    {"tile": "64x256x64", "cluster": "2x1", "schedule": "pingpong"},
    {"tile": "128x128x64", "cluster": "1x2", "schedule": "cooperative"},
)
"""Tried in this order on GEMMs with more than SKINNY_M rows: the order the H200 ranked them on the bf16
4096³ GEMM (0.97x of cuBLAS down to 0.89x, one guard evaluation each, docs/benchmarks.md). cuBLAS runs
nvjet_sm90_tst_256x128_64x4_1x2 there (a 256x128x64 tile, 4 stages, 2-CTA clusters), so the first
points are the 256x128 and 128x256 cooperative tiles with 2-CTA clusters and each raster order; then
swizzled tile walks, stream-K (512 tiles of 4096³ fill 132 SMs 3.9 times) and smaller tiles. The
spread between neighbours (1-3%) is within the guard's noise on this GEMM (5-22%). Unnamed keys take
DEFAULTS."""
SKINNY_M = 64
SKINNY_POINTS = (
    {"tile": "128xNx128", "cluster": "1x1", "schedule": "cooperative", "scheduler": "streamk", "swap_ab": True},
    {"tile": "128xNx128", "cluster": "1x1", "schedule": "cooperative", "swap_ab": True},
    {"tile": "64xNx128", "cluster": "1x1", "schedule": "pingpong", "swap_ab": True},
    {"tile": "64xNx256", "cluster": "1x1", "schedule": "pingpong", "swap_ab": True},
)
"""Decode-sized GEMMs (M <= SKINNY_M): computed as C^T = B^T A^T so that the weight's N rows fill the
wgmma M side and the few rows of A the N side (N of the tile: M rounded up to a power of two, at
least 16). A 16-row GEMM otherwise leaves most of each 64-row wgmma empty."""
DEFAULTS = {"scheduler": "persistent", "swap_ab": False}
RASTERS = ("Heuristic", "AlongM", "AlongN")
"""The tile scheduler's raster orders (cutlass::gemm::kernel::detail::RasterOrderOptions); a point without
`raster` leaves it to the heuristic, one without `swizzle` walks tiles one by one."""
SCHEDULERS = {"persistent": "cutlass::gemm::PersistentScheduler", "streamk": "cutlass::gemm::StreamKScheduler"}


_CUDA = r"""
#include <cuda_runtime.h>
#include "cutlass/cutlass.h"
#include "cute/tensor.hpp"
#include "cutlass/gemm/dispatch_policy.hpp"
#include "cutlass/gemm/collective/collective_builder.hpp"
#include "cutlass/epilogue/collective/collective_builder.hpp"
#include "cutlass/gemm/device/gemm_universal_adapter.h"
#include "cutlass/gemm/kernel/gemm_universal.hpp"
#include "cutlass/util/packed_stride.hpp"

using namespace cute;

// Named, not anonymous: nvcc's host stub for device_kernel<Kernel> cannot tell an anonymous namespace
// here from cute's own (cute/atom/mma_traits_sm70.hpp), once `using namespace cute` is in scope.
namespace kernelarc_gemm {
using Element = ELEMENT;
using LayoutA = LAYOUT_A;
using LayoutB = LAYOUT_B;
using LayoutC = LAYOUT_C;
using TileShape = Shape<_TILE_M, _TILE_N, _TILE_K>;
using ClusterShape = Shape<_CLUSTER_M, _CLUSTER_N, _1>;

using Epilogue = typename cutlass::epilogue::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, TileShape, ClusterShape,
    cutlass::epilogue::collective::EpilogueTileAuto, float, float,
    Element, LayoutC, ALIGN, Element, LayoutC, ALIGN, EPILOGUE_SCHEDULE>::CollectiveOp;

using Mainloop = typename cutlass::gemm::collective::CollectiveBuilder<
    cutlass::arch::Sm90, cutlass::arch::OpClassTensorOp, Element, LayoutA, ALIGN, Element, LayoutB, ALIGN, float,
    TileShape, ClusterShape,
    cutlass::gemm::collective::StageCountAutoCarveout<static_cast<int>(sizeof(typename Epilogue::SharedStorage))>,
    MAINLOOP_SCHEDULE>::CollectiveOp;

using Kernel = cutlass::gemm::kernel::GemmUniversal<Shape<int, int, int, int>, Mainloop, Epilogue, TILE_SCHEDULER>;
using Gemm = cutlass::gemm::device::GemmUniversalAdapter<Kernel>;

// The current GPU's SM count and how many of this kernel's clusters fit on it at once (occupancy API),
// asked once per device. Without the cluster count the persistent scheduler sizes its grid from a
// GH100 floor-plan estimate (18 SMs per GPC), which CUTLASS flags as not optimal.
cutlass::KernelHardwareInfo hardware_info() {
    thread_local int device = -1;
    thread_local cutlass::KernelHardwareInfo info;
    int current = 0;
    cudaGetDevice(&current);
    if (current != device) {
        info = cutlass::KernelHardwareInfo::make_kernel_hardware_info<Kernel>(current);
        device = current;
    }
    return info;
}

typename Gemm::Arguments arguments(const void* a, const void* b, void* c, int m, int n, int k) {
    auto stride_a = cutlass::make_cute_packed_stride(typename Kernel::StrideA{}, make_shape(m, k, 1));
    auto stride_b = cutlass::make_cute_packed_stride(typename Kernel::StrideB{}, make_shape(n, k, 1));
    auto stride_c = cutlass::make_cute_packed_stride(typename Kernel::StrideC{}, make_shape(m, n, 1));
    auto stride_d = cutlass::make_cute_packed_stride(typename Kernel::StrideD{}, make_shape(m, n, 1));
    typename Gemm::Arguments args{cutlass::gemm::GemmUniversalMode::kGemm, {m, n, k, 1},
            {static_cast<const Element*>(a), stride_a, static_cast<const Element*>(b), stride_b},
            {{1.0f, 0.0f}, static_cast<const Element*>(c), stride_c, static_cast<Element*>(c), stride_d}};
    args.hw_info = hardware_info();
    args.scheduler.max_swizzle_size = SWIZZLE;  // tiles walked in groups of this many: L2 reuse of A and B
    args.scheduler.raster_order = cutlass::gemm::kernel::detail::RasterOrderOptions::RASTER;
    return args;
}
}  // namespace kernelarc_gemm

using kernelarc_gemm::Gemm;
using kernelarc_gemm::arguments;

size_t kernelarc_gemm_workspace(int m, int n, int k) {
    return Gemm::get_workspace_size(arguments(nullptr, nullptr, nullptr, m, n, k));
}

// 0 on success, else the cutlass::Status that stopped it.
int kernelarc_gemm_run(const void* a, const void* b, void* c, int m, int n, int k, void* workspace,
                       cudaStream_t stream) {
    Gemm gemm;
    auto args = arguments(a, b, c, m, n, k);
    cutlass::Status status = gemm.can_implement(args);
    if (status == cutlass::Status::kSuccess) status = gemm.initialize(args, workspace, stream);
    if (status == cutlass::Status::kSuccess) status = gemm.run(stream);
    return static_cast<int>(status);
}
"""

_CPP = r"""
#include <ATen/cuda/CUDAContext.h>

size_t kernelarc_gemm_workspace(int m, int n, int k);
int kernelarc_gemm_run(const void* a, const void* b, void* c, int m, int n, int k, void* workspace,
                       cudaStream_t stream);

at::Tensor gemm(const at::Tensor& a, const at::Tensor& b) {
    TORCH_CHECK(a.is_cuda() && b.is_cuda() && a.scalar_type() == b.scalar_type(), "CUDA operands of one dtype");
    const auto a2 = a.reshape({-1, a.size(-1)}).contiguous();
    const auto b2 = b.contiguous();
    const int m = a2.size(0), k = a2.size(1), n = B_COLUMNS;
    auto c = at::empty({m, n}, a.options());
    auto workspace = at::empty({static_cast<int64_t>(kernelarc_gemm_workspace(WORKSPACE_ARGS))},
                               a.options().dtype(at::kByte));
    const int status = kernelarc_gemm_run(RUN_ARGS, workspace.data_ptr(), at::cuda::getCurrentCUDAStream());
    TORCH_CHECK(status == 0, "CUTLASS GEMM refused or failed: cutlass::Status ", status);
    auto shape = a.sizes().vec();
    shape.back() = n;
    return c.view(shape);
}
"""

_BUILD = '''def _build():
    """The CUTLASS kernel on an sm_90 GPU; None without a GPU (the forward then runs the reference's
    computation). Needs nvcc and the `nvidia-cutlass` package's headers."""
    if not torch.cuda.is_available():
        return None
    if torch.cuda.get_device_capability() != (9, 0):
        raise RuntimeError("this kernel is built for sm_90a (Hopper), not this GPU")
    import cutlass_library

    root = Path(cutlass_library.__file__).parent / "source"
    return load_inline(name="{name}", cpp_sources=_CPP_SOURCE, cuda_sources=_CUDA_SOURCE, functions=["gemm"],
                       extra_cuda_cflags=["-O3", "--expt-relaxed-constexpr", "-DNDEBUG",
                                          "-gencode=arch=compute_90a,code=sm_90a"],
                       extra_include_paths=[str(root / "include"), str(root / "tools" / "util" / "include")]).gemm


_gemm = _build()
'''
_IMPORTS = "from pathlib import Path\n\nfrom torch.utils.cpp_extension import load_inline\n"


def point(params: dict[str, Any], m: int) -> dict[str, Any]:
    """`params` with DEFAULTS filled in and a swapped tile's N set from the GEMM's M rows."""
    full = {**DEFAULTS, **params}
    full["tile"] = full["tile"].replace("N", str(max(16, next_power_of_2(m))))
    return full


def cuda_source(facts: GemmFacts, params: dict[str, Any]) -> str:
    """The CUDA translation unit (no torch headers) for one point.

    CUTLASS sees A as M x K, B as N x K and C as M x N, each row- or column-major. Unswapped, A is the
    task's A (K contiguous: RowMajor), B its weight ([N, K] stored is K-major: ColumnMajor; [K, N] is
    N-major: RowMajor), C row-major. Swapped, A is the weight ([N, K]: RowMajor; [K, N]: ColumnMajor),
    B the task's A (K contiguous: ColumnMajor) and C the transposed result (ColumnMajor).
    """
    params = point(params, facts.M)
    swizzle, raster = int(params.get("swizzle", 1)), params.get("raster", "Heuristic")
    if raster not in RASTERS:
        raise ValueError(f"raster order {raster!r} is not one of {RASTERS}")
    mainloop, epilogue = SCHEDULES[params["schedule"]]
    tile_m, tile_n, tile_k = params["tile"].split("x")
    cluster_m, cluster_n = params["cluster"].split("x")
    row, col = "cutlass::layout::RowMajor", "cutlass::layout::ColumnMajor"
    weight_k_major = facts.b_layout == "nk"
    if params["swap_ab"]:
        layouts = (row if weight_k_major else col, col, col)
    else:
        layouts = (row, col if weight_k_major else row, row)
    source = _CUDA
    for key, value in (("ELEMENT", ELEMENTS[facts.dtype]), ("LAYOUT_A", layouts[0]), ("LAYOUT_B", layouts[1]),
                       ("LAYOUT_C", layouts[2]), ("TILE_SCHEDULER", SCHEDULERS[params["scheduler"]]),
                       ("TILE_M", tile_m), ("TILE_N", tile_n), ("TILE_K", tile_k), ("CLUSTER_M", cluster_m),
                       ("CLUSTER_N", cluster_n), ("ALIGN", ALIGNMENT), ("EPILOGUE_SCHEDULE", epilogue),
                       ("MAINLOOP_SCHEDULE", mainloop), ("SWIZZLE", swizzle),
                       ("RASTER", raster)):
        source = source.replace(key, str(value))
    return source


def cpp_source(facts: GemmFacts, params: dict[str, Any]) -> str:
    """The torch-side wrapper: shapes, output, workspace, stream; a swapped point passes the operands
    and M, N exchanged (C^T = B^T A^T), its column-major C^T being the row-major C."""
    swapped = point(params, facts.M)["swap_ab"]
    run = ("b2.data_ptr(), a2.data_ptr(), c.data_ptr(), n, m, k" if swapped
           else "a2.data_ptr(), b2.data_ptr(), c.data_ptr(), m, n, k")
    workspace = "n, m, k" if swapped else "m, n, k"
    return (_CPP.replace("B_COLUMNS", "b2.size(0)" if facts.b_layout == "nk" else "b2.size(1)")
            .replace("RUN_ARGS", run).replace("WORKSPACE_ARGS", workspace))


def _hopper_reason() -> str | None:
    """None on a machine whose first GPU is sm_90; the candidate builds only there (off the GPU it would
    run the reference's computation, a wasted candidate)."""
    import torch

    if not torch.cuda.is_available():
        return "needs an sm_90 GPU (Hopper): no CUDA device is visible"
    major, minor = torch.cuda.get_device_capability()
    return nvcc_reason() if (major, minor) == (9, 0) else f"needs an sm_90 GPU (Hopper), not sm_{major}{minor}"


class CutlassGemm:
    """A Hopper GEMM from CUTLASS 3's collective builders, one tile/cluster/schedule per point."""

    name = "cutlass_gemm"
    strategy = "arch"
    language = "cuda_cpp"
    gpu_only = True
    slow_to_judge = True
    """nvcc compiles one CUTLASS kernel per candidate (about a minute)."""

    def facts(self, analysis: TaskAnalysis) -> tuple[GemmFacts | None, str | None]:
        facts, reason = read_facts(analysis, "gemm", GemmFacts.parse)
        if facts is None:
            return None, reason
        if facts.dtype not in ELEMENTS:
            return None, f"{facts.dtype} GEMM: this template is for 16-bit operands (wgmma bf16/fp16)"
        if facts.epilogue:
            return None, "the GEMM has an epilogue: this template fuses none (library_gemm's cuBLASLt epilogue does)"
        if facts.N % ALIGNMENT or facts.K % ALIGNMENT:
            return None, f"N={facts.N}, K={facts.K}: TMA needs leading dimensions that are multiples of {ALIGNMENT}"
        return facts, None

    def applies(self, analysis: TaskAnalysis) -> str | None:
        if analysis.task.format is not TaskFormat.KERNELBENCH:
            return "SOL-ExecBench refuses C++ builds inside Python solutions"
        if importlib.util.find_spec("cutlass_library") is None:
            return "the CUTLASS headers are missing (pip install nvidia-cutlass)"
        reason = self.facts(analysis)[1]
        return reason or _hopper_reason()

    def space(self, analysis: TaskAnalysis) -> list[dict[str, Any]]:
        facts = self.facts(analysis)[0]
        if facts is None:
            return []
        return [point(p, facts.M) for p in (SKINNY_POINTS if facts.M <= SKINNY_M else POINTS)]

    def render(self, analysis: TaskAnalysis, params: dict[str, Any]) -> Move:
        facts, reason = self.facts(analysis)
        if facts is None:
            raise ValueError(f"{self.name} cannot render: {reason}")
        cuda, cpp = cuda_source(facts, params), cpp_source(facts, params)
        name = "kernelarc_cutlass_gemm_" + hashlib.sha256((cuda + cpp).encode()).hexdigest()[:12]
        full = point(params, facts.M)
        what = (f"CUTLASS Hopper GEMM {full['tile']}, cluster {full['cluster']}, {full['schedule']}"
                + (", stream-K" if full["scheduler"] == "streamk" else "") + (", swap AB" if full["swap_ab"] else "")
                + (f", swizzle {full['swizzle']}" if full.get("swizzle", 1) > 1 else "")
                + (f", raster {full['raster']}" if full.get("raster", "Heuristic") != "Heuristic" else "")
                + ", TMA + wgmma")
        doc = (f"{what} {point_text(self.name, params)}.\n\nC = {facts.formula}, M={facts.M} N={facts.N} "
               f"K={facts.K} {facts.dtype}. Generated by kernelarc's built-in arch agent for {analysis.task.name}; "
               "built when imported on an sm_90 GPU (nvcc and the nvidia-cutlass package's headers).")
        helpers = (f'_CUDA_SOURCE = r"""{cuda}"""\n\n_CPP_SOURCE = r"""{cpp}"""\n\n\n'
                   + _BUILD.format(name=name))
        args = call_args(analysis)
        eager = f"self.{EAGER_NAME}({args})"
        body = (f"if _gemm is None or not {facts.a}.is_cuda:  # off the GPU: the reference's computation\n"
                f"    return {eager}\nreturn _gemm({facts.a}, {facts.b})")
        source = pytorch_module(analysis, doc=doc, body=body, helpers=helpers, imports=_IMPORTS, with_eager=True)
        return Move(family=self.name, params=dict(params), source=source, claim=claim_text(self.name, params, what))


register_family(CutlassGemm())

__all__ = ["CutlassGemm", "POINTS", "SKINNY_POINTS", "cpp_source", "cuda_source", "point"]
