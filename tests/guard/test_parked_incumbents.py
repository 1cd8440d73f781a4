"""A judge keeps its incumbents' sides between evaluations (guard/judge.py): reused without a new set-up while
they stayed stopped, replaced when anything of them ran while parked, bounded in number, gone at close."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import pytest

from kernelarc.guard import judge as judge_module
from kernelarc.guard.candidate import load_candidate
from kernelarc.guard.judge import Judge
from kernelarc.guard.settings import GuardSettings
from kernelarc.guard.types import Verdict
from kernelarc.guard.watchdog import descendants
from kernelarc.task.loader import load_task

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
FAST = GuardSettings(rounds=1, cpu_iterations=3, warmup=1, compile_timeout_s=120, run_timeout_s=120)
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def task():
    return load_task(FIXTURES / "tasks" / "relu_tiny.py")


def _candidate(task, name: str):
    return load_candidate(FIXTURES / "candidates" / name, task)


def _set_up_incumbent(evaluation) -> bool:
    return "incumbent setup" in evaluation.request_seconds


def _parked(judge: Judge) -> list:
    return list(judge._incumbents.values())


def test_an_incumbent_side_serves_its_next_evaluation_without_a_new_set_up(task):
    candidate, incumbent = _candidate(task, "honest_torch.py"), _candidate(task, "honest_output_buffer.py")
    with Judge(task, warm=False) as judge:
        first = judge.evaluate(candidate, incumbent, device="cpu", settings=FAST)
        [parked] = _parked(judge)
        assert all(_state(p) == "T" for p in _tree(parked)), "a parked side is stopped"
        second = judge.evaluate(candidate, incumbent, device="cpu", settings=FAST)
        assert _parked(judge) == [parked]
    assert first.verdict is not Verdict.REJECT and second.verdict is not Verdict.REJECT, (first.reason, second.reason)
    assert _set_up_incumbent(first) and not _set_up_incumbent(second)
    assert parked.proc.poll() is not None, "closing the judge ends its parked sides"


def test_a_parked_side_that_ran_is_replaced(task):
    candidate, incumbent = _candidate(task, "honest_torch.py"), _candidate(task, "honest_output_buffer.py")
    with Judge(task, warm=False) as judge:
        judge.evaluate(candidate, incumbent, device="cpu", settings=FAST)
        [parked] = _parked(judge)
        for pid in _tree(parked):  # something resumed it while it was parked
            os.kill(pid, signal.SIGCONT)
        again = judge.evaluate(candidate, incumbent, device="cpu", settings=FAST)
        assert parked.proc.poll() is not None, "the side that ran is ended"
        assert _parked(judge) and _parked(judge)[0] is not parked
    assert again.verdict is not Verdict.REJECT, again.reason
    assert _set_up_incumbent(again), "a fresh side took its place"


def test_only_the_last_incumbents_stay_parked(task, monkeypatch):
    monkeypatch.setattr(judge_module, "KEPT_INCUMBENTS", 1)
    candidate = _candidate(task, "honest_torch.py")
    with Judge(task, warm=False) as judge:
        judge.evaluate(candidate, _candidate(task, "honest_output_buffer.py"), device="cpu", settings=FAST)
        [older] = _parked(judge)
        judge.evaluate(candidate, _candidate(task, "honest_triton.py"), device="cpu", settings=FAST)
        [newer] = _parked(judge)
        assert newer is not older and older.proc.poll() is not None


def _tree(side) -> list[int]:
    return [side.proc.pid, *descendants(side.proc.pid)]


def _state(pid: int) -> str:
    with open(f"/proc/{pid}/stat", "rb") as f:
        return f.read().rsplit(b")", 1)[1].split()[0].decode()
