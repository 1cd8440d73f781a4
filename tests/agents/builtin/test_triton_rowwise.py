"""The Triton row-wise families: softmax, layer_norm with a residual, rms_norm and cross-entropy,
whole rows and chunked rows, against the reference in the interpreter; the full guard for one."""

from __future__ import annotations

import dataclasses
import types

import pytest

from kernelarc.agents.builtin.moves import families_for, get_family
from kernelarc.agents.builtin.moves.triton_rowwise import row_points

from .triton_harness import analysis_for, assert_guard_passes, assert_matches_reference

CASES = ["builtin_softmax", "builtin_layernorm_residual", "builtin_rmsnorm", "builtin_cross_entropy"]


def test_families_serve_memory():
    assert {get_family("triton_rowwise"), get_family("triton_rowwise_looped")} <= set(families_for("memory"))


@pytest.mark.parametrize("fixture", CASES)
def test_whole_rows_match_reference(fixture, tmp_path):
    analysis = analysis_for(fixture)
    family = get_family("triton_rowwise")
    assert family.applies(analysis) is None
    space = family.space(analysis)
    assert all(p["BLOCK_SIZE"] >= analysis.facts["rowwise"]["cols"] for p in space)
    move = family.render(analysis, space[0])
    assert len(move.claim) <= 160
    assert_matches_reference(move, analysis, tmp_path)


@pytest.mark.parametrize("fixture", CASES)
def test_chunked_rows_match_reference(fixture, tmp_path):
    analysis = analysis_for(fixture)
    family = get_family("triton_rowwise_looped")
    if analysis.facts["rowwise"]["cols"] < 256:  # narrow rows: the family declines, so widen the claim
        assert "fit one block" in family.applies(analysis)
        analysis = dataclasses.replace(analysis, facts={**analysis.facts,
                                                        "rowwise": {**analysis.facts["rowwise"], "cols": 4096}})
    assert family.applies(analysis) is None
    move = family.render(analysis, dict(BLOCK_SIZE=32, num_warps=4))  # several chunks per row, a ragged last one
    assert "for chunk in range(0, tl.cdiv(n_cols, BLOCK_SIZE))" in move.source
    assert_matches_reference(move, analysis, tmp_path)


def test_residual_add_is_fused_into_the_norm():
    move = get_family("triton_rowwise").render(analysis_for("builtin_layernorm_residual"),
                                               dict(BLOCK_SIZE=64, ROWS_PER_PROGRAM=4, num_warps=4))
    assert "return layer_norm(x, residual, self.norm.weight, self.norm.bias)" in move.source


def test_applies_explains_why_not():
    family = get_family("triton_rowwise")
    assert "no rowwise pattern" in family.applies(analysis_for("builtin_sum_reduction"))
    softmax = analysis_for("builtin_softmax")
    other_dim = dataclasses.replace(softmax, facts={**softmax.facts, "rowwise": {**softmax.facts["rowwise"], "dim": 0}})
    assert "only the last dim" in family.applies(other_dim)
    wide = dataclasses.replace(softmax, facts={**softmax.facts, "rowwise": {**softmax.facts["rowwise"],
                                                                            "cols": 131072}})
    assert "looped" in family.applies(wide)


@pytest.mark.slow
def test_full_guard_accepts_cross_entropy():
    analysis = analysis_for("builtin_cross_entropy")
    family = get_family("triton_rowwise")
    assert_guard_passes(family.render(analysis, family.space(analysis)[0]), analysis)


@pytest.mark.parametrize("rows, cols, first", [
    (8192, 4096, dict(BLOCK_SIZE=4096, ROWS_PER_PROGRAM=1, num_warps=8)),    # 16 values per thread, not 64
    (16, 2048, dict(BLOCK_SIZE=2048, ROWS_PER_PROGRAM=2, num_warps=8)),
    (16384, 8192, dict(BLOCK_SIZE=8192, ROWS_PER_PROGRAM=1, num_warps=16)),  # rmsnorm_bf16's winner on the H200
    (4096, 256, dict(BLOCK_SIZE=256, ROWS_PER_PROGRAM=8, num_warps=4)),      # narrow rows: several per program
])
def test_whole_row_points_start_at_sixteen_values_per_thread(rows, cols, first):
    points = row_points(types.SimpleNamespace(rows=rows, cols=cols), looped=False)
    assert points[0] == first
    assert len(points) == len({tuple(sorted(p.items())) for p in points})  # each point once
