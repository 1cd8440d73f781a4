"""The pointwise-regions family: in any forward, each run of pointwise ops becomes one generated Triton
kernel (broadcast operands indexed through their strides, values needed later written out), every
other op is replayed as the reference computes it, and the result matches the reference."""

from __future__ import annotations

import re

import pytest
import torch

from kernelarc.agents.builtin.moves import families_for, get_family
from kernelarc.agents.builtin.moves.triton_pointwise_regions import find_regions

from .triton_harness import analysis_for, assert_guard_passes, assert_matches_reference, hopper_ptx, load_generated

FAMILY = "triton_pointwise_regions"


def test_family_serves_fusion():
    assert get_family(FAMILY) in families_for("fusion")


def test_regions_split_at_library_ops_and_export_what_is_read_later():
    analysis = analysis_for("builtin_conv_pointwise_tail")
    regions = find_regions(analysis)
    ops = [[n.target for n in r.nodes] for r in regions]
    assert ops[0][:3] == ["aten.add.Tensor", "aten.mul.Tensor", "aten.relu_"]  # bias, scale, in-place relu
    assert "self.bias" in regions[0].tensors and "self.scale" in regions[0].tensors
    assert len(regions[0].exports) == 2  # the relu's output feeds the mean; the tail's value, the final add
    assert all("aten.convolution" not in o and "aten.mean.dim" not in o for o in ops)


def test_the_forward_matches_the_reference_with_library_ops_kept(tmp_path):
    analysis = analysis_for("builtin_conv_pointwise_tail")
    family = get_family(FAMILY)
    assert family.applies(analysis) is None
    move = family.render(analysis, family.space(analysis)[0])
    assert move.source.count("@triton.jit") == len(find_regions(analysis)) >= 2
    assert "torch.ops.aten.conv2d" in move.source and "torch.ops.aten.mean" in move.source
    assert_matches_reference(move, analysis, tmp_path, seeds=(3, 4))


def test_a_whole_pointwise_forward_is_one_region(tmp_path):
    analysis = analysis_for("builtin_elementwise_chain")
    family = get_family(FAMILY)
    move = family.render(analysis, family.space(analysis)[0])
    assert move.source.count("@triton.jit") == 1
    assert_matches_reference(move, analysis, tmp_path)


def test_a_forward_without_pointwise_ops_is_named():
    assert "no run of pointwise ops" in get_family(FAMILY).applies(analysis_for("builtin_sum_reduction"))


@pytest.mark.slow
def test_full_guard_accepts_it():
    analysis = analysis_for("builtin_conv_pointwise_tail")
    family = get_family(FAMILY)
    assert_guard_passes(family.render(analysis, family.space(analysis)[0]), analysis)


def test_a_scalar_region_after_a_full_reduction_is_written(tmp_path):
    """A 0-d region has no dims: its kernel once had `n_elements, ,` in its arguments (KLDivLoss)."""
    analysis = analysis_for("builtin_scalar_tail")
    assert any(r.rank == 0 for r in find_regions(analysis))
    family = get_family(FAMILY)
    move = family.render(analysis, family.space(analysis)[0])
    assert_matches_reference(move, analysis, tmp_path)


def test_the_kernel_indexes_in_64_bits_only_where_an_offset_may_pass_2_31():
    import math

    import triton

    from kernelarc.agents.builtin.moves.triton_pointwise_regions import PLAN

    helpers: dict = {"torch": torch, "math": math, "triton": triton}
    exec(PLAN, helpers)  # the host helper every generated module carries
    plan = helpers["_region_plan"]

    def index_64(*tensors):
        return plan(tensors, 1024)[4]

    assert not index_64(torch.empty(4096, 4096), torch.empty(4096, 1))
    big = torch.empty(2**31, device="meta")  # 8 GiB of fp32, without the memory
    assert index_64(big) and not index_64(big[:16])  # offsets run over the view, not its storage
    assert index_64(torch.empty(2, 2**31, device="meta")[:, :16].t())  # 16 x 2 elements, the last 2**31 + 15 away
    assert not index_64(torch.empty(2**30, dtype=torch.float16, device="meta")[:16].expand(4, 16))
    shape, n, strides, flat, _, grid = plan((torch.empty(8, 1), torch.empty(8, 4)), 16)
    assert (shape, n, strides, flat, grid) == ((8, 4), 32, (1, 0, 4, 1), (False, True), (2,))
    analysis = analysis_for("builtin_conv_pointwise_tail")  # broadcast operands: the strided path runs
    source = get_family(FAMILY).render(analysis, get_family(FAMILY).space(analysis)[0]).source
    assert source.count("INDEX_64=index_64") == source.count("@triton.jit") and "if INDEX_64:" in source
    assert source.count("_region_plan((") == source.count("@triton.jit")  # once per layout, not per call


@pytest.mark.slow
def test_the_kernels_compile_for_the_h200_and_index_in_32_bits_unless_told(tmp_path):
    pytest.importorskip("triton.backends.nvidia")
    analysis = analysis_for("builtin_conv_pointwise_tail")
    source = get_family(FAMILY).render(analysis, get_family(FAMILY).space(analysis)[0]).source
    kernels = re.findall(r"@triton.jit\ndef (\w+)\((.*?)\):", source, re.S)
    assert kernels
    jobs = [(name, {**{flat: False for flat in re.findall(r"(\w+_FLAT): tl.constexpr", params)},  # the indexed path
                    "INDEX_64": index_64, "BLOCK_SIZE": 1024})
            for name, params in kernels for index_64 in (False, True)]
    for (name, constexprs), ptx in zip(jobs, hopper_ptx(source, tmp_path, jobs)):
        assert ("div.s64" in ptx or "rem.s64" in ptx) is constexprs["INDEX_64"], name
