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
    assert f"    return torch.compile(fn, mode={MAX_AUTOTUNE_MODE!r}, **options)" in added
    assert sum("_kernelarc_compile(" in line for line in added) == 2  # its definition and the one call
    assert tuned.entry == baseline_candidates(task)[COMPILE].entry


def test_sol_compile_baseline_compiles_one_static_graph_per_workload():
    """A symbolic graph compiled at the second shape would serve every later workload (the timed kernel
    would depend on the order the workloads ran in); the limit holds every workload's graph."""
    task = load_task(EXAMPLES / "sol" / "rmsnorm_small")
    source = baseline_candidates(task)[COMPILE].source
    assert "torch.compile(_kernelarc_reference_run, dynamic=False)" in source
    assert f"recompile_limit, {len(task.workloads)})" in source


@pytest.mark.heavy
def test_sol_compile_baseline_passes_the_guard_on_every_workload():
    """The static graphs, one per workload, compile and match the reference (Inductor on the CPU)."""
    from kernelarc.guard.judge import Judge
    from kernelarc.guard.types import Status

    task = load_task(EXAMPLES / "sol" / "rmsnorm_small")
    with Judge(task, warm=False) as judge:
        evaluation = judge.evaluate(baseline_candidates(task)[COMPILE], device="cpu", trusted=True)
    assert evaluation.status is Status.PASSED, evaluation.reason
    assert len(evaluation.workloads) == len(task.workloads) > 1
