"""GPU hack: do the work on a side stream and return without making the caller's stream wait.

CUDA events on the caller's stream would see an almost empty interval. The guard's stream probe
sees kernels on another stream and times this candidate by kernel spans over all streams (CUPTI),
so it cannot look faster than it is. (Its results are right: the guard syncs the device before
comparing.)
"""

import torch
import torch.nn as nn

_side = torch.cuda.Stream()


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        _side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(_side):
            y = torch.softmax(x, dim=-1)
        return y
