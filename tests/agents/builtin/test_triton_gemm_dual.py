"""The dual GEMM family (act(A @ Wg) * (A @ Wu) in one kernel): the pattern and where it is not found,
the parameter space and its shared-memory bound, sources that match the reference in the interpreter,
and the full guard for the SwiGLU shape."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from kernelarc.agents.builtin.analysis import analyze
from kernelarc.agents.builtin.moves import families_for, get_family
from kernelarc.agents.builtin.moves.triton_common import SMEM_PER_BLOCK_BYTES
from kernelarc.task import load_task

from .builtin_tasks import task_file
from .triton_harness import analysis_for, assert_gate_passes, assert_guard_passes, assert_matches_reference

SUITE_TASK = Path(__file__).resolve().parents[3] / "bench" / "suites" / "h200" / "swiglu_gate_up.py"
DUAL = "triton_gemm_dual"
SMALL_TILES = dict(BLOCK_M=16, BLOCK_N=32, BLOCK_K=32, GROUP_M=2, num_warps=2, num_stages=2)
"""Several tiles each way (a partial one along N) and several K steps on the 32 x 48 x 64 fixture."""

TWO_INPUTS_TASK = '''import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.gate = nn.Linear(16, 24, bias=False)
        self.up = nn.Linear(16, 24, bias=False)

    def forward(self, x, y):
        return F.silu(self.gate(x)) * self.up(y)


def get_inputs():
    return [torch.randn(8, 16), torch.randn(8, 16)]


def get_init_inputs():
    return []
'''
NOT_RETURNED_TASK = (TWO_INPUTS_TASK
                     .replace("return F.silu(self.gate(x)) * self.up(y)",
                              "h = F.silu(self.gate(x)) * self.up(x)\n        return torch.cat([h, h])")
                     .replace("def forward(self, x, y)", "def forward(self, x)")
                     .replace("[torch.randn(8, 16), torch.randn(8, 16)]", "[torch.randn(8, 16)]"))
"""The product of one A exists but is only an operand of what the forward returns."""
KN_LAYOUT_TASK = '''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.w_gate = nn.Parameter(torch.randn(24, 40) * 0.2)
        self.w_up = nn.Parameter(torch.randn(24, 40) * 0.2)

    def forward(self, x):
        return torch.relu(torch.matmul(x, self.w_gate)) * torch.matmul(x, self.w_up)


def get_inputs():
    return [torch.randn(3, 5, 24)]


def get_init_inputs():
    return []
'''


@pytest.fixture(scope="module")
def suite_analysis():
    return analyze(load_task(SUITE_TASK))


def test_registered_under_fusion():
    assert get_family(DUAL) in families_for("fusion")


def test_suite_swiglu_gets_dual_points(suite_analysis):
    facts = suite_analysis.facts["gemm_dual"]
    assert (facts["M"], facts["N"], facts["K"], facts["a"]) == (4096, 11008, 4096, "x")
    assert facts["gate"]["b"] == "self.gate_proj.weight" and facts["up"]["b"] == "self.up_proj.weight"
    assert facts["activation"] == {"op": "silu"}
    # The single-GEMM fact and its families' reasons are unchanged.
    assert "computed inside the forward" in get_family("triton_gemm").applies(suite_analysis)
    family = get_family(DUAL)
    assert family.applies(suite_analysis) is None
    space = family.space(suite_analysis)
    assert space[0] == dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_warps=8, num_stages=3)
    assert all(family.resources(p, suite_analysis) <= SMEM_PER_BLOCK_BYTES for p in space)
    move = family.render(suite_analysis, space[0])
    assert_gate_passes(move, suite_analysis)
    assert "kernelarc" not in move.source.split('"""', 2)[2]  # only the docstring names the generator
    assert "gemm_dual(x, self.gate_proj.weight, self.up_proj.weight)" in move.source
    assert "738734374912 FLOPs" in move.source and len(move.claim) <= 160


