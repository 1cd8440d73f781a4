"""SwiGLU gate/up projection, bf16: h = silu(x @ Wg^T) * (x @ Wu^T), x 4096 x 4096, Wg, Wu 11008 x 4096.

Shape: the first half of a Llama-2-7B MLP (hidden 4096, intermediate 11008) over 4096 tokens.
Cost: 2 GEMMs of 2 * 4096 * 4096 * 11008 = 738.7 GFLOP in all; bytes at least 32 MiB (x) +
2 * 86 MiB (weights) + 86 MiB (h) = 304.1 MB. Compute-bound; eager writes both GEMM results and
reads them back for the product, which one GEMM over the concatenated weights with a fused
silu-multiply epilogue avoids.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

TOKENS = 4096
HIDDEN = 4096
INTERMEDIATE = 11008


class Model(nn.Module):
    """h = silu(gate_proj(x)) * up_proj(x), no biases, bf16."""

    def __init__(self, hidden: int, intermediate: int):
        super().__init__()
        self.gate_proj = nn.Linear(hidden, intermediate, bias=False, dtype=torch.bfloat16)
        self.up_proj = nn.Linear(hidden, intermediate, bias=False, dtype=torch.bfloat16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.silu(self.gate_proj(x)) * self.up_proj(x)


def get_inputs():
    return [torch.randn(TOKENS, HIDDEN, dtype=torch.bfloat16)]


def get_init_inputs():
    return [HIDDEN, INTERMEDIATE]
