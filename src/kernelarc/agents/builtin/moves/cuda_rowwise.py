"""Fusion move `cuda_rowwise`: a whole row-wise forward (softmax, log_softmax, layer_norm or rms_norm,
the residual add before a norm, the pointwise ops after) as one CUDA kernel launched from C++.

Why: on the H200 the launch-bound row-wise task (layernorm_gelu_small, 16 x 2048) stopped at about
20 µs a call with its forward moved into C++ (docs/benchmarks.md, session 5): each ATen op still pays
the dispatcher and a launch, and a Triton kernel pays its Python launcher. One hand-written kernel
called from C++ pays one launch and no dispatcher: 2.1-2.7x over eager on the H200 (session 6).

How: one block of THREADS threads per row, striding over it; the statistics reduced in warp shuffles
and one shared-memory step; the row re-read (from L1/L2) in each pass rather than held in
registers, which suits the small rows this targets. The row's maths is one C++ template shared by
the CUDA kernel and a serial CPU loop, compiled once per build: off the GPU (CI) the guard checks the
same maths the GPU runs, and the CUDA build adds only the block reductions. Roundings follow
`RowwiseFacts` as the Triton row-wise kernels do (an intermediate the reference holds in bf16 is
rounded to it). KernelBench tasks only (SOL-ExecBench refuses C++ builds in Python solutions).
Reads `facts["rowwise"]` through triton_rowwise.RowwiseFacts. Budget: 260 lines.
"""

from __future__ import annotations

from typing import Any

from kernelarc.agents.builtin.moves import register_family
from kernelarc.agents.builtin.moves.base import Move, TaskAnalysis
from kernelarc.agents.builtin.moves.cuda_common import (
    CPP_TYPES, CUDA_HEAD, HOST_HEAD, TORCH_TYPES, OneKernelFamily, contiguous_inputs, cpp_float, extension_module,
    indent, rounded, step_expression, unreadable,
)
from kernelarc.agents.builtin.moves.triton_common import claim, next_power_of_2, read_facts
from kernelarc.agents.builtin.moves.facts import RowwiseFacts, value_dtype
from kernelarc.agents.builtin.notation import point_text

OPS = ("softmax", "log_softmax", "layer_norm", "rms_norm")
ELEMENTS_PER_THREAD = 8
"""The first point gives each thread about this many columns of a row (2048 columns: 256 threads)."""


def _step(facts: RowwiseFacts) -> list[str]:
    """Statements turning the op's fp32 result `y` at column `i` into what the forward stores."""
    lines = []
    held = [facts.dtype, *(row.dtype for row in facts.epilogue)]
    for row, dtype in zip(facts.epilogue, held):
        if dtype != "float32":
            lines.append(f"y = {rounded('y', dtype)};  // the reference holds {dtype} here")
        if row.step is None:
            continue  # a cast: it sets the dtype the next step rounds to
        operand = f"static_cast<float>(a.{row.operand}[i])" if row.operand else None
        lines.append(f"y = {step_expression(row.step, 'y', operand)};  // {row.describe()}")
    return lines


def operands(facts: RowwiseFacts) -> list[tuple[str, str]]:
    """(kernel name, source expression) of every tensor the kernel reads, x first."""
    return [("x", facts.x), *facts.operands()]


