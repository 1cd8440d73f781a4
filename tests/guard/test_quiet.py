"""The quiet lock: a worker's start-up (shared) and a timing stage (exclusive) never overlap."""

from __future__ import annotations

import subprocess
import sys
import time

from kernelarc.guard.quiet import ENV_VAR, lock_path, physical_device, quiet
from kernelarc.guard.settings import GuardSettings

HOLD_S = 1.0
_HOLDER = """
import sys, time
from kernelarc.guard.quiet import quiet
with quiet(exclusive=sys.argv[1] == "x"):
    print("held", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def _hold(mode: str, env_path: str) -> subprocess.Popen:
    """Another process holding the lock (x: exclusive, s: shared) for HOLD_S seconds once it prints."""
    import os

    proc = subprocess.Popen([sys.executable, "-c", _HOLDER, mode, str(HOLD_S)], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, ENV_VAR: env_path})
    assert proc.stdout.readline().strip() == "held"
    return proc


def _waited(exclusive: bool) -> float:
    t0 = time.monotonic()
    with quiet(exclusive=exclusive):
        return time.monotonic() - t0


def test_timing_waits_for_a_start_up_in_flight_and_start_ups_wait_for_timing(tmp_path, monkeypatch):
    path = str(tmp_path / "quiet.lock")
    monkeypatch.setenv(ENV_VAR, path)
    holder = _hold("s", path)
    assert _waited(exclusive=True) > HOLD_S / 2
    holder.wait(timeout=10)
    holder = _hold("x", path)
    assert _waited(exclusive=False) > HOLD_S / 2
    holder.wait(timeout=10)


def test_start_ups_do_not_wait_for_each_other(tmp_path, monkeypatch):
    path = str(tmp_path / "quiet.lock")
    monkeypatch.setenv(ENV_VAR, path)
    holder = _hold("s", path)
    assert _waited(exclusive=False) < HOLD_S / 2
    holder.wait(timeout=10)


def test_each_device_has_its_own_lock_file():
    assert lock_path("cuda:0") != lock_path("cuda:1") != lock_path("cpu")


def test_the_lock_follows_the_hosts_gpu_not_the_processs_index(monkeypatch):
    """Two benches given one GPU each both say cuda:0; the lock is the host's GPU's."""
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    first = lock_path("cuda:0")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    assert lock_path("cuda:0") != first
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    assert lock_path("cuda:1") == first
    assert physical_device("cpu") == "cpu"


def test_short_cuda_calls_are_timed_more_often_up_to_the_cap():
    settings = GuardSettings()
    assert settings.timed_iterations(on_cuda=True, call_s=0.010) == settings.iterations
    assert settings.timed_iterations(on_cuda=True, call_s=0.0001) == 500
    assert settings.timed_iterations(on_cuda=True, call_s=1e-7) == settings.max_iterations
    assert settings.timed_iterations(on_cuda=False, call_s=1e-7) == settings.cpu_iterations


def test_a_lock_held_too_long_is_given_up_rather_than_waited_for(tmp_path, monkeypatch, capsys):
    path = str(tmp_path / "quiet.lock")
    monkeypatch.setenv(ENV_VAR, path)
    holder = _hold("x", path)
    t0 = time.monotonic()
    with quiet(exclusive=True, wait_s=0.2):
        waited = time.monotonic() - t0
    holder.wait(timeout=10)
    assert 0.2 <= waited < HOLD_S / 2 and "going on without it" in capsys.readouterr().err
