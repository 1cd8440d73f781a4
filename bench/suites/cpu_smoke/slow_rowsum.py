"""Row sums one column at a time, fp32, 8 x 512: a deliberately slow reference for CPU tests of
`kernelarc bench` (a vectorized sum beats it by a wide margin even on the host clock)."""

import torch
import torch.nn as nn

ROWS = 8
COLS = 512


class Model(nn.Module):
    """out[i, 0] = sum over j of x[i, j], accumulated column by column in a Python loop."""

    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        acc = torch.zeros(x.shape[0], 1, dtype=x.dtype, device=x.device)
        for j in range(x.shape[1]):
            acc = acc + x[:, j : j + 1]
        return acc


def get_inputs():
    return [torch.randn(ROWS, COLS)]


def get_init_inputs():
    return []
