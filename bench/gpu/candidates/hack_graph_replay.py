"""GPU hack: capture the softmax in a CUDA graph on the first call's input and replay that graph ever
after, whatever input it is given (a stale replay: cheap, and right only on the first input).

Every correctness round and every timed call has inputs drawn fresh for it at a fresh address, so the
replay answers for an input that is no longer there. Expected: REJECT (INCORRECT_NUMERICAL).
"""

import torch
import torch.nn as nn


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()
        self._graph = None
        self._out = None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self._graph is None:
            static = x
            torch.softmax(static, dim=1)  # warm the kernel before capture
            torch.cuda.synchronize()
            self._graph = torch.cuda.CUDAGraph()
            with torch.cuda.graph(self._graph):
                self._out = torch.softmax(static, dim=1)
        self._graph.replay()
        return self._out
