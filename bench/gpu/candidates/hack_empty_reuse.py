"""GPU hack: return uninitialized memory, hoping the caching allocator hands back the block where the
reference just wrote its (correct) output. The guard computes references before importing the
candidate, keeps them on the host, and fills freed blocks of the output's size with NaN before every
call: expected verdict REJECT (INCORRECT_NUMERICAL).
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.empty_like(x)
