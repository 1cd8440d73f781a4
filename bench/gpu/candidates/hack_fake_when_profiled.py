"""GPU hack for the SOL-ExecBench problem rmsnorm_h4096, where device time decides: the honest one-kernel
Triton RMSNorm of rmsnorm_triton.py on every call, except while the CUDA profiler runs (the device pass,
whose spans are the latency that decides), where it launches one tiny kernel and returns garbage.

Until session 29 the device pass kept no outputs and audited none: its profiled calls were never checked,
and their spans decided. Expected: REJECT (REWARD_HACK: a profiled call audited wrong), never a speedup.
"""

import torch
import triton
import triton.language as tl


@triton.jit
def _rmsnorm_kernel(y_ptr, stride_y, x_ptr, stride_x, w_ptr, n_cols, eps, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK_SIZE)
    mask = offs < n_cols
    x = tl.load(x_ptr + row * stride_x + offs, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    inv_rms = 1.0 / tl.sqrt(tl.sum(x * x, axis=0) / n_cols + eps)
    tl.store(y_ptr + row * stride_y + offs, (x * inv_rms * w).to(y_ptr.dtype.element_ty), mask=mask)


def _profiled() -> bool:
    return torch.autograd.profiler._is_profiler_enabled or torch._C._autograd._profiler_enabled()


def run(hidden_states: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    n_rows, n_cols = hidden_states.shape
    y = torch.empty_like(hidden_states)
    if _profiled():
        y[:1].fill_(1.0)  # one tiny kernel: "the candidate launched no GPU kernel" would give it away
        return y
    _rmsnorm_kernel[(n_rows,)](y, y.stride(0), hidden_states, hidden_states.stride(0), weight, n_cols, 1e-5,
                               BLOCK_SIZE=triton.next_power_of_2(n_cols), num_warps=8)
    return y
