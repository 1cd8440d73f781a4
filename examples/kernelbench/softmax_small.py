"""Row-wise softmax over a small matrix (kernelarc example, KernelBench format)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """Softmax along dim 1."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.softmax(x, dim=1)


ROWS = 32
COLS = 781  # odd width: a kernel must mask its row tail


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []
