"""Fault injection: crashes, hangs, exits and runaway children cost the candidate, never the caller.

The candidates live in tests/fixtures/candidates/faults/ and run trusted (gate skipped) where the
gate would refuse them, so the worker's own defences are what is tested.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

from kernelarc.guard.candidate import candidate_from_source
from kernelarc.guard.cutoff import Cutoff, EvaluationCut
from kernelarc.guard.devlock import device_lock
from kernelarc.guard.judge import Judge, evaluate
from kernelarc.guard.settings import GuardSettings
from kernelarc.guard.sides import KILL_GRACE_S
from kernelarc.guard.types import Evaluation, Status, Verdict
from kernelarc.task.loader import load_task

pytestmark = pytest.mark.slow  # every test here starts guard sides (torch import: seconds on 2 cores)
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CANDIDATES = FIXTURES / "candidates"
HANG_S = 3.0
SETTINGS = GuardSettings(rounds=2, cpu_iterations=3, warmup=1, compile_timeout_s=60, run_timeout_s=60)
HANGING = SETTINGS.model_copy(update={"compile_timeout_s": HANG_S, "run_timeout_s": HANG_S})


@pytest.fixture(scope="module")
def relu_task():
    return load_task(FIXTURES / "tasks" / "relu_tiny.py")


def _judge(task, name: str, settings: GuardSettings = SETTINGS, **replace: str) -> Evaluation:
    source = (CANDIDATES / name).read_text()
    for old, new in replace.items():
        source = source.replace(old, new)
    ev = evaluate(task, candidate_from_source(source, task, name=Path(name).stem), device="cpu",
                  settings=settings, trusted=True)
    if ev.status is not Status.PASSED:
        assert ev.verdict is Verdict.REJECT and not ev.correct and ev.speedup is None
    return ev


@pytest.mark.parametrize(("name", "status", "words"), [
    ("faults/segfault.py", Status.RUNTIME_ERROR, "killed by SIGSEGV"),
    ("faults/huge_alloc.py", Status.RUNTIME_ERROR, "out of host memory"),
    ("faults/sys_exit.py", Status.RUNTIME_ERROR, "SystemExit: 1"),
    ("faults/import_raise.py", Status.COMPILE_ERROR, "ImportError: kernel library missing"),
])
def test_fault_becomes_one_status(relu_task, name, status, words):
    ev = _judge(relu_task, name)
    assert ev.status is status, ev.reason
    assert words in ev.reason


@pytest.mark.parametrize(("name", "status", "words", "stage"), [
    ("faults/forward_loop.py", Status.TIMEOUT, "the candidate timed out during first_call", "first_call"),
    ("faults/import_loop.py", Status.COMPILE_ERROR, "timed out while importing", "compile"),
])
def test_hang_is_cut_at_its_stage_deadline(relu_task, name, status, words, stage):
    ev = _judge(relu_task, name, HANGING)
    assert ev.status is status and words in ev.reason
    assert HANG_S <= ev.stage_seconds[stage] < HANG_S + 2 * KILL_GRACE_S


def _marked(marker: str) -> list[int]:
    """Host processes whose command line holds `marker` (the fixture's children put it there)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker.encode() in (entry / "cmdline").read_bytes():
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def _wait_gone(marker: str, within_s: float = 5.0) -> list[int]:
    deadline = time.monotonic() + within_s
    while (alive := _marked(marker)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return alive


def test_detached_children_die_with_a_hung_side(relu_task):
    marker = f"kernelarc-fault-{uuid.uuid4().hex}"
    ev = _judge(relu_task, "faults/child_holds_pipe.py", HANGING, __MARKER__=marker)
    assert ev.status is Status.TIMEOUT, ev.reason
    assert _wait_gone(marker) == []


def test_detached_children_do_not_outlive_a_finished_evaluation(relu_task):
    marker = f"kernelarc-fault-{uuid.uuid4().hex}"
    started = time.monotonic()
    ev = _judge(relu_task, "faults/child_holds_pipe.py", __MARKER__=marker,
                **{"PARENT_HANGS = True": "PARENT_HANGS = False"})
    assert ev.status is Status.PASSED, ev.reason + ev.log_tail
    assert time.monotonic() - started < 60  # the children sleep 600 s holding the reply pipe
    assert _wait_gone(marker) == []


def test_exit_handler_of_the_candidate_never_holds_the_caller(relu_task):
    started = time.monotonic()
    ev = _judge(relu_task, "faults/exit_hang.py")
    assert ev.status is Status.PASSED, ev.reason + ev.log_tail
    assert time.monotonic() - started < 60  # the handler sleeps 600 s


def test_a_cutoff_ends_an_evaluation_in_flight_without_a_verdict(relu_task):
    """The caller's cutoff (a campaign's time limit, a second Ctrl-C) kills the sides mid-stage and
    raises EvaluationCut: neither a TIMEOUT nor any other status of the candidate."""
    candidate = candidate_from_source((CANDIDATES / "faults" / "forward_loop.py").read_text(), relu_task)
    cutoff = Cutoff(time.monotonic() + HANG_S, why="the time limit (test) passed")
    started = time.monotonic()
    with Judge(relu_task, warm=False) as judge:
        with pytest.raises(EvaluationCut, match="the time limit"):
            judge.evaluate(candidate, device="cpu", settings=SETTINGS, trusted=True, cutoff=cutoff)
        assert not judge._references  # a reference side cut mid-request is never reused
    assert time.monotonic() - started < SETTINGS.compile_timeout_s  # the 60 s stage deadline never came


def test_a_cutoff_ends_the_wait_for_a_busy_device(relu_task, tmp_path):
    candidate = candidate_from_source((CANDIDATES / "faults" / "forward_loop.py").read_text(), relu_task)
    with device_lock("cpu", tmp_path), Judge(relu_task, warm=False, lock_dir=tmp_path) as judge:
        with pytest.raises(EvaluationCut):
            judge.evaluate(candidate, device="cpu", settings=SETTINGS, trusted=True,
                           cutoff=Cutoff(time.monotonic() + 0.5))


def test_task_inputs_beyond_memory_are_an_invalid_reference(relu_task):
    huge = load_task(FIXTURES / "tasks" / "huge_inputs.py")
    candidate = candidate_from_source((CANDIDATES / "honest_torch.py").read_text(), huge)
    ev = evaluate(huge, candidate, device="cpu", settings=SETTINGS)
    assert ev.status is Status.INVALID_REFERENCE and "out of host memory" in ev.reason, ev.reason


@pytest.mark.parametrize("module", ["triton.compiler.errors", "torch._inductor.exc", "torch._dynamo.exc"])
def test_an_exception_of_the_compilers_is_a_compile_error_and_any_other_a_runtime_error(module):
    import os

    from kernelarc.guard import wire
    from kernelarc.guard.side import CandidateFailure, Side

    side = Side("cpu", wire.Mailbox(os.memfd_create("kernelarc-test")))
    compiler_error = type("CompilationError", (Exception,), {"__module__": module})

    def fails(error):
        def call():
            raise error("the kernel did not build")
        return call

    with pytest.raises(CandidateFailure) as caught:
        side.guarded("RUNTIME_ERROR", fails(compiler_error))
    assert caught.value.status == "COMPILE_ERROR"
    with pytest.raises(CandidateFailure) as caught:
        side.guarded("RUNTIME_ERROR", fails(ValueError))
    assert caught.value.status == "RUNTIME_ERROR"
