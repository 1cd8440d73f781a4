"""The Triton reduction families: sum over a middle dim (strided) and amax over the last dim, in one
pass and in two stages, against the reference in the interpreter; the full guard for one."""

from __future__ import annotations

import dataclasses

import pytest

from kernelarc.agents.builtin.moves import families_for, get_family

from .triton_harness import analysis_for, assert_guard_passes, assert_matches_reference


def _long(analysis):
    """The same task, its facts claiming a long reduction (the kernels read the real sizes at run time)."""
    raw = analysis.facts["reduction"]
    shape = list(raw["input_shape"])
    shape[raw["dims"][0]] = 4096
    return dataclasses.replace(analysis, facts={**analysis.facts, "reduction": {**raw, "input_shape": tuple(shape)}})


def test_families_serve_reduction():
    assert {get_family("triton_reduction"), get_family("triton_reduction_split")} <= set(families_for("reduction"))


@pytest.mark.parametrize("fixture", ["builtin_sum_reduction", "builtin_amax_reduction"])
def test_one_pass_matches_reference(fixture, tmp_path):
    analysis = analysis_for(fixture)
    family = get_family("triton_reduction")
    assert family.applies(analysis) is None
    space = family.space(analysis)
    move = family.render(analysis, space[0])
    assert_matches_reference(move, analysis, tmp_path)
    small = dict(BLOCK_P=4, BLOCK_R=8, num_warps=2)  # several programs and a ragged last chunk
    assert_matches_reference(family.render(analysis, small), analysis, tmp_path)


@pytest.mark.parametrize("fixture", ["builtin_sum_reduction", "builtin_amax_reduction"])
def test_two_stage_matches_reference(fixture, tmp_path):
    analysis = analysis_for(fixture)
    family = get_family("triton_reduction_split")
    assert "two-stage" in family.applies(analysis)
    analysis = _long(analysis)
    assert family.applies(analysis) is None
    assert all("SPLIT" in p for p in family.space(analysis))
    move = family.render(analysis, dict(BLOCK_P=8, BLOCK_R=4, SPLIT=3, num_warps=2))
    assert "_partial_kernel" in move.source and "_finish_kernel" in move.source
    assert_matches_reference(move, analysis, tmp_path)


def test_applies_explains_why_not():
    family = get_family("triton_reduction")
    assert "returns v_mul_1" in family.applies(analysis_for("builtin_rmsnorm"))  # the mean inside RMSNorm
    analysis = analysis_for("builtin_sum_reduction")
    gap = dataclasses.replace(analysis, facts={**analysis.facts,
                                               "reduction": {**analysis.facts["reduction"], "dims": [0, 2]}})
    assert "not adjacent" in family.applies(gap)


@pytest.mark.slow
def test_full_guard_accepts_the_strided_sum():
    analysis = analysis_for("builtin_sum_reduction")
    family = get_family("triton_reduction")
    assert_guard_passes(family.render(analysis, family.space(analysis)[0]), analysis)
