"""The headers a generated C++ extension's translation units include: what its code uses, never torch's
umbrella headers, because the build is what a native candidate waits for.

`load_inline` prepends `<torch/extension.h>` (torch's C++ API whole) to the host translation unit and
`<torch/types.h>` (ATen whole) to the CUDA one unless called with `no_implicit_headers=True` (torch 2.8
and later). Measured on the 2-core development CPU on 2026-12-04 (g++ 13 and nvcc 13.0, `-std=c++20`,
torch 2.13's headers; `python bench/extension_build_times.py FAMILY FIXTURE`, one compile of each unit per
run, docs/benchmarks.md "Session 26"): a cuda_rowwise candidate's host unit took 19.7-21.8 s with the
umbrella header and 8.1-9.2 s with these, its CUDA unit 25.0-28.3 s and 5.8-6.9 s; cuda_small_gemm's
20.4 / 25.5 s and 7.9 / 6.1 s; cpp_forward's host unit (its only one off the GPU) 21.0 and 9.3 s. ninja
compiles the two units at once, so a build takes about the slower one: 25-28 s before, 8-9 s after. On
the H200 a round holding such a candidate waited 29-41 s for 9-14 s of evaluations (session 25).

The host unit binds through pybind11 with torch's type casters (`torch/csrc/utils/pybind.h`) and
`torch::wrap_pybind_function` (`torch/csrc/Exceptions.h`), which `load_inline`'s generated
`PYBIND11_MODULE` calls; `ATen/Operators.h` declares every `at::_ops` entry point (1.2 s), which
cpp_forward's statements call.
"""

HOST_INCLUDES = """#include <ATen/core/Tensor.h>
#include <ATen/Operators.h>
#include <ATen/core/grad_mode.h>
#include <ATen/ops/empty.h>
#include <torch/csrc/Exceptions.h>
#include <torch/csrc/utils/pybind.h>
"""
"""The host translation unit's torch headers (pass `no_implicit_headers=True` to `load_inline`)."""

CUDA_INCLUDES = """#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
"""
"""The nvcc translation unit's torch headers: c10's CUDA runtime helpers and the 16-bit float types
(`at::BFloat16` is c10's, through ATen's `using namespace c10`); ATen's own would pull in cuBLAS and
cuSPARSE."""

__all__ = ["CUDA_INCLUDES", "HOST_INCLUDES"]
