"""The warm pool: workers start ahead of their job, each still serves exactly one candidate."""

from __future__ import annotations

from pathlib import Path

from kernelarc.guard import GuardSettings, Verdict, evaluate, load_candidate
from kernelarc.guard.runner import WarmPool
from kernelarc.task import load_task

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
FAST = GuardSettings(rounds=2, cpu_iterations=3, warmup=1)


def test_each_evaluation_takes_its_own_worker_and_close_ends_the_idle_one(tmp_path):
    task = load_task(FIXTURES / "tasks" / "relu_tiny.py")
    honest = load_candidate(FIXTURES / "candidates" / "honest_torch.py", task)
    pool = WarmPool()
    first = evaluate(task, honest, device="cpu", settings=FAST, pool=pool)
    [idle] = pool._idle["cpu"]
    second = evaluate(task, honest, device="cpu", settings=FAST, pool=pool)
    assert first.verdict is not Verdict.REJECT and second.verdict is not Verdict.REJECT
    assert idle.proc.poll() is not None  # the idle worker served the second evaluation and is gone
    [replacement] = pool._idle["cpu"]
    assert replacement is not idle and replacement.proc.poll() is None
    pool.close()
    assert replacement.proc.wait(timeout=10) is not None and not replacement.workdir.exists()


def test_a_pooled_worker_still_sees_no_secrets(monkeypatch):
    task = load_task(FIXTURES / "tasks" / "relu_tiny.py")
    pool = WarmPool()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-pool")
    pool.take("cpu").discard()  # the idle one behind it starts with the key in our environment
    probe = load_candidate(FIXTURES / "candidates" / "faults" / "env_secrets.py", task)
    result = evaluate(task, probe, device="cpu", settings=FAST, trusted=True, pool=pool)
    pool.close()
    assert result.verdict is not Verdict.REJECT, result.reason


def test_a_cuda_device_keeps_two_idle_workers_and_hands_out_the_oldest(monkeypatch):
    """Spawning is real (a `cuda:7` worker without a GPU just waits for its job like any other)."""
    pool = WarmPool()
    first = pool.take("cuda:7")
    older, newer = pool._idle["cuda:7"]
    assert pool.take("cuda:7") is older and pool._idle["cuda:7"][0] is newer and len(pool._idle["cuda:7"]) == 2
    first.discard()
    older.discard()
    pool.close()
    assert newer.proc.wait(timeout=10) is not None
