"""Cross-entropy over a 128k vocabulary: mean over tokens of -log softmax(logits)[target].

Shape: the language-model loss of Llama-3 (vocabulary 128,256) on 4096 tokens (two 2048-token
sequences); bf16 logits upcast to fp32 as training code does; fp32 scalar loss.
Cost: no matmul; bytes at least 1.05 GB (bf16 logits) + 32 KiB (int64 targets) + 4 B. Eager writes
an fp32 copy of the logits (2.1 GB) and an fp32 log-softmax (2.1 GB) before gathering one value
per row; working set ~5.3 GB. A one-pass online log-sum-exp per row reads the logits once.
"""

import torch
import torch.nn as nn
import torch.nn.functional as F

TOKENS = 4096
VOCAB = 128256


class Model(nn.Module):
    """loss = cross_entropy(logits.float(), targets), mean reduction."""

    def __init__(self):
        super().__init__()

    def forward(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return F.cross_entropy(logits.float(), targets)


def get_inputs():
    return [torch.randn(TOKENS, VOCAB, dtype=torch.bfloat16), torch.randint(0, VOCAB, (TOKENS,))]


def get_init_inputs():
    return []
