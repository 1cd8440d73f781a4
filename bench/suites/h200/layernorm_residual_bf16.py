"""Residual add + LayerNorm, bf16: h = x + r; y = LayerNorm(h); returns (y, h), x and r 8192 x 4096.

Shape: the pre-norm block boundary of a GPT-J-6B / GPT-NeoX-style model (hidden 4096) over 8192
tokens: the new residual stream h is kept and its normalization feeds the next sublayer.
Cost: no matmul; bytes at least 2 * 64 MiB in + 2 * 16 KiB weights + 2 * 64 MiB out = 268.5 MB.
Eager writes h, reads it back for the statistics and again for the normalization.
"""

import torch
import torch.nn as nn

TOKENS = 8192
HIDDEN = 4096


class Model(nn.Module):
    """(LayerNorm(x + r), x + r) with bf16 affine LayerNorm (eps 1e-5)."""

    def __init__(self, hidden: int):
        super().__init__()
        self.norm = nn.LayerNorm(hidden, eps=1e-5, dtype=torch.bfloat16)
        with torch.no_grad():  # non-trivial affine parameters, so a kernel that drops them fails
            self.norm.weight.add_(0.1 * torch.randn(hidden, dtype=torch.bfloat16))
            self.norm.bias.add_(0.1 * torch.randn(hidden, dtype=torch.bfloat16))

    def forward(self, x: torch.Tensor, residual: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        h = x + residual
        return self.norm(h), h


def get_inputs():
    return [torch.randn(TOKENS, HIDDEN, dtype=torch.bfloat16), torch.randn(TOKENS, HIDDEN, dtype=torch.bfloat16)]


def get_init_inputs():
    return [HIDDEN]
