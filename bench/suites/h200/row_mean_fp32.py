"""Row mean, fp32: y[i] = mean_j x[i, j], x 8192 x 8192.

Shape: per-token statistics over a hidden size of 8192 (Llama-3-70B) for 8192 tokens, the first pass
of a norm or a mean-pooling head.
Cost: no matmul; bytes at least 256 MiB in + 32 KiB out = 268.5 MB, ~64 us at ~4.2 TB/s: a pure
streaming reduction, where vector width and rows per program decide how close a kernel gets.
"""

import torch
import torch.nn as nn

ROWS = 8192
COLS = 8192


class Model(nn.Module):
    """Mean over the last dimension."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x.mean(dim=-1)


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []
