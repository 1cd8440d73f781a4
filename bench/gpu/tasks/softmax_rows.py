"""Softmax over rows of 1,024 fp32 values, 16,384 rows (64 MB in, 64 MB out): the GPU checks' memory-bound
task. Rows this short keep every output far above KernelBench's absolute tolerance (1e-4), so an answer
for other inputs is wrong, not "within tolerance" (rows of 16,384 values are all about 6e-5)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=1)


def get_inputs():
    return [torch.randn(16384, 1024)]


def get_init_inputs():
    return []
