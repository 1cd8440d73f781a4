"""Probe variant (bench/gpu/launch_probe.py, session 14): level1 12 (A[:, None] * B) as a five-argument Triton
kernel, to see how Triton's launch cost grows with the argument count."""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _row_scale(a_ptr, b_ptr, out_ptr, n, M, BLOCK_SIZE: tl.constexpr):
    offs = tl.program_id(0) * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n
    a = tl.load(a_ptr + offs // M, mask=mask)
    b = tl.load(b_ptr + offs, mask=mask)
    tl.store(out_ptr + offs, a * b, mask=mask)


class ModelNew(nn.Module):
    def forward(self, A, B):
        out = torch.empty_like(B)
        n = B.numel()
        _row_scale[(triton.cdiv(n, 1024),)](A, B, out, n, B.shape[1], BLOCK_SIZE=1024, num_warps=4)
        return out