def test_pattern_needs_one_a_and_a_returned_product(tmp_path):
    two_inputs = analyze(task_file(tmp_path, "two_inputs", TWO_INPUTS_TASK))
    assert "gemm" in two_inputs.facts and "gemm_dual" not in two_inputs.facts
    not_returned = analyze(task_file(tmp_path, "not_returned", NOT_RETURNED_TASK))
    assert "gemm" in not_returned.facts and "gemm_dual" not in not_returned.facts
    assert "no gemm_dual pattern" in get_family(DUAL).applies(not_returned)


def test_applies_wants_the_whole_forward():
    analysis = analysis_for("builtin_swiglu_fp16")
    assert get_family(DUAL).applies(analysis) is None
    more = dataclasses.replace(analysis, output_names=("v_mul", "v_linear"), returns_tuple=True)
    assert "returns v_mul, v_linear" in get_family(DUAL).applies(more)


def test_shared_memory_counts_both_weight_tiles():
    family = get_family(DUAL)
    fp32, fp16 = analysis_for("builtin_geglu_bias"), analysis_for("builtin_swiglu_fp16")
    point = dict(BLOCK_M=128, BLOCK_N=128, BLOCK_K=64, GROUP_M=8, num_warps=8, num_stages=3)
    assert family.resources(point, fp16) == (128 * 64 + 2 * 64 * 128) * 2 * 3 <= SMEM_PER_BLOCK_BYTES
    assert family.resources(point, fp32) == 2 * family.resources(point, fp16) > SMEM_PER_BLOCK_BYTES
    assert family.resources(point) == family.resources(point, fp32)  # without the analysis: 4-byte upper bound
    big = dataclasses.replace(fp32, facts={**fp32.facts, "gemm_dual": {**fp32.facts["gemm_dual"],
                                                                       "M": 4096, "N": 4096, "K": 4096}})
    space = family.space(big)
    assert space and all(family.resources(p, big) <= SMEM_PER_BLOCK_BYTES for p in space)
    assert not any(p["BLOCK_M"] == p["BLOCK_N"] == 128 and p["BLOCK_K"] == 64 for p in space)
    assert space[0]["precision"] == "ieee" and space[-1]["precision"] == "tf32"


@pytest.mark.parametrize("point", ["default", "small"])
def test_swiglu_fp16_matches_reference(point, tmp_path):
    analysis = analysis_for("builtin_swiglu_fp16")
    family = get_family(DUAL)
    move = family.render(analysis, family.space(analysis)[0] if point == "default" else SMALL_TILES)
    assert "_gemm_dual_kernel" in move.source and "autotune" not in move.source
    assert_matches_reference(move, analysis, tmp_path, seeds=(3, 4))


def test_geglu_with_biases_matches_reference(tmp_path):
    analysis = analysis_for("builtin_geglu_bias")
    facts = analysis.facts["gemm_dual"]
    assert facts["activation"] == {"op": "gelu", "approximate": "tanh"}
    assert (facts["gate"]["bias"], facts["up"]["bias"]) == ("self.gate.bias", "self.up.bias")
    family = get_family(DUAL)
    move = family.render(analysis, dict(SMALL_TILES, precision="ieee"))
    assert "bias_g_ptr" in move.source and "bias_u_ptr" in move.source
    assert_matches_reference(move, analysis, tmp_path)


def test_weights_stored_k_by_n_match_reference(tmp_path):
    analysis = analyze(task_file(tmp_path, "kn_layout", KN_LAYOUT_TASK))
    facts = analysis.facts["gemm_dual"]
    assert not facts["gate"]["trans_b"] and facts["activation"] == {"op": "relu"}
    family = get_family(DUAL)
    assert_matches_reference(family.render(analysis, dict(SMALL_TILES, precision="ieee")), analysis, tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("point", ["default", "small"])
def test_full_guard_accepts_the_dual_gemm(point):
    analysis = analysis_for("builtin_swiglu_fp16")
    family = get_family(DUAL)
    assert_guard_passes(family.render(analysis, family.space(analysis)[0] if point == "default" else SMALL_TILES),
                        analysis)
