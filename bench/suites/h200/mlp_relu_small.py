"""Launch-bound tiny MLP layer, fp32: y = relu(x @ W^T + b), x 32 x 1024, W 1024 x 1024.

Shape: a 1024-wide layer (BERT-large / GPT-2-medium width) at batch 32, as in small-batch online
inference: a 4 MiB weight and 128 KiB of activations, so launches dominate.
Cost: 2 * 32 * 1024 * 1024 = 67.1 MFLOP; bytes at least 4 MiB (W) + 4 KiB (b) + 2 * 128 KiB
= 4.5 MB. Eager launches a GEMM and a ReLU kernel.
"""

import torch
import torch.nn as nn

BATCH = 32
FEATURES = 1024


class Model(nn.Module):
    """ReLU(Linear(1024, 1024)), fp32."""

    def __init__(self, features: int):
        super().__init__()
        self.linear = nn.Linear(features, features)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.linear(x))


def get_inputs():
    return [torch.randn(BATCH, FEATURES)]


def get_init_inputs():
    return [FEATURES]
