"""Launch-bound LayerNorm + GELU, fp32, 16 x 2048.

Shape: one decoding step of 16 sequences through the LayerNorm and activation of a 2048-hidden model
(GPT-Neo-1.3B, OPT-1.3B): the tensors are tiny, so time is kernel launches and host overhead.
Cost: no matmul; bytes at least 128 KiB in + 16 KiB weights + 128 KiB out = 278.5 KB (well under
a microsecond at HBM speed). Eager launches two kernels; one kernel, or a CUDA graph of the whole
forward, is the lever.
"""

import torch
import torch.nn as nn

BATCH = 16
HIDDEN = 2048


class Model(nn.Module):
    """GELU(LayerNorm(x)), fp32."""

    def __init__(self, hidden: int):
        super().__init__()
        self.norm = nn.LayerNorm(hidden)
        self.act = nn.GELU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.act(self.norm(x))


def get_inputs():
    return [torch.randn(BATCH, HIDDEN)]


def get_init_inputs():
    return [HIDDEN]
