"""The Triton attention family: causal fp16 SDPA with a fused residual add and an fp32 matmul-softmax
attention, against the reference in the interpreter; the full guard for one."""

from __future__ import annotations

import dataclasses

import pytest

from kernelarc.agents.builtin.moves import families_for, get_family
from kernelarc.agents.builtin.moves.triton_common import SMEM_PER_BLOCK_BYTES

from kernelarc.agents.builtin.analysis import analyze
from kernelarc.task import load_task

from .triton_harness import TASKS, analysis_for, assert_guard_passes, assert_matches_reference

FAMILY = "triton_attention"


def test_family_serves_tensor_cores():
    assert get_family(FAMILY) in families_for("tensor_cores")


def test_causal_fp16_with_residual_matches_reference(tmp_path):
    analysis = analysis_for("builtin_attention")
    family = get_family(FAMILY)
    assert family.applies(analysis) is None
    space = family.space(analysis)
    move = family.render(analysis, space[0])
    assert "offs_m[:, None] >= offs_n[None, :]" in move.source and "residual_ptr" in move.source
    assert "return attention(q, k, v, residual)" in move.source
    assert_matches_reference(move, analysis, tmp_path)
    several_tiles = dict(BLOCK_M=16, BLOCK_N=16, num_warps=4, num_stages=2)  # 40 positions: ragged tiles
    assert_matches_reference(family.render(analysis, several_tiles), analysis, tmp_path)


def test_fp32_matmul_softmax_matches_reference(tmp_path):
    analysis = analysis_for("builtin_attention_matmul_softmax")
    family = get_family(FAMILY)
    assert family.applies(analysis) is None
    space = family.space(analysis)
    assert space[0]["precision"] == "ieee"
    move = family.render(analysis, dict(space[0], BLOCK_M=16, BLOCK_N=16))
    assert "offs_m[:, None] >= offs_n[None, :]" not in move.source and "0.25" in move.source
    assert_matches_reference(move, analysis, tmp_path)


def test_applies_explains_why_not():
    family = get_family(FAMILY)
    analysis = analysis_for("builtin_attention")
    masked = dataclasses.replace(analysis, facts={**analysis.facts,
                                                  "attention": {**analysis.facts["attention"], "attn_mask": "m"}})
    assert "mask" in family.applies(masked)
    odd = dataclasses.replace(analysis, facts={**analysis.facts,
                                               "attention": {**analysis.facts["attention"], "shape": (1, 2, 40, 24)}})
    assert "head dim" in family.applies(odd)
    assert "no attention pattern" in family.applies(analysis_for("builtin_softmax"))


def test_resources_counts_q_and_staged_kv_tiles():
    family = get_family(FAMILY)
    analysis = analysis_for("builtin_attention")
    point = dict(BLOCK_M=128, BLOCK_N=64, num_warps=8, num_stages=3)
    assert family.resources(point, analysis) == (128 + 2 * 64 * 3) * 16 * 2
    assert family.resources(dict(point, BLOCK_N=256, num_stages=4)) > SMEM_PER_BLOCK_BYTES


@pytest.mark.slow
def test_full_guard_accepts_causal_attention():
    analysis = analysis_for("builtin_attention")
    family = get_family(FAMILY)
    assert_guard_passes(family.render(analysis, family.space(analysis)[0]), analysis)


def test_masked_fill_attention_with_merged_heads_and_residual_matches_reference(tmp_path):
    analysis = analysis_for("builtin_attention_masked_merged")
    family = get_family(FAMILY)
    assert family.applies(analysis) is None
    move = family.render(analysis, dict(family.space(analysis)[0], BLOCK_M=16, BLOCK_N=16))
    assert "torch.equal(masked, torch.ones_like(masked).triu(1))" in move.source
    assert "out_heads = out.view(batch, seq_q, n_heads, head_dim).transpose(1, 2)" in move.source
    assert "offs_m[:, None] >= offs_n[None, :]" in move.source  # the causal kernel serves the triangle
    assert_matches_reference(move, analysis, tmp_path)


def test_a_mask_that_is_not_the_causal_triangle_goes_to_sdpa(tmp_path):
    fixture = TASKS / "builtin_attention_masked_merged.py"
    shifted = tmp_path / "attention_mask_offset_2.py"
    shifted.write_text(fixture.read_text().replace("TRIANGLE_OFFSET = 1", "TRIANGLE_OFFSET = 2"))
    analysis = analyze(load_task(shifted))
    family = get_family(FAMILY)
    move = family.render(analysis, dict(family.space(analysis)[0], BLOCK_M=16, BLOCK_N=16))
    assert_matches_reference(move, analysis, tmp_path)


def test_the_suite_attention_task_gets_the_triton_template():
    suite_task = TASKS.parents[2] / "bench" / "suites" / "h200" / "attention_causal_residual.py"
    analysis = analyze(load_task(suite_task))
    family = get_family(FAMILY)
    assert family.applies(analysis) is None
    facts = family.facts(analysis)[0]
    assert facts.merged and facts.residual == "residual" and facts.masked == "self.causal_mask" and facts.causal


def test_a_reshape_that_does_not_merge_the_heads_is_refused():
    analysis = analysis_for("builtin_attention_masked_merged")
    nodes = tuple(dataclasses.replace(n, args=(n.args[0], [2, 48, 24])) if n.target == "aten.reshape" else n
                  for n in analysis.nodes)
    odd = dataclasses.replace(analysis, nodes=nodes)
    assert "not the attention result" in get_family(FAMILY).applies(odd)


@pytest.mark.slow
def test_full_guard_accepts_masked_attention_with_merged_heads():
    analysis = analysis_for("builtin_attention_masked_merged")
    family = get_family(FAMILY)
    assert_guard_passes(family.render(analysis, dict(family.space(analysis)[0], BLOCK_M=16, BLOCK_N=16)), analysis)
