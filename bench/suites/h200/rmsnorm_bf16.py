"""RMSNorm, bf16: y = w * (x / sqrt(mean(x^2) + eps)), x 16384 x 8192.

Shape: the RMSNorm of Llama-3-70B (hidden 8192, eps 1e-5) over 16384 tokens (eight 2048-token
sequences), computed as Llama does it: statistics in fp32, cast back to bf16 before the weight.
Cost: no matmul; bytes at least 256 MiB (x) + 16 KiB (w) + 256 MiB (y) = 536.9 MB, ~0.13 ms at
~4.2 TB/s. Eager makes several fp32 passes over x.
"""

import torch
import torch.nn as nn

TOKENS = 16384
HIDDEN = 8192
EPS = 1e-5


class Model(nn.Module):
    """Llama RMSNorm: fp32 statistics, bf16 weight and output."""

    def __init__(self, hidden: int, eps: float):
        super().__init__()
        weight = torch.ones(hidden, dtype=torch.bfloat16) + 0.1 * torch.randn(hidden, dtype=torch.bfloat16)
        self.weight = nn.Parameter(weight)  # not all ones, so a kernel that drops it fails
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = x.to(torch.float32)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * h.to(x.dtype)


def get_inputs():
    return [torch.randn(TOKENS, HIDDEN, dtype=torch.bfloat16)]


def get_init_inputs():
    return [HIDDEN, EPS]
