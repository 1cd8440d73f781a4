"""Fused block (KernelBench level-2 style), bf16: y = LayerNorm(GELU(x @ W^T + b)), x 4096 x 4096.

Shape: a 4096-hidden projection (Llama-2-7B / GPT-J width) over 4096 tokens followed by its
activation and a normalization, as in post-norm adapters and projection heads.
Cost: 2 * 4096^3 = 137.4 GFLOP; bytes at least 32 MiB (x) + 32 MiB (W) + 32 MiB (y) + 24 KiB
(bias, norm weights) = 100.7 MB. Eager runs three kernels and writes the 32 MiB intermediate twice;
a GEMM whose epilogue applies GELU leaves one row-wise normalization pass.
"""

import torch
import torch.nn as nn

TOKENS = 4096
HIDDEN = 4096

# KernelBench's bf16 rule (every element within 1e-2 + 1e-2 |y|) rejected torch.compile, cuDNN SDPA and
# kernelarc's Triton kernels alike on this task on the H200 (2026-11-30, docs/benchmarks.md): at
# most 1.25e-5 of the elements missed, by one to three bf16 steps (0.031 to 0.094), from summing in
# another order. So one element in 10^4 may miss, by at most 0.25.
KERNELARC_TOLERANCE = {"atol": 1e-2, "rtol": 1e-2, "required_matched_ratio": 0.9999, "max_error_cap": 0.25}


class Model(nn.Module):
    """Linear(4096, 4096) -> GELU (erf) -> LayerNorm(4096), bf16."""

    def __init__(self, hidden: int):
        super().__init__()
        self.linear = nn.Linear(hidden, hidden, dtype=torch.bfloat16)
        self.act = nn.GELU()
        self.norm = nn.LayerNorm(hidden, dtype=torch.bfloat16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(self.act(self.linear(x)))


def get_inputs():
    return [torch.randn(TOKENS, HIDDEN, dtype=torch.bfloat16)]


def get_init_inputs():
    return [HIDDEN]
