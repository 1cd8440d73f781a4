"""Honest Triton candidate for KernelBench level-2 76_Gemm_Add_ReLU: y = relu(x @ W^T + b), fp32.

A tiled GEMM with GROUP_M swizzling, fp32 accumulation in IEEE precision (tf32 would miss the 1e-4
tolerance at K=8192), bias and ReLU fused into the epilogue: one pass over the output instead of three.
FLOPs 2*M*N*K; bytes (M*K + N*K + N + M*N) * 4.
"""

import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _gemm_bias_relu_kernel(y_ptr, stride_ym, stride_yn, x_ptr, stride_xm, stride_xk, w_ptr, stride_wn, stride_wk,
                           b_ptr, M, N, K, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                           GROUP_M: tl.constexpr):
    pid = tl.program_id(0)
    num_pid_m = tl.cdiv(M, BLOCK_M)
    num_pid_n = tl.cdiv(N, BLOCK_N)
    group = pid // (GROUP_M * num_pid_n)
    first_m = group * GROUP_M
    group_m = min(num_pid_m - first_m, GROUP_M)
    pid_m = first_m + (pid % (GROUP_M * num_pid_n)) % group_m
    pid_n = (pid % (GROUP_M * num_pid_n)) // group_m
    offs_m = (pid_m * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    offs_n = (pid_n * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)
    offs_k = tl.arange(0, BLOCK_K)
    x_ptrs = x_ptr + offs_m[:, None] * stride_xm + offs_k[None, :] * stride_xk
    w_ptrs = w_ptr + offs_n[None, :] * stride_wn + offs_k[:, None] * stride_wk
    accumulator = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for k in range(0, tl.cdiv(K, BLOCK_K)):
        k_mask = offs_k < K - k * BLOCK_K
        a = tl.load(x_ptrs, mask=(offs_m[:, None] < M) & k_mask[None, :], other=0.0)
        b = tl.load(w_ptrs, mask=(offs_n[None, :] < N) & k_mask[:, None], other=0.0)
        accumulator = tl.dot(a, b, accumulator, input_precision="ieee")
        x_ptrs += BLOCK_K * stride_xk
        w_ptrs += BLOCK_K * stride_wk
    bias = tl.load(b_ptr + offs_n, mask=offs_n < N, other=0.0)
    y = tl.maximum(accumulator + bias[None, :], 0.0)
    y_mask = (offs_m[:, None] < M) & (offs_n[None, :] < N)
    tl.store(y_ptr + offs_m[:, None] * stride_ym + offs_n[None, :] * stride_yn, y, mask=y_mask)


def gemm_bias_relu(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
    M, K = x.shape
    N = weight.shape[0]
    y = torch.empty((M, N), device=x.device, dtype=x.dtype)
    grid = (triton.cdiv(M, 64) * triton.cdiv(N, 128),)
    _gemm_bias_relu_kernel[grid](y, y.stride(0), y.stride(1), x, x.stride(0), x.stride(1), weight, weight.stride(0),
                                 weight.stride(1), bias, M, N, K, BLOCK_M=64, BLOCK_N=128, BLOCK_K=32, GROUP_M=8,
                                 num_warps=4, num_stages=3)
    return y


class ModelNew(nn.Module):
    def __init__(self, in_features, out_features, bias_shape):
        super().__init__()
        self.gemm = nn.Linear(in_features, out_features, bias=False)
        self.bias = nn.Parameter(torch.randn(bias_shape))

    def forward(self, x):
        return gemm_bias_relu(x, self.gemm.weight, self.bias)
