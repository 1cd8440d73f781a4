"""Candidate for relu_small.py: one Triton kernel, no PyTorch fallback.

y = max(x, 0) elementwise; moves 2 * 4 * n_elements bytes and does no matmul work. Runs on a GPU, or
on the CPU through Triton's interpreter (TRITON_INTERPRET=1).
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _relu_kernel(y_ptr, x_ptr, n_elements, BLOCK_SIZE: tl.constexpr):
    pid = tl.program_id(axis=0).to(tl.int64)
    offs = pid * BLOCK_SIZE + tl.arange(0, BLOCK_SIZE)
    mask = offs < n_elements
    x = tl.load(x_ptr + offs, mask=mask, other=0.0)
    tl.store(y_ptr + offs, tl.maximum(x, 0.0), mask=mask)


def relu(x: torch.Tensor) -> torch.Tensor:
    """ReLU of a contiguous tensor, computed by `_relu_kernel`."""
    if not x.is_contiguous():
        raise ValueError("relu expects a contiguous tensor")
    y = torch.empty_like(x)
    n_elements = x.numel()
    BLOCK_SIZE = 1024
    _relu_kernel[(triton.cdiv(n_elements, BLOCK_SIZE),)](y, x, n_elements, BLOCK_SIZE=BLOCK_SIZE)
    return y


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return relu(x)
