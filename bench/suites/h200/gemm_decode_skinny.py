"""Skinny decode GEMM, bf16: y = x @ W^T with x 16 x 4096 and W 14336 x 4096.

Shape: the MLP up (or gate) projection of Llama-3-8B / Mistral-7B (hidden 4096, intermediate 14336)
during batched decoding of 16 sequences, one token each.
Cost: 2 * 16 * 4096 * 14336 = 1.88 GFLOP; bytes at least 117.4 MB (the weight) + 0.6 MB.
Memory-bound: the weight is read once, ~28 us at ~4.2 TB/s; a 16-row GEMM leaves most tensor-core
tiles empty, so split-K and weight-streaming layouts matter more than tile shape.
"""

import torch
import torch.nn as nn

BATCH = 16
HIDDEN = 4096
INTERMEDIATE = 14336


class Model(nn.Module):
    """y = x @ W^T (no bias), bf16."""

    def __init__(self, hidden: int, intermediate: int):
        super().__init__()
        self.proj = nn.Linear(hidden, intermediate, bias=False, dtype=torch.bfloat16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(x)


def get_inputs():
    return [torch.randn(BATCH, HIDDEN, dtype=torch.bfloat16)]


def get_init_inputs():
    return [HIDDEN, INTERMEDIATE]
