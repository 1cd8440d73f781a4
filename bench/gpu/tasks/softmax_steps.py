"""Softmax over rows of 1,024 fp32 values, 16,384 rows, written out step by step (row max, shift, exp, row
sum, divide: five kernels, none of which takes most of the call). The GPU checks' multi-kernel task: a
clock scaled down on such a call stays above its longest kernel, so only the span of all its kernels
bounds it (guard/session.py, the kernel floor)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        shifted = x - x.amax(dim=1, keepdim=True)
        e = torch.exp(shifted)
        return e / e.sum(dim=1, keepdim=True)


def get_inputs():
    return [torch.randn(16384, 1024)]


def get_init_inputs():
    return []
