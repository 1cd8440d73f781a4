"""ReLU on 2048 x 2048 fp32 (16 MiB in, 16 MiB out): small enough to stay in the H200's 60 MB L2
between calls, so a timer without an L2 flush and fresh input addresses reports cache speed, not
memory speed. Used to show what the guard's flush changes (kernelarc GPU check, KernelBench format)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(x)


def get_inputs():
    return [torch.randn(2048, 2048)]


def get_init_inputs():
    return []
