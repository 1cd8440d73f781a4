"""The worker's isolation: scrubbed environment, private caches, a channel prints and raw writes cannot forge,
and the worker's own failures reported rather than hung on."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from kernelarc.guard.candidate import load_candidate
from kernelarc.guard.judge import evaluate
from kernelarc.guard.runner import ENV_ALLOWLIST, run_worker, worker_env
from kernelarc.guard.settings import GuardSettings
from kernelarc.guard.types import Status, Verdict
from kernelarc.task.loader import load_task

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
FAULTS = FIXTURES / "candidates" / "faults"
FAST = GuardSettings(rounds=2, cpu_iterations=3, warmup=1, compile_timeout_s=60, run_timeout_s=60)
SECRETS = {"OPENAI_API_KEY": "sk-test", "ANTHROPIC_API_KEY": "sk-ant-test", "GITHUB_TOKEN": "ghp_test",
           "AWS_SECRET_ACCESS_KEY": "aws-test"}


@pytest.fixture
def relu_task():
    return load_task(FIXTURES / "tasks" / "relu_tiny.py")


@pytest.fixture
def parent_secrets(monkeypatch):
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)


def test_worker_env_keeps_only_the_allow_list(tmp_path, monkeypatch, parent_secrets):
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    monkeypatch.setenv("SOME_RANDOM_SETTING", "1")
    monkeypatch.setenv("TEARDOWN_CUPTI", "1")
    env = worker_env(tmp_path, "cpu")
    assert env["PATH"] == "/usr/bin:/bin" and env["TEARDOWN_CUPTI"] == "1"  # a user's CUPTI choice reaches the worker
    assert not set(SECRETS) & set(env) and "SOME_RANDOM_SETTING" not in env
    assert all(value not in env.values() for value in SECRETS.values())
    private = {"HOME", "TMPDIR", "TRITON_CACHE_DIR", "TORCH_EXTENSIONS_DIR"}
    assert all(env[k].startswith(str(tmp_path)) for k in private)
    assert set(env) <= set(ENV_ALLOWLIST) | private | {"PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED", "TRITON_INTERPRET"}


def test_cuda_workers_tear_cupti_down_unless_the_user_chose(tmp_path, monkeypatch):
    monkeypatch.delenv("TEARDOWN_CUPTI", raising=False)
    assert worker_env(tmp_path, "cuda:0")["TEARDOWN_CUPTI"] == "1"
    assert "TEARDOWN_CUPTI" not in worker_env(tmp_path, "cpu")
    monkeypatch.setenv("TEARDOWN_CUPTI", "0")
    assert worker_env(tmp_path, "cuda:0")["TEARDOWN_CUPTI"] == "0"


def test_triton_interprets_only_on_the_cpu(tmp_path):
    assert worker_env(tmp_path, "cpu")["TRITON_INTERPRET"] == "1"
    assert "TRITON_INTERPRET" not in worker_env(tmp_path, "cuda:0")


def test_secret_probe_fails_where_keys_are_visible(parent_secrets):
    """The probe is a real detector: imported here, with the keys set, it refuses to load."""
    spec = importlib.util.spec_from_file_location("_env_probe", FAULTS / "env_secrets.py")
    with pytest.raises(RuntimeError, match="OPENAI_API_KEY"):
        spec.loader.exec_module(importlib.util.module_from_spec(spec))


@pytest.mark.slow
def test_candidate_sees_no_parent_secrets(relu_task, parent_secrets):
    ev = evaluate(relu_task, load_candidate(FAULTS / "env_secrets.py", relu_task), device="cpu", settings=FAST,
                  trusted=True)
    assert ev.status is Status.PASSED, ev.reason + ev.log_tail
    assert ev.verdict is not Verdict.REJECT


@pytest.mark.slow
def test_forged_lines_on_every_open_fd_never_pass(relu_task):
    ev = evaluate(relu_task, load_candidate(FAULTS / "forge_channel.py", relu_task), device="cpu", settings=FAST,
                  trusted=True)
    assert ev.verdict is Verdict.REJECT and ev.status is Status.REWARD_HACK, ev.reason
    assert "forged line(s) written to the guard's result channel" in ev.reason
    assert ev.speedup is None and not ev.correct


@pytest.mark.slow
def test_worker_failure_of_its_own_is_reported_not_hung_on():
    outcome = run_worker({"not": "a job"}, deadlines={"reference": 60.0}, device="cpu")
    assert outcome.result is None and outcome.forged_lines == 0
    assert outcome.internal_error.startswith("KeyError")
    assert outcome.returncode == 3 and outcome.timed_out_stage is None
    assert "Traceback" in outcome.log_tail
