"""cuda_small_gemm: a launch-bound GEMM and its epilogue as one CUDA kernel launched from C++. Off the
GPU the serial C++ fallback applies the same epilogue function, so the guard checks it here (one C++
build per case, about 10 s on 2 cores); nvcc compiles the kernels for sm_90 where a CUDA toolkit
exists. The kernel cannot run here: docs/benchmarks.md records it on the H200."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from kernelarc.agents.builtin.analysis import analyze
from kernelarc.agents.builtin.moves import get_family
from kernelarc.task import load_task

from .builtin_tasks import example_analysis
from .cuda_harness import (
    assert_first_point_passes_the_guard, compile_cuda_sides, first_points, needs_compiler, needs_nvcc,
)
from .triton_harness import analysis_for

CASES = ["builtin_gemm_bias_gelu", "builtin_gemm_skinny_fp16"]
"""14 rows (a warp's last two rows masked) fp32 with bias and GELU; fp16 with bias, ReLU, a scalar and
a full residual."""
FAMILY = get_family("cuda_small_gemm")
SUITE = Path(__file__).resolve().parents[3] / "bench" / "suites" / "h200"


@needs_compiler
@pytest.mark.slow
@pytest.mark.parametrize("fixture", CASES)
@pytest.mark.heavy
def test_the_guard_passes_the_epilogue_on_the_cpu(fixture):
    assert_first_point_passes_the_guard(FAMILY, fixture)


def test_the_residual_is_read_per_output_and_the_bias_per_column():
    source = FAMILY.render(analysis_for("builtin_gemm_skinny_fp16"), {"MR": 16, "NR": 2, "WARPS": 4}).source
    assert "static_cast<float>(g.bias[n])" in source and "static_cast<float>(g.residual[m * g.n + n])" in source
    assert 'TORCH_CHECK(residual.numel() == m * n' in source and "using C_T = at::Half;" in source
    module = re.search(r"kernelarc_cuda_small_gemm_[0-9a-f]{12}", source).group(0)
    assert f'"{module}_cuda" if _ON_GPU else "{module}"' in source  # the build cache keeps builds by name


def test_where_it_does_not_apply_it_says_why():
    assert FAMILY.applies(example_analysis("sol/rmsnorm_small")).startswith("SOL-ExecBench refuses C++ builds")
    assert FAMILY.applies(analyze(load_task(SUITE / "linear_bias_gelu.py"))).startswith("not launch-bound")
    assert "939,524,096 FMAs" in FAMILY.applies(analyze(load_task(SUITE / "gemm_decode_skinny.py")))
    if not torch.cuda.is_available():
        assert FAMILY.applies(analysis_for("builtin_gemm_bias_gelu")) == "a CUDA kernel: no CUDA device is visible"


def test_points_are_small_warp_tiles_capped_at_the_rows():
    assert FAMILY.space(analyze(load_task(SUITE / "mlp_relu_small.py"))) == [
        {"MR": 8, "NR": 4, "WARPS": 4}, {"MR": 4, "NR": 8, "WARPS": 8}, {"MR": 4, "NR": 4, "WARPS": 4},
        {"MR": 8, "NR": 8, "WARPS": 4}]
    assert {p["MR"] for p in FAMILY.space(analysis_for("builtin_gemm_skinny_fp16"))} <= {1, 2, 4, 8, 16}


def test_a_lane_reads_16_bytes_of_the_wider_operand_per_step():
    vec = {case: re.search(r"constexpr int VEC = (\d+);", source).group(1)
           for case, source in zip(CASES, first_points(FAMILY, CASES))}
    assert vec == {"builtin_gemm_bias_gelu": "4", "builtin_gemm_skinny_fp16": "8"}


@needs_nvcc
@pytest.mark.slow
@pytest.mark.heavy
def test_the_kernels_compile_for_sm90(tmp_path):
    ptx = compile_cuda_sides(first_points(FAMILY, CASES), tmp_path)
    assert ptx.count(".entry") == 2 * len(CASES)  # each: the 16-byte-run kernel and the scalar one
    assert "shfl.sync.bfly" in ptx and "ld.global.v4" in ptx  # warp reductions, 16-byte loads
