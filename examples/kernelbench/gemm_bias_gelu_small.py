"""Linear layer (GEMM + bias) followed by GELU, 64x128x128 fp32 (kernelarc example, KernelBench format)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """y = gelu(x @ W^T + b)."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)
        self.act = nn.GELU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.linear(x))


BATCH = 64
IN_FEATURES = 128
OUT_FEATURES = 128


def get_inputs():
    return [torch.randn(BATCH, IN_FEATURES)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
