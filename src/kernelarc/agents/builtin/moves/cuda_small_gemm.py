"""Fusion move `cuda_small_gemm`: a launch-bound GEMM with few rows and its epilogue (bias, activation,
scaling, residual) as one CUDA kernel launched from C++.

Why: on the H200 mlp_relu_small (32 x 1024 x 1024 fp32, bias and ReLU) stopped at about 20 µs a call
with the cuBLASLt epilogue called from C++ (docs/benchmarks.md, session 5), against a few µs of GPU
work: the call still pays ATen's dispatcher, and PyTorch's cuBLASLt path builds descriptors and asks
for a heuristic on every call. A plain kernel launched from C++ pays one launch: 2.3x over eager in
its own evaluation, 3.4x in run 7 (session 6).

How: each warp owns NR output columns and MR rows and walks K in lane-strided steps, each lane
reading a 16-byte run of each row of A and B (the warp reads 512 consecutive bytes: coalesced, and
few load instructions; a scalar build of the same kernel serves a K or an address that does not
divide into runs). It keeps the MR x NR partial dot products in registers, reduces them across lanes
with shuffles, and applies the epilogue once per output. fp32 FMAs, no tensor cores: for these
shapes the work is a few million FMAs and the cost is the launch. The epilogue is one C++ function
shared with a serial CPU fallback, so the guard checks its maths off the GPU (CI). B must be
nn.Linear's [N, K] layout; KernelBench tasks only (SOL-ExecBench refuses C++ builds in Python
solutions). Budget: 270 lines.
"""

from __future__ import annotations

from typing import Any

import torch

from kernelarc.agents.builtin.moves import register_family
from kernelarc.agents.builtin.moves.base import Move, TaskAnalysis
from kernelarc.agents.builtin.moves.cuda_common import (
    CPP_TYPES, CUDA_HEAD, HOST_HEAD, TORCH_TYPES, OneKernelFamily, contiguous_inputs, extension_module, indent,
    step_expression, unreadable,
)
from kernelarc.agents.builtin.moves.triton_common import claim, next_power_of_2, operand_names, read_facts
from kernelarc.agents.builtin.moves.facts import GemmFacts, value_dtype
from kernelarc.agents.builtin.moves.triton_gemm import GEMM_NAMES
from kernelarc.agents.builtin.notation import point_text

MAX_M = 64
"""Rows of A this kernel serves: decode and small-batch shapes. Larger GEMMs belong to tensor cores."""
MAX_FMAS = 1 << 27
"""M x N x K at most this (134M FMAs, about 2 µs of the H200's fp32 FMA rate): above it the FMAs, not the
launch, are the cost (gemm_decode_skinny: 940M, memory-bound on its 117 MB weight: tensor-core territory)."""


def _operands(facts: GemmFacts, analysis: TaskAnalysis) -> list[tuple[str, str, str]]:
    """(kernel name, source expression, dtype) of every tensor the kernel reads: A, B, then epilogue operands."""
    names = iter(operand_names(facts.epilogue, GEMM_NAMES))
    refs = [("a", facts.a), ("b", facts.b), *((next(names), s.tensor) for s in facts.epilogue if s.tensor)]
    return [(name, ref, value_dtype(analysis, ref)) for name, ref in refs]


def gemm_source(facts: GemmFacts, analysis: TaskAnalysis) -> str:
    """The argument struct and the epilogue, compiled by both builds (`KA_FN`: nothing or __device__)."""
    inputs = _operands(facts, analysis)
    fields = [f"const {CPP_TYPES[dtype]}* {name};" for name, _, dtype in inputs]
    fields += [f"{CPP_TYPES[facts.dtype]}* c;", "int64_t m, n, k;"]
    names = iter(name for name, _, _ in inputs[2:])
    lines = []
    for step in facts.epilogue:
        operand = None
        if step.tensor:
            at = "n" if step.broadcast == "row" else "m * g.n + n"
            operand = f"static_cast<float>(g.{next(names)}[{at}])"
        lines.append(f"y = {step_expression(step, 'y', operand)};  // {step.describe()}")
    return f"""struct GemmArgs {{
{indent(chr(10).join(fields))}
}};

namespace {{
// C[m, n] = {facts.formula}, from the fp32 dot product `y` of row m of A and row n of B.
KA_FN inline float epilogue(const GemmArgs& g, int64_t m, int64_t n, float y) {{
{indent(chr(10).join([*lines, "return y;"]))}
}}
}}  // namespace
"""


