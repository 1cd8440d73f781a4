"""`evaluate()` end to end on the CPU: honest candidates of every kind are never rejected, an incumbent can be
the baseline, a broken reference is named, and seeds are unpredictable unless fixed."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from kernelarc.errors import DeviceError
from kernelarc.guard.candidate import candidate_from_source, load_candidate
from kernelarc.guard.judge import draw_seeds, evaluate, resolve_device
from kernelarc.guard.settings import GuardSettings
from kernelarc.guard.types import Status, TimingMethod, Verdict
from kernelarc.task.loader import load_task

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
EXAMPLES = REPO / "examples"
FAST = GuardSettings(rounds=2, cpu_iterations=3, warmup=1, compile_timeout_s=120, run_timeout_s=120)
WORKER_STAGES = {"start", "reference", "compile", "first_call", "correctness", "timing", "exit"}

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
    assert set(ev.stage_seconds) == WORKER_STAGES
    assert ev.sol_ms is None and ev.sol_score is None  # no SOL figures from CPU timings


@pytest.mark.gpu
def test_honest_cuda_inline_candidate_is_never_rejected():
    task = load_task(FIXTURES / "tasks" / "relu_tiny.py")
    ev = evaluate(task, load_candidate(FIXTURES / "candidates" / "honest_cuda_inline.py", task), device="cuda",
                  settings=FAST)
    assert ev.verdict is not Verdict.REJECT, ev.reason


@pytest.mark.gpu
def test_launch_bound_calls_are_timed_in_batches_on_cuda():
    task = load_task(FIXTURES / "tasks" / "relu_tiny.py")
    ev = evaluate(task, load_candidate(FIXTURES / "candidates" / "honest_torch.py", task), device="cuda",
                  settings=FAST)
    assert ev.timing is TimingMethod.CUDA_EVENTS_BATCH, ev.reason
    assert all(w.calls_per_sample == FAST.batch_calls for w in ev.workloads)


@pytest.mark.slow
def test_incumbent_is_the_baseline_when_given():
    task = load_task(FIXTURES / "tasks" / "relu_tiny.py")
    candidate = load_candidate(FIXTURES / "candidates" / "honest_torch.py", task)
    incumbent = load_candidate(FIXTURES / "candidates" / "honest_triton.py", task)
    ev = evaluate(task, candidate, incumbent, device="cpu", settings=FAST)
    assert ev.verdict is not Verdict.REJECT, ev.reason
    assert "vs incumbent" in ev.reason
    # Triton under the interpreter is orders of magnitude slower than one torch op: the candidate must win.
    assert ev.verdict is Verdict.KEEP and ev.speedup > 2


@pytest.mark.slow
def test_reference_that_returns_nan_is_invalid_reference():
    task = load_task(FIXTURES / "tasks" / "nan_reference.py")
    source = "import torch\nimport torch.nn as nn\n\n\nclass ModelNew(nn.Module):\n" \
             "    def forward(self, x):\n        return torch.zeros_like(x)\n"
    ev = evaluate(task, candidate_from_source(source, task), device="cpu", settings=FAST)
    assert (ev.verdict, ev.status) == (Verdict.REJECT, Status.INVALID_REFERENCE), ev.reason
    assert "reference output 0 has NaN/Inf" in ev.reason
    assert "compile" not in ev.stage_seconds  # the candidate was never imported


# --- seeds ------------------------------------------------------------------------------------------------------

def test_seeds_are_drawn_fresh_unless_fixed():
    task = load_task(EXAMPLES / "sol" / "rmsnorm_small")
    first, second = draw_seeds(task, FAST), draw_seeds(task, FAST)
    assert first != second
    fixed = FAST.model_copy(update={"seed": 1234})
    assert draw_seeds(task, fixed) == draw_seeds(task, fixed)
    assert draw_seeds(task, fixed) != draw_seeds(task, fixed.model_copy(update={"seed": 1235}))


def test_seeds_cover_every_workload_and_round():
    task = load_task(EXAMPLES / "sol" / "rmsnorm_small")
    seeds, audit, _ = draw_seeds(task, GuardSettings(seed=7))
    assert set(seeds) == set(audit) == {w.uuid for w in task.workloads}
    assert all(len(s) == task.rounds for s in seeds.values())
    assert all(len(s) == 3 for s in draw_seeds(task, GuardSettings(seed=7, rounds=3))[0].values())
    assert all(audit[u] not in seeds[u] for u in seeds)


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
