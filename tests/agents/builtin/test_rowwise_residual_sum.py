"""A norm whose forward also returns the residual sum it normalized: one kernel writes both."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest
import torch

from kernelarc.agents.builtin.analysis import analyze
from kernelarc.agents.builtin.moves import get_family
from kernelarc.guard import GuardSettings, Verdict, candidate_from_source, check_source, evaluate
from kernelarc.task import load_task

TASK = Path(__file__).resolve().parents[2] / "fixtures" / "tasks" / "builtin_layernorm_residual_sum.py"


@pytest.mark.parametrize("family_name", ["triton_rowwise", "triton_rowwise_looped"])
def test_both_outputs_match_the_reference(family_name, tmp_path):
    task = load_task(TASK)
    analysis = analyze(task)
    family = get_family(family_name)
    assert family.applies(analysis) is None
    point = family.space(analysis)[-1]  # a small block: the looped kernel takes several chunks per row
    move = family.render(analysis, point)
    assert check_source(move.source, entry="ModelNew") is None
    path = tmp_path / f"{family_name}.py"
    path.write_text(move.source)
    spec = importlib.util.spec_from_file_location(family_name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    ns: dict = {}
    exec(compile(task.reference_source, str(TASK), "exec"), ns)
    torch.manual_seed(0)
    reference = ns["Model"](300)
    torch.manual_seed(0)
    candidate = module.ModelNew(300)
    x, residual = torch.randn(6, 300), torch.randn(6, 300)
    (want_y, want_h), (got_y, got_h) = reference(x, residual), candidate(x, residual)
    torch.testing.assert_close(got_h, want_h)
    torch.testing.assert_close(got_y, want_y, atol=1e-4, rtol=1e-4)


def test_the_guard_accepts_the_two_output_kernel():
    task = load_task(TASK)
    analysis = analyze(task)
    family = get_family("triton_rowwise")
    move = family.render(analysis, family.space(analysis)[0])
    result = evaluate(task, candidate_from_source(move.source, task), device="cpu",
                      settings=GuardSettings(rounds=2, cpu_iterations=3, warmup=1))
    assert result.verdict is not Verdict.REJECT, result.reason
