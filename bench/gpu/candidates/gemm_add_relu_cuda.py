"""Honest CUDA C++ candidate (load_inline) for KernelBench level-2 76_Gemm_Add_ReLU.

The GEMM stays on cuBLAS (torch.mm, fp32); bias add and ReLU are fused into one CUDA kernel that
runs in place on the GEMM output: two elementwise passes of the reference become one.
"""

import torch
import torch.nn as nn
from torch.utils.cpp_extension import load_inline

_CUDA_SRC = r"""
#include <torch/extension.h>
#include <ATen/cuda/CUDAContext.h>

__global__ void bias_relu_kernel(float* __restrict__ y, const float* __restrict__ bias, long n, long n_cols) {
    long i = (long)blockIdx.x * blockDim.x + threadIdx.x;
    long stride = (long)gridDim.x * blockDim.x;
    for (; i < n; i += stride) {
        float v = y[i] + bias[i % n_cols];
        y[i] = v > 0.f ? v : 0.f;
    }
}

torch::Tensor bias_relu_(torch::Tensor y, torch::Tensor bias) {
    TORCH_CHECK(y.is_cuda() && bias.is_cuda(), "y and bias must be CUDA tensors");
    TORCH_CHECK(y.scalar_type() == torch::kFloat && bias.scalar_type() == torch::kFloat, "float32 expected, got ",
                y.scalar_type(), " and ", bias.scalar_type());
    TORCH_CHECK(y.is_contiguous() && y.dim() == 2, "y must be a contiguous 2-d tensor");
    TORCH_CHECK(bias.numel() == y.size(1), "bias has ", bias.numel(), " elements, expected ", y.size(1));
    const long n = y.numel();
    const int threads = 256;
    const int blocks = (int)std::min<long>((n + threads - 1) / threads, 132L * 32);
    bias_relu_kernel<<<blocks, threads, 0, at::cuda::getCurrentCUDAStream()>>>(
        y.data_ptr<float>(), bias.data_ptr<float>(), n, y.size(1));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return y;
}
"""

_ext = load_inline(name="kernelarc_bias_relu", cpp_sources="torch::Tensor bias_relu_(torch::Tensor y, torch::Tensor bias);",
                   cuda_sources=_CUDA_SRC, functions=["bias_relu_"],
                   extra_cuda_cflags=["-O3", "-gencode=arch=compute_90,code=sm_90"], verbose=False)


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, bias_shape):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        return _ext.bias_relu_(torch.mm(x, self.gemm.weight.t()), self.bias)
