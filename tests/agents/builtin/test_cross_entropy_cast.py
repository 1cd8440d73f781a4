"""Cross-entropy over logits upcast inside the forward: the row-wise kernel reads the stored bf16
logits and computes in fp32, which is what the upcast meant."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import torch

from kernelarc.agents.builtin.analysis import analyze
from kernelarc.agents.builtin.moves import get_family
from kernelarc.guard import check_source
from kernelarc.task import load_task

TASK = Path(__file__).resolve().parents[2] / "fixtures" / "tasks" / "builtin_cross_entropy_bf16.py"


def test_the_upcast_logits_are_read_as_stored(tmp_path):
    task = load_task(TASK)
    analysis = analyze(task)
    assert analysis.facts["rowwise"]["op"] == "cross_entropy" and analysis.facts["rowwise"]["input"] == "logits"
    family = get_family("triton_rowwise_looped")
    assert family.applies(analysis) is None
    move = family.render(analysis, family.space(analysis)[0])
    assert check_source(move.source, entry="ModelNew") is None
    path = tmp_path / "candidate_ce.py"
    path.write_text(move.source)
    spec = importlib.util.spec_from_file_location("candidate_ce", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    logits, targets = torch.randn(12, 1000, dtype=torch.bfloat16), torch.randint(0, 1000, (12,))
    expected = torch.nn.functional.cross_entropy(logits.float(), targets)
    got = module.ModelNew()(logits, targets)
    assert got.dtype == torch.float32
    torch.testing.assert_close(got, expected, atol=1e-4, rtol=1e-4)
