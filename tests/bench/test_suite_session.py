"""bench/gpu/suite_session.sh, run on the CPU: it benches the named tasks detached into one results
folder and packs it into $OUT/results.tgz; a second call keeps the tasks already complete."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_runs_the_named_tasks_packs_the_results_and_keeps_them_on_the_next_call(tmp_path):
    results, out = tmp_path / "results", tmp_path / "out"
    env = {**os.environ, "SUITE": "bench/suites/cpu_smoke", "PYTHON": sys.executable, "OUT": str(out),
           "TMPDIR": str(tmp_path)}
    command = ["bash", "bench/gpu/suite_session.sh", str(results), "240", "--budget", "1", "--agents", "1",
               "--no-compile-baselines", "--device", "cpu", "--rounds", "1", "--", "relu_tiny"]

    first = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    assert "[1/1] relu_tiny: complete" in first.stdout and "all done" in first.stdout
    with tarfile.open(out / "results.tgz") as packed:
        names = packed.getnames()
    assert "results/results.json" in names and "results/relu_tiny/campaign/summary.json" in names

    second = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stderr
    assert "relu_tiny: complete in" in second.stdout and "kept" in second.stdout
