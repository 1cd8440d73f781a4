"""A required draft that only re-tunes the incumbent is refused; a new kernel, even inside a string, is not."""

from __future__ import annotations

import pytest

from kernelarc.campaign.drafting import is_parameter_change

from campaign.runs import source

CUDA_MODULE = '''import torch
from torch.utils.cpp_extension import load_inline

CUDA = r"""
#define BLOCK {block}
__global__ void relu_kernel(const float* x, float* y, int n) {{ {body} }}
torch::Tensor relu(torch::Tensor x) {{
    auto y = torch::empty_like(x);
    relu_kernel<<<(x.numel() + BLOCK - 1) / BLOCK, BLOCK>>>(x.data_ptr<float>(), y.data_ptr<float>(), x.numel());
    return y;
}}
"""
_ext = load_inline("relu_ext", cpp_sources="torch::Tensor relu(torch::Tensor x);", cuda_sources=CUDA,
                   functions=["relu"])


class ModelNew(torch.nn.Module):
    def forward(self, x):
        return _ext.relu(x)
'''
ONE_PER_THREAD = "int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] = fmaxf(x[i], 0.0f);"
GRID_STRIDE = ("for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < n; i += gridDim.x * blockDim.x) "
               "y[i] = fmaxf(x[i], 0.0f);")


def cuda(block: int, body: str) -> str:
    return CUDA_MODULE.format(block=block, body=body)


@pytest.mark.parametrize("proposal,incumbent,retuned", [
    (source("fast_retuned"), source("fast"), True),  # only the arguments' values differ
    (source("fast").replace("one vectorized reduction", "a single reduction"), source("fast"), True),  # docstring
    (source("fast"), source("fast"), True),
    (source("fast_alt"), source("fast"), False),  # another call: a different algorithm as far as we can tell
    (cuda(256, ONE_PER_THREAD), cuda(128, ONE_PER_THREAD), True),  # a tile size inside the CUDA string
    (cuda(256, GRID_STRIDE), cuda(256, ONE_PER_THREAD), False),  # a new kernel in the same wrapper
    (cuda(256, ONE_PER_THREAD), source("fast"), False),  # another language
    (source("fast"), None, False),  # the incumbent is the reference: anything is a draft
])
def test_only_a_retuning_of_the_incumbent_is_refused(proposal, incumbent, retuned):
    assert is_parameter_change(proposal, incumbent) is retuned
