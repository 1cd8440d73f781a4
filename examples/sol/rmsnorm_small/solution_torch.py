"""Candidate for rmsnorm_small: PyTorch, returning the output (SOL-ExecBench `run`, not destination-passing).

Reads the input once and writes the output once: 2 * 2 * batch_size * 256 bytes plus the weight.
"""

import torch


def run(hidden_states: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    x = hidden_states.float()
    scale = torch.rsqrt(x.square().mean(dim=-1, keepdim=True) + eps)
    return (x * scale * weight.float()).to(hidden_states.dtype)