def row_source(facts: RowwiseFacts, analysis: TaskAnalysis) -> str:
    """The argument struct and the row template both builds compile (`KA_FN`: nothing or __device__)."""
    fields = [f"const {CPP_TYPES[value_dtype(analysis, ref)]}* {name};" for name, ref in operands(facts)]
    fields += [f"{CPP_TYPES[facts.out_dtype]}* y;", "int64_t n_cols;"]
    load = ["float v = static_cast<float>(a.x[at]);"]
    if facts.residual:
        load.append(f"v = {rounded('v + static_cast<float>(a.residual[at])', facts.x_dtype)};"
                    "  // the reference adds in x's dtype")
    if facts.input_round:
        load.append(f"v = {rounded('v', facts.input_round)};  // the reference casts x to {facts.input_round}")
    first, value = {
        "softmax": ("float m = lanes.max(-INFINITY, [&](int64_t i) { return load(a, base + i); });\n"
                    "float s = lanes.sum([&](int64_t i) { return expf(load(a, base + i) - m); });",
                    "expf(load(a, base + i) - m) / s"),
        "log_softmax": ("float m = lanes.max(-INFINITY, [&](int64_t i) { return load(a, base + i); });\n"
                        "float s = lanes.sum([&](int64_t i) { return expf(load(a, base + i) - m); });",
                        "load(a, base + i) - m - logf(s)"),
        "layer_norm": ("const float mean = lanes.sum([&](int64_t i) { return load(a, base + i); }) / n;\n"
                       "const float var = lanes.sum([&](int64_t i) { float d = load(a, base + i) - mean; "
                       "return d * d; }) / n;\n"
                       f"const float rstd = 1.0f / sqrtf(var + {cpp_float(facts.eps)});",
                       "(load(a, base + i) - mean) * rstd"),
        "rms_norm": ("const float ms = lanes.sum([&](int64_t i) { float v = load(a, base + i); return v * v; }) / n;\n"
                     f"const float rstd = 1.0f / sqrtf(ms + {cpp_float(facts.eps)});",
                     "load(a, base + i) * rstd"),
    }[facts.op]
    affine = (["y = y * static_cast<float>(a.weight[i]);"] if facts.weight else []) + (
        ["y = y + static_cast<float>(a.bias[i]);"] if facts.bias else [])
    body = "\n".join([f"float y = {value};", *affine, *_step(facts),
                      f"a.y[base + i] = static_cast<{CPP_TYPES[facts.out_dtype]}>(y);"])
    return f"""struct RowArgs {{
{indent(chr(10).join(fields))}
}};

namespace {{

KA_FN inline float load(const RowArgs& a, int64_t at) {{
{indent(chr(10).join([*load, "return v;"]))}
}}

// Row `row` of {facts.formula}; `lanes` splits the columns and reduces over them.
template <class Lanes>
KA_FN void row_forward(const Lanes& lanes, const RowArgs& a, int64_t row) {{
    const int64_t n = a.n_cols, base = row * n;
{indent(first)}
    lanes.each([&](int64_t i) {{
{indent(body, 2)}
    }});
}}

}}  // namespace
"""


SERIAL = """namespace {
// One thread walks the whole row: the CPU build, and the reference for what the block computes.
struct SerialLanes {
    int64_t n;
    template <class F> float sum(F f) const { float s = 0.0f; for (int64_t i = 0; i < n; ++i) s += f(i); return s; }
    template <class F> float max(float init, F f) const { float m = init; for (int64_t i = 0; i < n; ++i) m = fmaxf(m, f(i)); return m; }
    template <class F> void each(F f) const { for (int64_t i = 0; i < n; ++i) f(i); }
};
}  // namespace
"""
BLOCK = """namespace {
// blockDim.x threads (a multiple of 32) stride over the row; every thread gets each reduction's result.
template <bool IS_MAX>
__device__ float block_reduce(float v) {
    __shared__ float partial[32];
    for (int o = 16; o > 0; o >>= 1) {
        const float other = __shfl_xor_sync(0xffffffffu, v, o);
        v = IS_MAX ? fmaxf(v, other) : v + other;
    }
    __syncthreads();  // the previous reduction's readers are done with `partial`
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
    __syncthreads();
    const unsigned warps = blockDim.x / 32;
    v = threadIdx.x % 32 < warps ? partial[threadIdx.x % 32] : (IS_MAX ? -INFINITY : 0.0f);
    for (int o = 16; o > 0; o >>= 1) {
        const float other = __shfl_xor_sync(0xffffffffu, v, o);
        v = IS_MAX ? fmaxf(v, other) : v + other;
    }
    return v;
}

struct BlockLanes {
    int64_t n;
    template <class F> __device__ float sum(F f) const {
        float s = 0.0f;
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x) s += f(i);
        return block_reduce<false>(s);
    }
    template <class F> __device__ float max(float init, F f) const {
        float m = init;
        for (int64_t i = threadIdx.x; i < n; i += blockDim.x) m = fmaxf(m, f(i));
        return block_reduce<true>(m);
    }
    template <class F> __device__ void each(F f) const { for (int64_t i = threadIdx.x; i < n; i += blockDim.x) f(i); }
};

__global__ void rows_kernel(RowArgs a) { row_forward(BlockLanes{a.n_cols}, a, blockIdx.x); }
}  // namespace

void kernelarc_rows_cuda(const RowArgs& a, int64_t rows, int device) {
    const c10::cuda::CUDAGuard on(device);
    rows_kernel<<<static_cast<unsigned>(rows), THREADS, 0, c10::cuda::getCurrentCUDAStream()>>>(a);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
}
"""