KERNEL = """namespace {
// VEC consecutive elements of one row as floats: one 8- or 16-byte load when VEC > 1.
template <int VEC, typename T>
__device__ inline void load_run(float (&out)[VEC], const T* p) {
    struct alignas(sizeof(T) * VEC) Run { T v[VEC]; };
    const Run run = *reinterpret_cast<const Run*>(p);
#pragma unroll
    for (int v = 0; v < VEC; ++v) out[v] = static_cast<float>(run.v[v]);
}

// Warp w of the block owns columns n0 .. n0 + NR - 1 and rows m0 .. m0 + MR - 1 of C; lane l reads
// elements l * VEC .. l * VEC + VEC - 1 of every 32 * VEC. Rows and columns past the edge read the
// last one (no branch in the loop) and are never written.
template <int VEC>
__global__ void gemm_kernel(GemmArgs g) {
    const int lane = threadIdx.x % 32;
    const int64_t n0 = (static_cast<int64_t>(blockIdx.x) * WARPS + threadIdx.x / 32) * NR;
    const int64_t m0 = static_cast<int64_t>(blockIdx.y) * MR;
    if (n0 >= g.n) return;  // n0 is the same for the whole warp: it leaves together
    float acc[MR][NR] = {};
#pragma unroll 2
    for (int64_t k = lane * VEC; k < g.k; k += 32 * VEC) {
        float b[NR][VEC];
#pragma unroll
        for (int j = 0; j < NR; ++j) load_run<VEC>(b[j], g.b + min(n0 + j, g.n - 1) * g.k + k);
#pragma unroll
        for (int i = 0; i < MR; ++i) {
            float a[VEC];
            load_run<VEC>(a, g.a + min(m0 + i, g.m - 1) * g.k + k);
#pragma unroll
            for (int j = 0; j < NR; ++j) {
#pragma unroll
                for (int v = 0; v < VEC; ++v) acc[i][j] += a[v] * b[j][v];
            }
        }
    }
#pragma unroll
    for (int i = 0; i < MR; ++i) {
#pragma unroll
        for (int j = 0; j < NR; ++j) {
            float v = acc[i][j];
            for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
            const int64_t m = m0 + i, n = n0 + j;
            if (lane == (i * NR + j) % 32 && m < g.m && n < g.n) g.c[m * g.n + n] = static_cast<C_T>(epilogue(g, m, n, v));
        }
    }
}

bool runs_fit(const void* p, size_t bytes) { return reinterpret_cast<uintptr_t>(p) % bytes == 0; }
}  // namespace

void kernelarc_gemm_cuda(const GemmArgs& g, int device) {
    const c10::cuda::CUDAGuard on(device);
    const dim3 grid(static_cast<unsigned>((g.n + WARPS * NR - 1) / (WARPS * NR)), static_cast<unsigned>((g.m + MR - 1) / MR));
    const auto stream = c10::cuda::getCurrentCUDAStream();
    // Whole runs of VEC only when K divides into them and both operands start on a run's alignment.
    if (g.k % VEC == 0 && runs_fit(g.a, sizeof(*g.a) * VEC) && runs_fit(g.b, sizeof(*g.b) * VEC)) {
        gemm_kernel<VEC><<<grid, WARPS * 32, 0, stream>>>(g);
    } else {
        gemm_kernel<1><<<grid, WARPS * 32, 0, stream>>>(g);
    }
    C10_CUDA_KERNEL_LAUNCH_CHECK();
}
"""


def cuda_source(facts: GemmFacts, analysis: TaskAnalysis, params: dict[str, Any]) -> str:
    """The nvcc translation unit: the epilogue on the device, the kernel and its launcher."""
    tiles = "".join(f"constexpr int {key} = {int(params[key])};\n" for key in ("MR", "NR", "WARPS"))
    widest = max(getattr(torch, dtype).itemsize for _, _, dtype in _operands(facts, analysis)[:2])
    tiles += f"constexpr int VEC = {16 // widest};  // elements of A and B per lane per step: 16 bytes of the wider\n"
    return f"{CUDA_HEAD}{tiles}using C_T = {CPP_TYPES[facts.dtype]};\n\n{gemm_source(facts, analysis)}\n{KERNEL}"


def cpp_source(facts: GemmFacts, analysis: TaskAnalysis) -> str:
    """The host translation unit: checks, C, then the CUDA launcher or a serial CPU loop."""
    inputs = _operands(facts, analysis)
    checks, pointers = contiguous_inputs([(name, dtype) for name, _, dtype in inputs])
    full = [name for (name, _, _), step in zip(inputs[2:], [s for s in facts.epilogue if s.tensor])
            if step.broadcast != "row"]
    checks += [f'TORCH_CHECK({name}.numel() == m * n, "{name}: expected one value per output");' for name in full]
    params = ", ".join(f"const at::Tensor& {name}_in" for name, _, _ in inputs)
    c_type = CPP_TYPES[facts.dtype]
    return f"""{HOST_HEAD}
{gemm_source(facts, analysis)}
#ifdef KERNELARC_WITH_CUDA
void kernelarc_gemm_cuda(const GemmArgs& g, int device);
#endif

at::Tensor gemm_forward({params}) {{
    const int64_t k = a_in.size(-1), m = k ? a_in.numel() / k : 0, n = b_in.size(0);
    TORCH_CHECK(b_in.dim() == 2 && b_in.size(1) == k, "B: expected [N, K] with the K of A");
{indent(chr(10).join(checks))}
    auto shape = a.sizes().vec();
    shape.back() = n;
    at::Tensor c = at::empty(shape, a.options().dtype({TORCH_TYPES[facts.dtype]}));
    const GemmArgs g{{{", ".join([*pointers, f"c.data_ptr<{c_type}>()", "m", "n", "k"])}}};
    if (m == 0 || n == 0) return c;
#ifdef KERNELARC_WITH_CUDA
    if (a.is_cuda()) {{
        kernelarc_gemm_cuda(g, a.get_device());
        return c;
    }}
#endif
    for (int64_t i = 0; i < m; ++i) {{
        for (int64_t j = 0; j < n; ++j) {{
            float y = 0.0f;
            for (int64_t p = 0; p < k; ++p) {{
                y += static_cast<float>(g.a[i * k + p]) * static_cast<float>(g.b[j * k + p]);
            }}
            g.c[i * n + j] = static_cast<{c_type}>(epilogue(g, i, j, y));
        }}
    }}
    return c;
}}
"""


