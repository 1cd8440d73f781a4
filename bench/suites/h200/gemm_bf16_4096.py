"""Square bf16 GEMM, 4096 x 4096 x 4096: C = A @ B.

Shape: the square projections of a 4096-hidden transformer (Llama-2-7B, Mistral-7B: q/k/v/o are
4096 x 4096) applied to 4096 tokens at once (prefill of two 2048-token sequences).
Cost: 2 * 4096^3 = 137.4 GFLOP; bytes moved at least 3 * 4096^2 * 2 B = 100.7 MB.
Compute-bound: at ~700 TFLOP/s an H200 needs ~0.2 ms; torch.matmul (cuBLAS) is the bar.
"""

import torch
import torch.nn as nn

M = K = N = 4096


class Model(nn.Module):
    """C = A @ B in bf16 (fp32 accumulation inside the matmul)."""

    def __init__(self):
        super().__init__()

    def forward(self, a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        return torch.matmul(a, b)


def get_inputs():
    return [torch.randn(M, K, dtype=torch.bfloat16), torch.randn(K, N, dtype=torch.bfloat16)]


def get_init_inputs():
    return []
