"""The GEMM-then-row-wise family: a GEMM with its pointwise epilogue, then a row-wise kernel over its
result. The fixture's candidates match the reference and pass the guard in the interpreter; the suite
task gets points without running; forwards that are not such a chain give a reason."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelarc.agents.builtin.analysis import analyze
from kernelarc.agents.builtin.moves import families_for, get_family
from kernelarc.agents.builtin.moves.triton_common import SMEM_PER_BLOCK_BYTES
from kernelarc.task import load_task

from .builtin_tasks import task_file
from .triton_harness import analysis_for, assert_gate_passes, assert_guard_passes, assert_matches_reference

SUITE = Path(__file__).resolve().parents[3] / "bench" / "suites" / "h200"
FIXTURE = "builtin_gemm_gelu_layernorm"


def chain_task(body: str) -> str:
    """A KernelBench task whose forward is `body` over h = gelu(linear(x)) (fp32, 6 x 16 -> 24)."""
    return f'''import torch
import torch.nn as nn


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.linear = nn.Linear(16, 24)
        self.norm = nn.LayerNorm(24)

    def forward(self, x):
        h = torch.nn.functional.gelu(self.linear(x))
        {body}


def get_inputs():
    return [torch.randn(6, 16)]


def get_init_inputs():
    return []
'''


def test_registered_under_fusion():
    assert get_family("gemm_then_rowwise") in families_for("fusion")


def test_default_point_matches_reference(tmp_path):
    analysis = analysis_for(FIXTURE)
    family = get_family("gemm_then_rowwise")
    assert family.applies(analysis) is None
    space = family.space(analysis)
    move = family.render(analysis, space[0])
    assert move.family == "gemm_then_rowwise" and len(move.claim) <= 160
    assert "_gemm_kernel" in move.source and "_layer_norm_kernel" in move.source
    assert "return layer_norm(gemm(x, self.linear.weight, self.linear.bias), self.norm.weight, self.norm.bias)" \
        in move.source
    assert "import kernelarc" not in move.source and "from kernelarc" not in move.source
    assert_matches_reference(move, analysis, tmp_path)


def test_rows_spanning_several_gemm_tiles_match_reference(tmp_path):
    analysis = analysis_for(FIXTURE)
    point = dict(BLOCK_M=16, BLOCK_N=16, BLOCK_K=32, GROUP_M=2, num_warps=2, num_stages=2, precision="ieee",
                 ROW_BLOCK=64, ROWS_PER_PROGRAM=4, row_warps=2)  # 3 column tiles per row, 2 ragged row tiles
    assert_matches_reference(get_family("gemm_then_rowwise").render(analysis, point), analysis, tmp_path)


def test_the_guard_passes():
    analysis = analysis_for(FIXTURE)
    family = get_family("gemm_then_rowwise")
    assert_guard_passes(family.render(analysis, family.space(analysis)[0]), analysis)


def test_the_suite_task_gets_points_that_fit():
    analysis = analyze(load_task(SUITE / "gemm_gelu_layernorm.py"))  # meta tensors: nothing of 4096^2 is allocated
    family = get_family("gemm_then_rowwise")
    assert family.applies(analysis) is None
    space = family.space(analysis)
    assert space[0]["BLOCK_M"] == 128 and space[0]["ROW_BLOCK"] == 4096
    assert len({(p["ROWS_PER_PROGRAM"], p["row_warps"]) for p in space}) > 1  # the row-wise kernel varies too
    assert all(family.resources(p, analysis) <= SMEM_PER_BLOCK_BYTES for p in space[:3])
    assert any(family.resources(p, analysis) > SMEM_PER_BLOCK_BYTES for p in space)  # 128x128x128 s4 bf16
    move = family.render(analysis, space[0])
    assert_gate_passes(move, analysis)
    assert "gelu" in move.claim and "layer_norm" in move.claim
    for name in ("triton_gemm_epilogue", "triton_rowwise"):
        assert get_family(name).applies(analysis) is not None  # only the chain covers this forward


@pytest.mark.parametrize(("body", "reason"), [
    ("return self.norm(h) + h", "is also read by"),
    ("return self.norm(h), h", "also returns the GEMM's result"),
    ("return self.norm(h.flip(0))", "not the GEMM's result"),
])
def test_a_forward_that_is_not_the_chain_gives_a_reason(body, reason, tmp_path):
    analysis = analyze(task_file(tmp_path, "chain", chain_task(body)))
    family = get_family("gemm_then_rowwise")
    why = family.applies(analysis)
    assert why is not None and reason in why and "\n" not in why, why
    assert family.space(analysis) == []
    with pytest.raises(ValueError, match="cannot render"):
        family.render(analysis, dict(BLOCK_M=16, BLOCK_N=16, BLOCK_K=16, GROUP_M=8, num_warps=4, num_stages=2))


@pytest.mark.parametrize(("fixture", "reason"), [
    ("builtin_gemm_bias_gelu", "no rowwise pattern"),
    ("builtin_layernorm_gelu", "no gemm pattern"),
])
def test_a_missing_pattern_gives_a_reason(fixture, reason):
    why = get_family("gemm_then_rowwise").applies(analysis_for(fixture))
    assert why is not None and reason in why, why
