"""Honest CUDA C++ candidate (torch.utils.cpp_extension.load_inline) for KernelBench 23_Softmax.

One 1024-thread block per row: each thread keeps an online (max, sum) over a strided slice, the
block combines them with warp shuffles, then every thread writes its slice normalized.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__device__ __forceinline__ void combine(float& m, float& s, float om, float os) {
    float nm = fmaxf(m, om);
    s = s * __expf(m - nm) + os * __expf(om - nm);
    m = nm;
}

__global__ void softmax_rows_kernel(float* __restrict__ y, const float* __restrict__ x, long n_cols) {
    const long row = blockIdx.x;
    const float* xr = x + row * n_cols;
    float* yr = y + row * n_cols;
    float m = -1e30f, s = 0.f;
    for (long j = threadIdx.x; j < n_cols; j += blockDim.x) {
        float v = xr[j];
        combine(m, s, v, 1.f);
    }
    for (int off = 16; off > 0; off >>= 1) {
        float om = __shfl_xor_sync(0xffffffff, m, off);
        float os = __shfl_xor_sync(0xffffffff, s, off);
        combine(m, s, om, os);
    }
    __shared__ float sm[32], ss[32];
    int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) { sm[warp] = m; ss[warp] = s; }
    __syncthreads();
    if (warp == 0) {
        int nwarps = blockDim.x / 32;
        m = lane < nwarps ? sm[lane] : -1e30f;
        s = lane < nwarps ? ss[lane] : 0.f;
        for (int off = 16; off > 0; off >>= 1) {
            float om = __shfl_xor_sync(0xffffffff, m, off);
            float os = __shfl_xor_sync(0xffffffff, s, off);
            combine(m, s, om, os);
        }
        if (lane == 0) { sm[0] = m; ss[0] = s; }
    }
    __syncthreads();
    const float row_max = sm[0], inv_sum = 1.f / ss[0];
    for (long j = threadIdx.x; j < n_cols; j += blockDim.x) {
        yr[j] = __expf(xr[j] - row_max) * inv_sum;
    }
}

torch::Tensor softmax_rows(torch::Tensor x) {
    TORCH_CHECK(x.is_cuda(), "x must be a CUDA tensor, got device ", x.device());
    TORCH_CHECK(x.dim() == 2, "x must be 2-d, got ", x.dim(), " dims");
    TORCH_CHECK(x.scalar_type() == torch::kFloat, "x must be float32, got ", x.scalar_type());
    TORCH_CHECK(x.is_contiguous(), "x must be contiguous");
    auto y = torch::empty_like(x);
    const long n_rows = x.size(0), n_cols = x.size(1);
    softmax_rows_kernel<<<n_rows, 1024, 0, at::cuda::getCurrentCUDAStream()>>>(
        y.data_ptr<float>(), x.data_ptr<float>(), n_cols);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_CPP_SRC = "torch::Tensor softmax_rows(torch::Tensor x);"

_ext = load_inline(name="kernelarc_softmax_rows", cpp_sources=_CPP_SRC, cuda_sources=_CUDA_SRC,
                   functions=["softmax_rows"], extra_cuda_cflags=["-O3", "-gencode=arch=compute_90,code=sm_90"],
                   verbose=False)


class ModelNew(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return _ext.softmax_rows(x)
