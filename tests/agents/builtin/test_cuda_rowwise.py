"""cuda_rowwise: the row-wise forward as one CUDA kernel launched from C++. Off the GPU the same row
template runs as a serial C++ loop, so the guard checks here the maths the GPU runs (one C++ build,
about 10 s on 2 cores, per case); nvcc compiles the CUDA side for sm_90 where a CUDA toolkit exists.
It cannot run here: docs/benchmarks.md records it on the H200."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

from kernelarc.agents.builtin.analysis import analyze
from kernelarc.agents.builtin.moves import get_family
from kernelarc.agents.builtin.moves.cuda_common import cpp_float, unreadable
from kernelarc.task import load_task

from .builtin_tasks import example_analysis
from .cuda_harness import (
    assert_first_point_passes_the_guard, compile_cuda_sides, first_points, needs_compiler, needs_nvcc,
)
from .triton_harness import analysis_for

CASES = ["builtin_rmsnorm_activations", "builtin_rmsnorm_cast_bf16", "builtin_softmax_epilogue",
         "builtin_layernorm_residual"]
"""Every pointwise op of the epilogue table, bf16 roundings and a per-column operand, the max-and-sum
path, and a residual add before a layer norm."""
FAMILY = get_family("cuda_rowwise")
SUITE = Path(__file__).resolve().parents[3] / "bench" / "suites" / "h200"


@needs_compiler
@pytest.mark.slow
@pytest.mark.parametrize("fixture", CASES)
@pytest.mark.heavy
def test_the_guard_passes_the_row_maths_on_the_cpu(fixture):
    assert_first_point_passes_the_guard(FAMILY, fixture)


def test_both_builds_are_named_literally_and_bf16_is_rounded_where_the_reference_holds_it():
    source = FAMILY.render(analysis_for("builtin_rmsnorm_cast_bf16"), {"THREADS": 128}).source
    module = re.search(r"kernelarc_cuda_rowwise_[0-9a-f]{12}", source).group(0)
    assert f'"{module}_cuda" if _ON_GPU else "{module}"' in source  # the build cache keeps builds by name
    assert "static_cast<float>(static_cast<at::BFloat16>(y))" in source
    assert "constexpr int THREADS = 128;" in source and "import kernelarc" not in source


def test_on_a_gpu_without_nvcc_it_says_so_instead_of_failing_a_build(monkeypatch, tmp_path):
    from torch.utils import cpp_extension

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(cpp_extension, "CUDA_HOME", None)
    assert FAMILY.applies(analysis_for("builtin_softmax_epilogue")).startswith("a CUDA kernel: torch finds no nvcc")
    (tmp_path / "bin").mkdir()
    (tmp_path / "bin" / "nvcc").touch()
    monkeypatch.setattr(cpp_extension, "CUDA_HOME", str(tmp_path))
    assert FAMILY.applies(analysis_for("builtin_softmax_epilogue")) is None


def test_where_it_does_not_apply_it_says_why():
    if not torch.cuda.is_available():
        assert FAMILY.applies(analysis_for("builtin_softmax_epilogue")) == "a CUDA kernel: no CUDA device is visible"
    assert FAMILY.applies(example_analysis("sol/rmsnorm_small")).startswith("SOL-ExecBench refuses C++ builds")
    assert FAMILY.applies(analysis_for("builtin_cross_entropy")).startswith("cross_entropy is not templated in CUDA")
    assert FAMILY.applies(analysis_for("builtin_layernorm_residual_sum")).startswith(
        "a forward that also returns the residual sum")
    assert "no rowwise pattern" in FAMILY.applies(analysis_for("builtin_gemm_bias_gelu"))


def test_threads_start_near_eight_columns_each():
    suite = analyze(load_task(SUITE / "layernorm_gelu_small.py"))  # 2048 columns
    assert FAMILY.space(suite) == [{"THREADS": 256}, {"THREADS": 128}, {"THREADS": 512}]
    assert FAMILY.space(analysis_for("builtin_layernorm_residual")) == [{"THREADS": 32}, {"THREADS": 64}]  # 48
    with pytest.raises(ValueError, match="no C\\+\\+ literal"):
        cpp_float(float("inf"))
    assert cpp_float(1e-05) == "1e-05f"
    assert unreadable([("x", "float32"), ("target", "int64")]) == "target is int64, which the kernel does not read"
    assert unreadable([("self.w", None)]) == "self.w is of an unknown dtype, which the kernel does not read"


@needs_nvcc
@pytest.mark.slow
@pytest.mark.heavy
def test_the_kernels_compile_for_sm90(tmp_path):
    """Every case's CUDA side in one translation unit through nvcc (about 10 s on 2 cores)."""
    ptx = compile_cuda_sides(first_points(FAMILY, CASES), tmp_path)
    assert ptx.count(".entry") == len(CASES) and "shfl.sync.bfly" in ptx  # one kernel each, warp reductions
