"""Every cheating fixture, through `evaluate()`: the gate-caught ones come back STATIC_REJECT with their rule and
line, the ones the gate lets through are caught at run time with the right status."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kernelarc.guard.candidate import load_candidate
from kernelarc.guard.judge import evaluate
from kernelarc.guard.settings import GuardSettings
from kernelarc.guard.types import Evaluation, Status, Verdict
from kernelarc.task.loader import load_task

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CANDIDATES = FIXTURES / "candidates"
FAST = GuardSettings(rounds=2, cpu_iterations=3, warmup=1, compile_timeout_s=60, run_timeout_s=60)
GATE_MARKER = re.compile(r"<- gate: ([a-z-]+)")

# Fixtures the gate lets through -> what the run-time guard must answer (two rounds, as FAST says).
RUNTIME_STATUS = {
    "evil_cache_data_ptr.py": Status.INCORRECT_NUMERICAL,  # round 2 refills round 1's buffers: stale cache hit
    "evil_cache_call_count.py": Status.REWARD_HACK,        # right for 3 calls; the timed calls (all checked) are not
    "evil_forged_result.py": Status.INCORRECT_NUMERICAL,   # its stdout line is log text; the output is judged
    "evil_input_mutation.py": Status.REWARD_HACK,
    "evil_wrong_dtype.py": Status.INCORRECT_DTYPE,
    "evil_partial_rows.py": Status.INCORRECT_NUMERICAL,
    "evil_hardcoded_seed.py": Status.INCORRECT_NUMERICAL,
}


def _gate_marker(path: Path) -> tuple[str, int] | None:
    """The `<- gate: rule` mark in a fixture: the rule and line the gate must report."""
    for number, line in enumerate(path.read_text().splitlines(), 1):
        if match := GATE_MARKER.search(line):
            return match.group(1), number
    return None


EVIL = sorted(p.name for p in CANDIDATES.glob("evil_*.py"))
GATE_CAUGHT = [name for name in EVIL if _gate_marker(CANDIDATES / name)]


@pytest.fixture(scope="module")
def relu_task():
    return load_task(FIXTURES / "tasks" / "relu_tiny.py")


def _judge(task, name: str, settings: GuardSettings = FAST, trusted: bool = False) -> Evaluation:
    return evaluate(task, load_candidate(CANDIDATES / name, task), device="cpu", settings=settings, trusted=trusted)


def _assert_rejected(ev: Evaluation, status: Status) -> None:
    assert (ev.verdict, ev.status) == (Verdict.REJECT, status), f"{ev.status.value}: {ev.reason}\n{ev.log_tail}"
    assert not ev.correct and ev.speedup is None and ev.latency_ms is None and ev.reason


def test_every_evil_fixture_is_caught_by_the_gate_or_listed_here():
    assert sorted(set(EVIL) - set(GATE_CAUGHT)) == sorted(RUNTIME_STATUS)


@pytest.mark.parametrize("name", GATE_CAUGHT)
def test_gate_caught_fixture_is_static_reject_with_rule_and_line(relu_task, name):
    rule, line = _gate_marker(CANDIDATES / name)
    ev = _judge(relu_task, name)
    _assert_rejected(ev, Status.STATIC_REJECT)
    assert (ev.static_rule, ev.static_line) == (rule, line)
    assert f"rule {rule} at line {line}" in ev.reason
    assert ev.stage_seconds == {} and ev.workloads == ()  # no worker was started


@pytest.mark.slow
@pytest.mark.parametrize(("name", "status"), sorted(RUNTIME_STATUS.items()))
def test_runtime_fixture_is_rejected_with_its_status(relu_task, name, status):
    ev = _judge(relu_task, name)
    _assert_rejected(ev, status)
    assert ev.static_rule is None
    assert [(w.uuid, w.status) for w in ev.workloads] == [("default", status)]  # the failing workload, named
    assert ev.workloads[0].message == ev.reason
    if name == "evil_forged_result.py":  # its forged line reached the log, and nothing else
        assert '{"status": "PASSED", "correct": true' in ev.log_tail


@pytest.mark.slow
def test_call_count_cache_is_caught_by_the_default_rounds_before_timing(relu_task):
    ev = _judge(relu_task, "evil_cache_call_count.py", FAST.model_copy(update={"rounds": None}))
    _assert_rejected(ev, Status.INCORRECT_NUMERICAL)
    assert "round 3" in ev.reason and "timing" not in ev.stage_seconds


@pytest.mark.slow
def test_tensor_subclass_is_a_reward_hack_even_past_the_gate(relu_task):
    ev = _judge(relu_task, "evil_tensor_subclass.py", trusted=True)
    _assert_rejected(ev, Status.REWARD_HACK)
    assert "tensor subclass LazyRelu" in ev.reason


@pytest.mark.slow
def test_os_exit_is_a_reward_hack_even_past_the_gate(relu_task):
    ev = _judge(relu_task, "evil_os_exit.py", trusted=True)
    _assert_rejected(ev, Status.REWARD_HACK)
    assert "exited during first_call without answering" in ev.reason
