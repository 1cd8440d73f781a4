"""The row-wise families fuse what surrounds the op: an input cast before it and pointwise ops and
casts after it. Each fixture's candidates run against the reference (chunked rows) and through the
full guard (whole rows) in the interpreter; unfusable neighbours give a reason instead."""

from __future__ import annotations

from pathlib import Path

import pytest

from kernelarc.agents.builtin.analysis import analyze
from kernelarc.agents.builtin.moves import get_family
from kernelarc.task import load_task

from .triton_harness import analysis_for, assert_guard_passes, assert_matches_reference

SUITE = Path(__file__).resolve().parents[3] / "bench" / "suites" / "h200"
CASES = ["builtin_layernorm_gelu", "builtin_rmsnorm_cast_bf16", "builtin_softmax_epilogue",
         "builtin_rmsnorm_activations"]
FAMILIES = ["triton_rowwise", "triton_rowwise_looped"]


@pytest.mark.parametrize("name", ["layernorm_gelu_small", "rmsnorm_bf16"])
def test_suite_tasks_get_rowwise_points(name):
    analysis = analyze(load_task(SUITE / f"{name}.py"))  # meta tensors: nothing the suite's size is allocated
    for family in map(get_family, FAMILIES):
        assert family.applies(analysis) is None, family.name
        assert family.space(analysis)


def test_the_facts_describe_the_cast_and_the_epilogue():
    row = analysis_for("builtin_rmsnorm_cast_bf16").facts["rowwise"]
    assert row["input"] == "x" and row["input_cast"]["dtype"] == "float32"
    assert [(s["op"], s.get("dtype"), s.get("tensor")) for s in row["epilogue"]] == [
        ("cast", "bfloat16", None), ("mul", None, "self.weight")]
    steps = analysis_for("builtin_rmsnorm_activations").facts["rowwise"]["epilogue"]
    assert [s["op"] for s in steps] == ["gelu", "div", "sub", "relu", "tanh", "sigmoid"]
    assert steps[0]["approximate"] == "tanh"


@pytest.mark.parametrize("fixture", CASES)
def test_chunked_rows_match_reference(fixture, tmp_path):
    analysis = analysis_for(fixture)
    family = get_family("triton_rowwise_looped")
    assert family.applies(analysis) is None
    move = family.render(analysis, dict(BLOCK_SIZE=128, num_warps=4))  # 300 columns: three chunks, a ragged last
    assert_matches_reference(move, analysis, tmp_path)


@pytest.mark.parametrize("fixture", CASES)
def test_the_guard_passes_whole_rows(fixture):
    analysis = analysis_for(fixture)
    family = get_family("triton_rowwise")
    assert family.applies(analysis) is None
    assert_guard_passes(family.render(analysis, family.space(analysis)[0]), analysis)


def test_the_kernel_rounds_where_the_reference_holds_bf16():
    analysis = analysis_for("builtin_rmsnorm_cast_bf16")
    source = get_family("triton_rowwise").render(analysis, get_family("triton_rowwise").space(analysis)[0]).source
    rounding = source.index("y = _round_to_bfloat16(y)")
    assert source.index("y = x * rstd[:, None]") < rounding < source.index("y = y * weight[None, :]")
    assert "y = torch.empty_like(x2, dtype=torch.bfloat16)" in source
    assert "return rms_norm(x, self.weight)" in source  # reads x as stored, not an fp32 copy


@pytest.mark.parametrize(("fixture", "reason"), [
    ("builtin_softmax_cumsum", "the forward returns v_cumsum"),
    ("builtin_layernorm_gate", "full tensor gate"),
])
def test_unfusable_neighbours_give_a_reason(fixture, reason):
    analysis = analysis_for(fixture)
    for family in map(get_family, FAMILIES):
        why = family.applies(analysis)
        assert why is not None and reason in why and "\n" not in why, why
        with pytest.raises(ValueError, match="cannot render"):
            family.render(analysis, dict(BLOCK_SIZE=512, ROWS_PER_PROGRAM=1, num_warps=4))