def cuda_source(facts: RowwiseFacts, analysis: TaskAnalysis, threads: int) -> str:
    """The nvcc translation unit: the row template on the device, the kernel and its launcher."""
    return f"{CUDA_HEAD}constexpr int THREADS = {threads};\n\n{row_source(facts, analysis)}\n{BLOCK}"


def cpp_source(facts: RowwiseFacts, analysis: TaskAnalysis) -> str:
    """The host translation unit: checks, the output, then the CUDA launcher or the serial CPU loop."""
    inputs = [(name, value_dtype(analysis, ref)) for name, ref in operands(facts)]
    checks, pointers = contiguous_inputs(inputs)
    params = ", ".join(f"const at::Tensor& {name}_in" for name, _ in inputs)
    fields = [*pointers, f"y.data_ptr<{CPP_TYPES[facts.out_dtype]}>()", "n"]
    return f"""{HOST_HEAD}
{row_source(facts, analysis)}
{SERIAL}
#ifdef KERNELARC_WITH_CUDA
void kernelarc_rows_cuda(const RowArgs& a, int64_t rows, int device);
#endif

at::Tensor rows_forward({params}) {{
{indent(chr(10).join(checks))}
    const int64_t n = x.size(-1), rows = n ? x.numel() / n : 0;
    at::Tensor y = at::empty(x.sizes(), x.options().dtype({TORCH_TYPES[facts.out_dtype]}));
    const RowArgs a{{{", ".join(fields)}}};
    if (rows == 0) return y;
#ifdef KERNELARC_WITH_CUDA
    if (x.is_cuda()) {{
        kernelarc_rows_cuda(a, rows, x.get_device());
        return y;
    }}
#endif
    for (int64_t row = 0; row < rows; ++row) row_forward(SerialLanes{{n}}, a, row);
    return y;
}}
"""


class CudaRowwise(OneKernelFamily):
    """The row-wise forward as one CUDA kernel launched from C++."""

    name = "cuda_rowwise"

    def facts(self, analysis: TaskAnalysis) -> tuple[RowwiseFacts | None, str | None]:
        facts, reason = read_facts(analysis, "rowwise", RowwiseFacts.parse)
        if facts is not None and facts.op not in OPS:
            return None, f"{facts.op} is not templated in CUDA (only {', '.join(OPS)})"
        if facts is not None and facts.sum_output:
            return None, "a forward that also returns the residual sum is not templated in CUDA"
        if facts is not None:
            why = unreadable([(ref, value_dtype(analysis, ref)) for _, ref in operands(facts)])
            if why:
                return None, why
        return facts, reason

    def space(self, analysis: TaskAnalysis) -> list[dict[str, Any]]:
        facts = self.facts(analysis)[0]
        if facts is None:
            return []
        first = min(1024, max(32, next_power_of_2(max(1, facts.cols // ELEMENTS_PER_THREAD))))
        return [{"THREADS": t} for t in dict.fromkeys((first, max(32, first // 2), min(1024, first * 2)))]

    def render(self, analysis: TaskAnalysis, params: dict[str, Any]) -> Move:
        facts, reason = self.facts(analysis)
        if facts is None:
            raise ValueError(f"{self.name} cannot render: {reason}")
        threads = int(params["THREADS"])
        what = (f"{facts.op}{' with the residual add' if facts.residual else ''} and "
                f"{len(facts.epilogue)} pointwise step(s) as one CUDA kernel launched from C++")
        doc = (f"{what} {point_text(self.name, params)}: {facts.formula}.\n\n{facts.rows} rows x {facts.cols} "
               f"columns {facts.x_dtype}; one block of {threads} threads per row, fp32 statistics. Generated by "
               f"kernelarc's built-in fusion agent for {analysis.task.name}. Built at import with load_inline: "
               "nvcc where torch sees a GPU, else the same row maths as a serial C++ loop (a C++ compiler and ninja).")
        source = extension_module(analysis, family=self.name, doc=doc, cpp=cpp_source(facts, analysis),
                                  cuda=cuda_source(facts, analysis, threads), function="rows_forward",
                                  args=[ref for _, ref in operands(facts)])
        text = f"CUDA {facts.op}" + "".join(f"+{r.step.op if r.step else 'cast'}" for r in facts.epilogue)
        return Move(family=self.name, params=dict(params), source=source,
                    claim=claim(f"{text}: one kernel launched from C++, no dispatcher, {threads} threads per row"))


register_family(CudaRowwise())

__all__ = ["CudaRowwise", "cpp_source", "cuda_source", "row_source"]
