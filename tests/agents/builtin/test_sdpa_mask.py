"""Attention written out with a masked_fill becomes SDPA: causal when the mask is the strict upper
triangle, the complement as attn_mask otherwise, decided on the mask's values at every call."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch

from kernelarc.agents.builtin.analysis import analyze
from kernelarc.agents.builtin.moves import get_family
from kernelarc.guard import GuardSettings, Verdict, candidate_from_source, check_source, evaluate
from kernelarc.task import load_task

TASK = Path(__file__).resolve().parents[2] / "fixtures" / "tasks" / "builtin_attention_masked.py"


def _module(source: str, tmp_path: Path):
    path = tmp_path / "candidate_sdpa.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("candidate_sdpa", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_masked_attention_is_found_and_rendered_as_sdpa(tmp_path):
    task = load_task(TASK)
    analysis = analyze(task)
    att = analysis.facts["attention"]
    assert (att["form"], att["masked_fill"], att["q"], att["k"], att["v"]) == (
        "matmul_softmax", "self.causal_mask", "q", "k", "v")
    family = get_family("library_sdpa")
    assert family.applies(analysis) is None
    move = family.render(analysis, family.space(analysis)[0])
    assert check_source(move.source, entry="ModelNew") is None

    ns: dict = {}
    exec(compile(task.reference_source, str(TASK), "exec"), ns)
    torch.manual_seed(0)
    reference = ns["Model"](16, 8)
    candidate = _module(move.source, tmp_path).ModelNew(16, 8)
    inputs = ns["get_inputs"]()
    torch.testing.assert_close(candidate(*inputs), reference(*inputs), atol=1e-5, rtol=1e-5)

    random_mask = torch.rand(16, 16) < 0.3  # not causal: the attn_mask branch must agree too
    random_mask[:, 0] = False  # every row keeps one position (an all -inf row is NaN in both)
    reference.causal_mask = random_mask
    candidate.causal_mask = random_mask
    torch.testing.assert_close(candidate(*inputs), reference(*inputs), atol=1e-5, rtol=1e-5)


def test_the_guard_keeps_the_sdpa_candidate_correct():
    task = load_task(TASK)
    analysis = analyze(task)
    family = get_family("library_sdpa")
    move = family.render(analysis, family.space(analysis)[0])
    result = evaluate(task, candidate_from_source(move.source, task), device="cpu",
                      settings=GuardSettings(rounds=2, cpu_iterations=3, warmup=1))
    assert result.verdict is not Verdict.REJECT, result.reason
