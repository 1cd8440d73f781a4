"""Row sums computed one column at a time: a deliberately slow reference that any real kernel beats
by a wide margin, for demonstrating a campaign on the CPU (kernelarc example, KernelBench format)."""

import torch
import torch.nn as nn


class Model(nn.Module):
    """out[i, 0] = sum over j of x[i, j], accumulated column by column in a Python loop."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        acc = torch.zeros(x.shape[0], 1, dtype=x.dtype, device=x.device)
        for j in range(x.shape[1]):
            acc = acc + x[:, j : j + 1].sum(dim=1, keepdim=True)
        return acc


ROWS = 16
COLS = 512


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []
