"""Honest Triton candidate for KernelBench level-1 23_Softmax (rows of 393,216 fp32 values).

y[i, :] = exp(x[i, :] - max_i) / sum_j exp(x[i, j] - max_i), one program per row, two passes over the
row: an online max/sum pass, then a normalize-and-store pass. Moves 2 reads + 1 write of the
tensor; no matmul work.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _softmax_kernel(y_ptr, stride_y, x_ptr, stride_x, n_cols, BLOCK_SIZE: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    x_row = x_ptr + row * stride_x
    y_row = y_ptr + row * stride_y
    running_max = tl.full([BLOCK_SIZE], -1e30, tl.float32)
    running_sum = tl.zeros([BLOCK_SIZE], tl.float32)
    for start in range(0, n_cols, BLOCK_SIZE):
        offs = start + tl.arange(0, BLOCK_SIZE)
        mask = offs < n_cols
        x = tl.load(x_row + offs, mask=mask, other=-float("inf"))
        new_max = tl.maximum(running_max, x)
        running_sum = running_sum * tl.exp(running_max - new_max) + tl.exp(x - new_max)
        running_max = new_max
    row_max = tl.max(running_max, axis=0)
    row_sum = tl.sum(running_sum * tl.exp(running_max - row_max), axis=0)
    for start in range(0, n_cols, BLOCK_SIZE):
        offs = start + tl.arange(0, BLOCK_SIZE)
        mask = offs < n_cols
        x = tl.load(x_row + offs, mask=mask, other=-float("inf"))
        tl.store(y_row + offs, tl.exp(x - row_max) / row_sum, mask=mask)


def softmax(x: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dim of a 2-d contiguous tensor."""
    if x.dim() != 2 or not x.is_contiguous():
        raise ValueError(f"softmax expects a contiguous 2-d tensor, got shape {tuple(x.shape)}")
    n_rows, n_cols = x.shape
    y = torch.empty_like(x)
    _softmax_kernel[(n_rows,)](y, y.stride(0), x, x.stride(0), n_cols, BLOCK_SIZE=4096, num_warps=16)
    return y


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return softmax(x)
