"""ReLU over 8 x 48 fp32: the smallest elementwise task, for CPU tests of `kernelarc bench`."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """y = relu(x)."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


def get_inputs():
    return [torch.randn(8, 48)]


def get_init_inputs():
    return []
