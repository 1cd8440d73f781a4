"""The lowered-regions family: the forward traced through ATen's decompositions, its reductions (over
any dims, kept or dropped, the variance in two passes) and pointwise runs as generated Triton kernels,
matching the reference."""

from __future__ import annotations

import pytest

from kernelarc.agents.builtin.moves import families_for, get_family
from kernelarc.agents.builtin.moves.conv_nodes import find_convs
from kernelarc.agents.builtin.moves.gemm_nodes import find_gemms
from kernelarc.agents.builtin.moves.scan_nodes import find_scans
from kernelarc.agents.builtin.moves.pool_nodes import find_pools
from kernelarc.agents.builtin.moves.triton_lowered_regions import find_reductions

from .triton_harness import analysis_for, assert_guard_passes, assert_matches_reference

FAMILY = "triton_lowered_regions"


def test_family_serves_fusion():
    assert get_family(FAMILY) in families_for("fusion")


def test_a_groupnorm_and_a_softmax_lower_to_reductions():
    lowered = analysis_for("builtin_groupnorm_softmax").lowered
    ops = sorted({r.op for r in find_reductions(lowered)})
    assert ops == ["max", "sum", "var"]  # var and mean (a sum) of the groups, the softmax's max and sum, the amax


@pytest.mark.parametrize("fixture", ["builtin_groupnorm_softmax", "builtin_layernorm_gelu", "builtin_softmax",
                                     "builtin_sum_reduction"])
def test_the_lowered_forward_matches_the_reference(fixture, tmp_path):
    analysis = analysis_for(fixture)
    family = get_family(FAMILY)
    assert family.applies(analysis) is None
    move = family.render(analysis, family.space(analysis)[0])
    assert "_reduce_" in move.source
    assert_matches_reference(move, analysis, tmp_path, seeds=(3, 4))


@pytest.mark.parametrize("fixture", ["builtin_gemm_gelu_layernorm", "builtin_attention_matmul_softmax"])
def test_gemms_are_generated_kernels_too(fixture, tmp_path):
    """A Linear (a transposed weight read through its strides, a bias) and batched matmuls."""
    analysis = analysis_for(fixture)
    family = get_family(FAMILY)
    assert find_gemms(analysis.lowered)
    move = family.render(analysis, family.space(analysis)[0])
    assert "_gemm_" in move.source
    assert_matches_reference(move, analysis, tmp_path, seeds=(3,))


@pytest.mark.parametrize("fixture", ["builtin_conv2d_strided_grouped", "builtin_conv3d", "builtin_conv_transpose1d",
                                     "builtin_conv_transpose2d_grouped", "builtin_conv_depthwise",
                                     "builtin_conv_pointwise_tail"])
def test_convolutions_are_generated_kernels_too(fixture, tmp_path):
    """1-D to 3-D, forward and transposed: stride, padding, dilation, groups, output padding, bias or none."""
    analysis = analysis_for(fixture)
    family = get_family(FAMILY)
    assert family.applies(analysis) is None
    assert find_convs(analysis.lowered)
    move = family.render(analysis, family.space(analysis)[0])
    assert "_conv_" in move.source and "torch.ops.aten.convolution" not in move.source
    assert_matches_reference(move, analysis, tmp_path, seeds=(3, 4))


@pytest.mark.parametrize(("fixture", "ops"), [("builtin_max_pool2d", ["max"]), ("builtin_avg_pool", ["avg", "avg"])])
def test_poolings_are_generated_kernels_too(fixture, ops, tmp_path):
    """Max with padding, dilation and ceil mode (indices unused); 1-D average counting the padding, 3-D
    average in ceil mode without it."""
    analysis = analysis_for(fixture)
    family = get_family(FAMILY)
    assert [p.op for p in find_pools(analysis.lowered)] == ops
    move = family.render(analysis, family.space(analysis)[0])
    assert "_pool_" in move.source
    assert not any(f"torch.ops.aten.{op}_pool" in move.source for op in ("max", "avg"))
    assert_matches_reference(move, analysis, tmp_path, seeds=(3, 4))


def test_a_forward_without_reductions_is_left_to_the_pointwise_family():
    assert "no reduction, scan, GEMM" in get_family(FAMILY).applies(analysis_for("builtin_elementwise_chain"))


@pytest.mark.slow
def test_full_guard_accepts_it():
    analysis = analysis_for("builtin_groupnorm_softmax")
    family = get_family(FAMILY)
    assert_guard_passes(family.render(analysis, family.space(analysis)[0]), analysis)


@pytest.mark.parametrize("block", [16, 1024])
def test_cumsum_and_cumprod_are_generated_scans(block, tmp_path):
    """A scan along a middle dim, in one block and across several (the carry between blocks)."""
    analysis = analysis_for("builtin_cumsum_cumprod")
    assert sorted(s.op for s in find_scans(analysis.lowered)) == ["prod", "sum"]
    family = get_family(FAMILY)
    move = family.render(analysis, {**family.space(analysis)[0], "BLOCK_SIZE": block})
    assert move.source.count("_call(") >= 2 and "tl.cumprod" in move.source
    assert_matches_reference(move, analysis, tmp_path, seeds=(3, 4))


@pytest.mark.parametrize("block", [16, 1024])
def test_argmin_and_argmax_are_generated_index_reductions(block, tmp_path):
    """The first extreme element's index, with ties, along one dim and over the flattened tensor."""
    analysis = analysis_for("builtin_argmin_argmax")
    assert sorted(r.op for r in find_reductions(analysis.lowered)) == ["argmax", "argmin"]
    family = get_family(FAMILY)
    move = family.render(analysis, {**family.space(analysis)[0], "BLOCK_SIZE": block})
    assert "torch.ops.aten.argmin" not in move.source and "torch.ops.aten.argmax" not in move.source
    assert_matches_reference(move, analysis, tmp_path, seeds=(3, 4))


def test_an_unrolled_loop_is_not_written_as_a_kernel_per_node():
    """160 one-column sums added up: over MAX_KERNELS for both generating families; the reduction family
    folds them."""
    analysis = analysis_for("builtin_unrolled_rowsum")
    for name in (FAMILY, "triton_pointwise_regions"):
        assert "generated kernels (over 128)" in get_family(name).applies(analysis)
    assert get_family("triton_reduction").applies(analysis) is None
