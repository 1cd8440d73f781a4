"""The max-autotune baseline is the campaign's compile baseline with only the mode changed."""

from __future__ import annotations

import ast
import difflib
from pathlib import Path

import pytest

from kernelarc.bench.baselines import MAX_AUTOTUNE_MODE, compile_mode_candidate
from kernelarc.campaign.baselines import COMPILE, baseline_candidates
from kernelarc.task import load_task

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.mark.parametrize("task_path", [EXAMPLES / "kernelbench" / "relu_small.py", EXAMPLES / "sol" / "rmsnorm_small"],
                         ids=["kernelbench", "sol"])
def test_max_autotune_candidate_changes_only_the_mode(task_path):
    task = load_task(task_path)
    default = baseline_candidates(task)[COMPILE].source
    tuned = compile_mode_candidate(task, MAX_AUTOTUNE_MODE)
    ast.parse(tuned.source)
    diff = difflib.ndiff(default.splitlines(), tuned.source.splitlines())
    added = [line[2:] for line in diff if line.startswith("+ ")]
    assert f"    return torch.compile(fn, mode={MAX_AUTOTUNE_MODE!r})" in added
    assert sum("_kernelarc_compile(" in line for line in added) == 2  # its definition and the one call
    assert tuned.entry == baseline_candidates(task)[COMPILE].entry
