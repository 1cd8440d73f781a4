"""ReLU over a small 2-d tensor: the smallest elementwise task (kernelarc example, KernelBench format)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Applies ReLU elementwise."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


ROWS = 64
COLS = 1000  # not a power of two: a kernel must mask its last block


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []
