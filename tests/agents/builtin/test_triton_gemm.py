"""The Triton GEMM families: applicability, parameter space, shared-memory estimate, rendered sources
that pass the gate and match the reference in the interpreter, and the full guard for one."""

from __future__ import annotations

import dataclasses

import pytest

from kernelarc.agents.builtin.moves import families_for, get_family
from kernelarc.agents.builtin.moves.triton_common import SMEM_PER_BLOCK_BYTES

from .triton_harness import analysis_for, assert_guard_passes, assert_matches_reference

GEMM_FAMILIES = ["triton_gemm", "triton_gemm_epilogue", "triton_gemm_persistent", "triton_gemm_tma",
                 "triton_gemm_splitk"]


def test_families_registered_under_their_strategies():
    assert get_family("triton_gemm") in families_for("tensor_cores")
    assert get_family("triton_gemm_epilogue") in families_for("fusion")
    assert get_family("triton_gemm_persistent") in families_for("scheduling")
    assert get_family("triton_gemm_tma") in families_for("arch")
    assert get_family("triton_gemm_splitk") in families_for("reduction")


@pytest.mark.parametrize("name", ["triton_gemm", "triton_gemm_epilogue", "triton_gemm_persistent"])
def test_fp32_bias_gelu_matches_reference(name, tmp_path):
    analysis = analysis_for("builtin_gemm_bias_gelu")
    family = get_family(name)
    assert family.applies(analysis) is None
    space = family.space(analysis)
    assert space[0]["precision"] == "ieee" and space[-1]["precision"] == "tf32"
    move = family.render(analysis, space[0])
    assert move.family == name and len(move.claim) <= 160
    assert "_gemm_kernel" in move.source and "def gemm(" in move.source and "autotune" not in move.source
    assert_matches_reference(move, analysis, tmp_path)


@pytest.mark.parametrize("name", ["triton_gemm", "triton_gemm_tma", "triton_gemm_splitk"])
def test_fp16_skinny_residual_epilogue_matches_reference(name, tmp_path):
    analysis = analysis_for("builtin_gemm_skinny_fp16")
    family = get_family(name)
    assert family.applies(analysis) is None
    space = family.space(analysis)
    assert all("precision" not in p for p in space)
    move = family.render(analysis, space[0])
    assert_matches_reference(move, analysis, tmp_path)


def test_splitk_with_several_splits_matches_reference(tmp_path):
    analysis = analysis_for("builtin_gemm_skinny_fp16")
    family = get_family("triton_gemm_splitk")
    point = dict(BLOCK_M=16, BLOCK_N=16, BLOCK_K=32, GROUP_M=8, SPLIT_K=3, num_warps=2, num_stages=2)
    move = family.render(analysis, point)
    assert "_splitk_reduce_kernel" in move.source
    assert_matches_reference(move, analysis, tmp_path)


def test_applies_explains_why_not():
    fp32 = analysis_for("builtin_gemm_bias_gelu")
    assert "fp16/bf16" in get_family("triton_gemm_tma").applies(fp32)
    assert "skinny" in get_family("triton_gemm_splitk").applies(fp32)
    softmax = analysis_for("builtin_softmax")
    assert "no gemm pattern" in get_family("triton_gemm").applies(softmax)
    bare = dataclasses.replace(fp32, facts={**fp32.facts, "gemm": {**fp32.facts["gemm"], "bias": None,
                                                                   "epilogue": [], "out": "v_linear"}})
    assert "returns v_gelu" in get_family("triton_gemm").applies(bare)
    bare = dataclasses.replace(bare, output_names=("v_linear",))
    assert get_family("triton_gemm").applies(bare) is None
    assert "no epilogue" in get_family("triton_gemm_epilogue").applies(bare)


def test_resources_flags_tiles_over_the_h200_limit():
    family = get_family("triton_gemm")
    fp32 = analysis_for("builtin_gemm_bias_gelu")
    big = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_warps=8, num_stages=4)
    assert family.resources(big, fp32) == (128 * 64 + 64 * 128) * 4 * 4 > SMEM_PER_BLOCK_BYTES
    assert family.resources(big) == family.resources(big, fp32)  # without the analysis: 4-byte upper bound
    fp16 = analysis_for("builtin_gemm_skinny_fp16")
    assert family.resources(big, fp16) <= SMEM_PER_BLOCK_BYTES


@pytest.mark.slow
def test_full_guard_accepts_the_fused_gemm():
    analysis = analysis_for("builtin_gemm_bias_gelu")
    family = get_family("triton_gemm_epilogue")
    assert_guard_passes(family.render(analysis, family.space(analysis)[0]), analysis)


@pytest.mark.parametrize("name", ["triton_gemm", "triton_gemm_epilogue", "triton_gemm_persistent"])
def test_a_transposed_a_is_read_through_its_strides(name, tmp_path):
    """`A.T @ B.T`: the kernel reads the stored [K, M] A as it is (no copy), and matches the reference."""
    analysis = analysis_for("builtin_gemm_transposed_operands")
    family = get_family(name)
    assert family.applies(analysis) is None
    move = family.render(analysis, family.space(analysis)[0])
    assert "a = a.t()" in move.source and "gemm(a, b)" in move.source and ".contiguous()" not in move.source
    assert_matches_reference(move, analysis, tmp_path)


def test_templates_that_need_a_stored_k_major_refuse_a_transposed_a():
    analysis = analysis_for("builtin_gemm_transposed_operands")
    assert "transposed A" in get_family("triton_gemm_tma").applies(analysis)
    assert "computed inside the forward" in get_family("cuda_small_gemm").applies(analysis)


@pytest.mark.parametrize("product, dtype", [
    ("torch.addmm(self.bias, a.t(), self.weight)", "float16"),  # a bias through addmm, half precision
    ("torch.mm(a.permute(1, 0), self.weight) + self.bias", "float32"),  # the bias as an epilogue add
])
def test_other_spellings_and_dtypes_of_a_transposed_a_match_the_reference(product, dtype, tmp_path):
    from kernelarc.agents.builtin.analysis import analyze
    from kernelarc.task import load_task

    path = tmp_path / "task.py"
    path.write_text(
        "import torch\nimport torch.nn as nn\n\n"
        "class Model(nn.Module):\n    def __init__(self):\n        super().__init__()\n"
        f"        self.weight = nn.Parameter(torch.randn(48, 24, dtype=torch.{dtype}))\n"
        f"        self.bias = nn.Parameter(torch.randn(24, dtype=torch.{dtype}))\n\n"
        f"    def forward(self, a):\n        return {product}\n\n"
        f"def get_inputs():\n    return [torch.randn(48, 40, dtype=torch.{dtype})]\n\n"
        "def get_init_inputs():\n    return []\n")
    analysis = analyze(load_task(path))
    family = get_family("triton_gemm")
    assert family.applies(analysis) is None
    move = family.render(analysis, family.space(analysis)[0])
    assert "a = a.t()" in move.source
    assert_matches_reference(move, analysis, tmp_path)
