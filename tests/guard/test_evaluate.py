"""`evaluate()` end to end on the CPU: honest candidates of every kind are never rejected, an incumbent can be
the baseline, a broken reference is named, and seeds are unpredictable unless fixed."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kernelarc.errors import DeviceError
from kernelarc.guard.candidate import candidate_from_source, load_candidate
from kernelarc.guard.judge import evaluate, resolve_device, timing_basis
from kernelarc.guard import session
from kernelarc.guard.session import Seeds
from kernelarc.guard.settings import GuardSettings
from kernelarc.guard.types import Status, TimingMethod, Verdict
from kernelarc.task.loader import load_task

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
EXAMPLES = REPO / "examples"
FAST = GuardSettings(rounds=2, cpu_iterations=3, warmup=1, compile_timeout_s=120, run_timeout_s=120)
STAGES = {"reference", "compile", "first_call", "correctness", "timing"}

HONEST = [
    (FIXTURES / "tasks" / "relu_tiny.py", FIXTURES / "candidates" / "honest_torch.py"),
    (FIXTURES / "tasks" / "relu_tiny.py", FIXTURES / "candidates" / "honest_triton.py"),
    (EXAMPLES / "kernelbench" / "relu_small.py", EXAMPLES / "kernelbench" / "relu_small_triton.py"),
    (EXAMPLES / "kernelbench" / "gemm_bias_gelu_small.py", EXAMPLES / "kernelbench" / "gemm_bias_gelu_small_torch.py"),
    (EXAMPLES / "sol" / "rmsnorm_small", EXAMPLES / "sol" / "rmsnorm_small" / "solution.json"),
    (EXAMPLES / "sol" / "rmsnorm_small", EXAMPLES / "sol" / "rmsnorm_small" / "solution_torch.py"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("task_path", "candidate_path"), HONEST, ids=lambda p: p.name)
def test_honest_candidate_is_never_rejected(task_path, candidate_path):
    task = load_task(task_path)
    ev = evaluate(task, load_candidate(candidate_path, task), device="cpu", settings=FAST)
    assert ev.verdict is not Verdict.REJECT, f"{ev.status.value}: {ev.reason}\n{ev.log_tail}"
    assert ev.status is Status.PASSED and ev.correct
    assert ev.timing is TimingMethod.CPU_WALL and ev.device == "cpu"
    assert ev.speedup == pytest.approx(ev.incumbent_ms / ev.latency_ms)
    assert "vs reference" in ev.reason
    assert [w.uuid for w in ev.workloads] == [w.uuid for w in task.workloads]
    assert all(w.status is Status.PASSED and w.latency_ms > 0 and w.incumbent_ms > 0 for w in ev.workloads)
    assert all(w.iterations == FAST.cpu_iterations for w in ev.workloads)
    assert set(ev.stage_seconds) == STAGES
    spent = ev.request_seconds  # where the stages' time went: every request the evaluation made, per side and kind
    assert {"reference specs", "candidate load", "candidate warm", "candidate call", "reference check",
            "candidate time/cpu", "reference time/cpu"} <= set(spent)
    workloads = len(task.workloads)
    assert spent["candidate call"][0] == workloads  # a workload's small rounds go in one request
    # A check of the rounds per workload, and of every timed block's calls (on the CPU every timed call is checked).
    assert spent["reference check"][0] >= workloads * (1 + FAST.cpu_iterations)
    assert spent["judge copy"][0] >= spent["reference check"][0]  # each checked call copied out of the candidate's reach
    assert sum(s for _, s in spent.values()) <= ev.wall_s
    assert ev.sol_ms is None and ev.sol_score is None  # no SOL figures from CPU timings
    assert ev.basis == "wall" and ev.wall_ms == pytest.approx(ev.latency_ms) and ev.device_ms is None


@pytest.mark.gpu
def test_honest_cuda_inline_candidate_is_never_rejected():
    task = load_task(FIXTURES / "tasks" / "relu_tiny.py")
    ev = evaluate(task, load_candidate(FIXTURES / "candidates" / "honest_cuda_inline.py", task), device="cuda",
                  settings=FAST)
    assert ev.verdict is not Verdict.REJECT, ev.reason


@pytest.mark.gpu
def test_cuda_reports_device_and_wall_time_and_the_basis_decides():
    task = load_task(FIXTURES / "tasks" / "relu_tiny.py")
    ev = evaluate(task, load_candidate(FIXTURES / "candidates" / "honest_torch.py", task), device="cuda",
                  settings=FAST)
    assert ev.timing is TimingMethod.CUDA_EVENTS and ev.basis == "wall", ev.reason
    assert ev.device_ms is not None and ev.wall_ms == pytest.approx(ev.latency_ms)
    assert all(w.device_ms <= w.wall_ms * 1.25 + 0.01 for w in ev.workloads)
    assert ev.request_seconds["sides ready"][0] == 1  # the candidate's side started before the device lock


@pytest.mark.gpu
def test_against_an_incumbent_on_cuda_both_fresh_sides_start_before_the_lock():
    task = load_task(FIXTURES / "tasks" / "relu_tiny.py")
    ev = evaluate(task, load_candidate(FIXTURES / "candidates" / "honest_torch.py", task),
                  load_candidate(FIXTURES / "candidates" / "honest_output_buffer.py", task), device="cuda", settings=FAST)
    assert ev.verdict is not Verdict.REJECT, ev.reason
    assert ev.request_seconds["sides ready"][0] == 2 and "incumbent setup" in ev.request_seconds


@pytest.mark.slow
def test_an_incumbent_that_fails_is_the_incumbents_failure_never_the_candidates():
    """Its own status, so that a campaign never records a REJECT (and a trap) for the candidate beside it."""
    task = load_task(FIXTURES / "tasks" / "relu_tiny.py")
    candidate = load_candidate(FIXTURES / "candidates" / "honest_torch.py", task)
    failing = candidate_from_source("import torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n"
                                    "    def forward(self, x):\n        raise RuntimeError('broken')\n", task)
    ev = evaluate(task, candidate, failing, device="cpu", settings=FAST)
    assert (ev.verdict, ev.status) == (Verdict.REJECT, Status.INCUMBENT_FAILED), ev.reason
    assert ev.reason.startswith("the incumbent failed") and "broken" in ev.reason


def test_incumbent_is_the_baseline_when_given():
    task = load_task(FIXTURES / "tasks" / "relu_tiny.py")
    candidate = load_candidate(FIXTURES / "candidates" / "honest_torch.py", task)
    incumbent = load_candidate(FIXTURES / "candidates" / "honest_triton.py", task)
    ev = evaluate(task, candidate, incumbent, device="cpu", settings=FAST)
    assert ev.verdict is not Verdict.REJECT, ev.reason
    assert "vs incumbent" in ev.reason
    # Triton under the interpreter is orders of magnitude slower than one torch op: the candidate is not
    # slower (KEEP as a rule; ACCEPT when a loaded machine's noise swallows the ratio: CPU timings are not asserted).
    assert ev.verdict in (Verdict.KEEP, Verdict.ACCEPT)


@pytest.mark.parametrize("batch_bytes", [session.CHECK_BATCH_BYTES, 1], ids=["batched", "one round per request"])
def test_correctness_rounds_keep_each_rounds_outputs_however_batched(monkeypatch, batch_bytes):
    """Rounds that share a request are each checked on their own outputs: a candidate that returns one kept
    buffer every call passes (its earlier rounds' outputs leave for the mailbox before the next call)."""
    monkeypatch.setattr(session, "CHECK_BATCH_BYTES", batch_bytes)
    task = load_task(FIXTURES / "tasks" / "relu_tiny.py")
    settings = FAST.model_copy(update={"rounds": 4})
    ev = evaluate(task, load_candidate(FIXTURES / "candidates" / "honest_output_buffer.py", task), device="cpu",
                  settings=settings)
    assert ev.status is Status.PASSED, ev.reason
    per_request = 4 if batch_bytes > 1 else 1
    assert ev.request_seconds["candidate call"][0] == len(task.workloads) * 4 // per_request


@pytest.mark.slow
def test_reference_that_returns_nan_is_invalid_reference():
    task = load_task(FIXTURES / "tasks" / "nan_reference.py")
    source = "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n" \
             "    def forward(self, x):\n        return torch.zeros_like(x)\n"
    ev = evaluate(task, candidate_from_source(source, task), device="cpu", settings=FAST)
    assert (ev.verdict, ev.status) == (Verdict.REJECT, Status.INVALID_REFERENCE), ev.reason
    assert "reference output 0 has NaN/Inf" in ev.reason
    assert "compile" not in ev.stage_seconds  # the candidate was never imported


# --- seeds and the timing basis -------------------------------------------------------------------------------

def test_seeds_are_drawn_fresh_unless_fixed():
    import random

    fixed = [Seeds(random.Random(1234)).rounds(5) for _ in range(2)]
    assert fixed[0] == fixed[1] and fixed[0] != Seeds(random.Random(1235)).rounds(5)
    fresh = [Seeds(random.SystemRandom()).rounds(5) for _ in range(2)]
    assert fresh[0] != fresh[1]


def test_a_fixed_seed_gives_the_same_correctness_verdict():
    task = load_task(FIXTURES / "tasks" / "relu_tiny.py")
    partial = load_candidate(FIXTURES / "candidates" / "evil_partial_rows.py", task)
    settings = FAST.model_copy(update={"seed": 99})
    first, second = (evaluate(task, partial, device="cpu", settings=settings, trusted=True) for _ in range(2))
    assert first.status is second.status is Status.INCORRECT_NUMERICAL
    assert first.reason == second.reason  # same inputs, same wrong elements


def test_sol_tasks_are_decided_on_device_time_and_kernelbench_on_wall_time():
    sol, kb = load_task(EXAMPLES / "sol" / "rmsnorm_small"), load_task(FIXTURES / "tasks" / "relu_tiny.py")
    assert timing_basis(sol, "cuda:0", GuardSettings()) == "device"
    assert timing_basis(kb, "cuda:0", GuardSettings()) == "wall"
    assert timing_basis(kb, "cuda:0", GuardSettings(timing="device")) == "device"
    assert timing_basis(sol, "cpu", GuardSettings(timing="device")) == "wall"  # the CPU has only its clock


# --- devices ----------------------------------------------------------------------------------------------------

def test_resolve_device():
    assert resolve_device("cpu") == "cpu"
    assert resolve_device("auto") == ("cuda:0" if torch.cuda.is_available() else "cpu")
    for bad in ("tpu", "cuda:x", "gpu"):
        with pytest.raises(DeviceError, match="unknown device"):
            resolve_device(bad)


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the answer on a machine without CUDA")
def test_cuda_without_a_device_is_a_user_error():
    with pytest.raises(DeviceError, match="no CUDA device is available"):
        resolve_device("cuda")


# --- references that draw random numbers ------------------------------------------------------------------------

DROPOUT_CANDIDATE = """import torch
import torch.nn as nn
import torch.nn.functional as F


class ModelNew(nn.Module):
    def __init__(self, features, p):
        super().__init__()
        self.linear = nn.Linear(features, features)
        self.p = p

    def forward(self, x):
        y = F.linear(x, self.linear.weight, self.linear.bias)
        return torch.softmax({dropout}, dim=1)
"""


@pytest.mark.slow
def test_a_candidate_drawing_the_references_random_numbers_passes_and_one_drawing_others_fails():
    """Every side seeds its RNGs alike before each call (guard/side.py `forward_seed`): the reference's own
    dropout passes in the correctness rounds and in every checked timed call; other draws are wrong."""
    task = load_task(FIXTURES / "tasks" / "dropout_tiny.py")
    same = candidate_from_source(DROPOUT_CANDIDATE.format(dropout="F.dropout(y, self.p, self.training)"), task)
    ev = evaluate(task, same, device="cpu", settings=FAST)
    assert ev.correct and ev.verdict is not Verdict.REJECT, ev.reason
    other = candidate_from_source(DROPOUT_CANDIDATE.format(
        dropout="y * (torch.rand_like(y) >= self.p) / (1 - self.p)"), task)  # right distribution, other draws
    ev = evaluate(task, other, device="cpu", settings=FAST)
    assert ev.status is Status.INCORRECT_NUMERICAL, ev.reason
