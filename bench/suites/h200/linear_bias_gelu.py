"""Linear + bias + GELU (tanh) epilogue, bf16: y = gelu(x @ W^T + b), x 8192 x 4096, W 4096 x 4096.

Shape: a GPT-J-6B-sized layer (hidden 4096, GELU-tanh MLPs as in GPT-2/GPT-J/GPT-NeoX) over 8192
tokens (four 2048-token sequences).
Cost: 2 * 8192 * 4096 * 4096 = 274.9 GFLOP; bytes at least 64 MiB (x) + 32 MiB (W) + 64 MiB (y)
= 167.8 MB. Compute-bound; eager runs the GEMM with bias, then GELU as a second pass over y, which a
fused epilogue removes.
"""

import torch
import torch.nn as nn

TOKENS = 8192
IN_FEATURES = 4096
OUT_FEATURES = 4096


class Model(nn.Module):
    """y = GELU_tanh(x @ W^T + b), bf16 weights and activations."""

    def __init__(self, in_features: int, out_features: int):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features, dtype=torch.bfloat16)
        self.act = nn.GELU(approximate="tanh")

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.linear(x))


def get_inputs():
    return [torch.randn(TOKENS, IN_FEATURES, dtype=torch.bfloat16)]


def get_init_inputs():
    return [IN_FEATURES, OUT_FEATURES]