class CudaSmallGemm(OneKernelFamily):
    """A few-row GEMM and its epilogue as one CUDA kernel launched from C++."""

    name = "cuda_small_gemm"

    def facts(self, analysis: TaskAnalysis) -> tuple[GemmFacts | None, str | None]:
        facts, reason = read_facts(analysis, "gemm", GemmFacts.parse)
        if facts is not None and facts.M > MAX_M:
            return None, f"{facts.M} rows: this kernel is for GEMMs of at most {MAX_M} rows"
        if facts is not None and facts.M * facts.N * facts.K > MAX_FMAS:
            return None, f"{facts.M * facts.N * facts.K:,} FMAs: more than one launch of fp32 FMAs should carry"
        if facts is not None and facts.b_layout != "nk":
            return None, "B stored [K, N]: the lanes would read it strided (only nn.Linear's [N, K] is templated)"
        if facts is not None:
            why = unreadable([(ref, dtype) for _, ref, dtype in _operands(facts, analysis)])
            if why:
                return None, why
        return facts, reason

    def task_reason(self, analysis: TaskAnalysis) -> str | None:
        if not analysis.launch_bound:
            return "not launch-bound: a GEMM this size belongs to tensor cores, not to one launch of FMAs"
        return None

    def space(self, analysis: TaskAnalysis) -> list[dict[str, Any]]:
        facts = self.facts(analysis)[0]
        if facts is None:
            return []
        rows = next_power_of_2(facts.M)
        # A warp's MR x NR tile costs MR + NR loads per MR * NR FMAs, and smaller tiles mean more warps to
        # hide the loads' latency. On the H200 (mlp_relu_small, docs/benchmarks.md, session 6) 8 x 4 and
        # 4 x 8 tiles ran 2.1-2.3x over eager, 8 x 8 1.5x, 16 x 4 1.3x; tall 32 x 1 and 32 x 2 tiles
        # ran slower than eager.
        points = [{"MR": min(rows, 8), "NR": 4, "WARPS": 4}, {"MR": min(rows, 4), "NR": 8, "WARPS": 8},
                  {"MR": min(rows, 4), "NR": 4, "WARPS": 4}, {"MR": min(rows, 8), "NR": 8, "WARPS": 4}]
        return [dict(p) for p in {tuple(sorted(p.items())): p for p in points}.values()]

    def render(self, analysis: TaskAnalysis, params: dict[str, Any]) -> Move:
        facts, reason = self.facts(analysis)
        if facts is None:
            raise ValueError(f"{self.name} cannot render: {reason}")
        tile = f"{params['MR']} rows x {params['NR']} columns per warp, {params['WARPS']} warps per block"
        doc = (f"C = {facts.formula} as one CUDA kernel launched from C++ {point_text(self.name, params)}.\n\n"
               f"M={facts.M} N={facts.N} K={facts.K} {facts.dtype}, fp32 FMAs, {tile}. Generated by kernelarc's "
               f"built-in fusion agent for {analysis.task.name}. Built at import with load_inline: nvcc where "
               "torch sees a GPU, else a serial C++ loop with the same epilogue (a C++ compiler and ninja).")
        source = extension_module(analysis, family=self.name, doc=doc, cpp=cpp_source(facts, analysis),
                                  cuda=cuda_source(facts, analysis, params), function="gemm_forward",
                                  args=[ref for _, ref, _ in _operands(facts, analysis)])
        fused = "".join(f"+{step.op}" for step in facts.epilogue)
        return Move(family=self.name, params=dict(params), source=source,
                    claim=claim(f"CUDA GEMM{fused}, one kernel launched from C++ (no dispatcher, no cuBLASLt "
                                f"descriptors): {tile}"))


register_family(CudaSmallGemm())

__all__ = ["CudaSmallGemm", "cpp_source", "cuda_source", "gemm_source"]
