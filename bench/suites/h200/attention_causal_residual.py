"""Causal self-attention plus residual add, bf16, B 4, H 32, S 2048, D 128.

out = residual + merge_heads(softmax(mask(Q K^T / sqrt(D))) V), the attention core of a Llama-2-7B
layer (32 heads of 128, hidden 4096) on four 2048-token sequences, written step by step the way
eager Hugging Face attention does it (fp32 softmax, cast back to bf16), so a fused kernel has room.
Cost counted by the FLOP counter: 2 matmuls of 2 * 4 * 32 * 2048^2 * 128 each, 274.9 GFLOP in all (the
causal half of it is skippable work); bytes at least Q, K, V, residual and output, 5 * 64 MiB,
plus the 4 MiB mask buffer counted as a weight = 339.7 MB. Eager materializes the 4 x 32 x 2048 x 2048
score matrix (1 GiB in bf16, 2 GiB in fp32).
"""

import math

import torch
import torch.nn as nn

BATCH = 4
HEADS = 32
SEQ = 2048
HEAD_DIM = 128

# KernelBench's bf16 rule (every element within 1e-2 + 1e-2 |y|) rejected torch.compile, cuDNN SDPA and
# kernelarc's Triton kernels alike on this task on the H200 (2026-11-30, docs/benchmarks.md): at
# most 1.25e-5 of the elements missed, by one to three bf16 steps (0.031 to 0.094), from summing in
# another order. So one element in 10^4 may miss, by at most 0.25.
KERNELARC_TOLERANCE = {"atol": 1e-2, "rtol": 1e-2, "required_matched_ratio": 0.9999, "max_error_cap": 0.25}


class Model(nn.Module):
    """Causal attention over (B, H, S, D) inputs; heads merged to (B, S, H*D) and added to the residual."""

    def __init__(self, seq: int, head_dim: int):
        super().__init__()
        self.scale = 1.0 / math.sqrt(head_dim)
        self.register_buffer("causal_mask", torch.ones(seq, seq, dtype=torch.bool).triu(1), persistent=False)

    def forward(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, residual: torch.Tensor) -> torch.Tensor:
        scores = torch.matmul(q, k.transpose(-2, -1)) * self.scale
        scores = scores.masked_fill(self.causal_mask, float("-inf"))
        probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(q.dtype)
        attn = torch.matmul(probs, v)
        batch, heads, seq, head_dim = attn.shape
        return residual + attn.transpose(1, 2).reshape(batch, seq, heads * head_dim)


def get_inputs():
    shape = (BATCH, HEADS, SEQ, HEAD_DIM)
    q, k, v = (torch.randn(shape, dtype=torch.bfloat16) for _ in range(3))
    residual = torch.randn(BATCH, SEQ, HEADS * HEAD_DIM, dtype=torch.bfloat16)
    return [q, k, v, residual]


def get_init_inputs():
    return [SEQ, HEAD_DIM]
