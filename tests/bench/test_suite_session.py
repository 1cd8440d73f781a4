"""bench/gpu/suite_session.sh, run on the CPU: it benches the named tasks detached into one results
folder, two benches at once as on a machine of two GPUs, and packs it into $OUT/results.tgz; a second
call keeps the tasks already complete."""

from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
@pytest.mark.heavy
def test_runs_the_named_tasks_two_at_once_packs_the_results_and_keeps_them_on_the_next_call(tmp_path):
    results, out = tmp_path / "results", tmp_path / "out"
    env = {**os.environ, "SUITE": "bench/suites/cpu_smoke", "PYTHON": sys.executable, "OUT": str(out),
           "TMPDIR": str(tmp_path), "GPUS": "2"}
    command = ["bash", "bench/gpu/suite_session.sh", str(results), "240", "--budget", "1", "--agents", "1",
               "--no-compile-baselines", "--device", "cpu", "--rounds", "1", "--", "relu_tiny", "slow_rowsum"]

    first = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stderr
    assert "[1/1] relu_tiny: complete" in first.stdout and "[1/1] slow_rowsum: complete" in first.stdout
    assert "gpu 0 all done" in first.stdout and "gpu 1 all done" in first.stdout
    with tarfile.open(out / "results.tgz") as packed:
        names = packed.getnames()
        stored = json.load(packed.extractfile("results/results.json"))
    assert "results/relu_tiny/campaign/summary.json" in names and "results/slow_rowsum/campaign/summary.json" in names
    assert sorted(r["task"] for r in stored["rows"]) == ["relu_tiny", "slow_rowsum"]  # neither bench dropped the other's row
    table = subprocess.run([sys.executable, "bench/gpu/candidates_csv.py", "cpu", str(results)], cwd=REPO,
                           capture_output=True, text=True, timeout=60)
    rows = list(csv.DictReader(io.StringIO(table.stdout)))
    assert table.returncode == 0 and {r["task"] for r in rows} == {"relu_tiny", "slow_rowsum"}
    assert {"baseline: eager"} <= {r["point_or_baseline"] for r in rows}
    assert all(r["run"] == "cpu" and r["timing"] == "cpu_wall" and r["verdict"] for r in rows)

    second = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stderr
    assert "relu_tiny: complete in" in second.stdout and "slow_rowsum: complete in" in second.stdout


def test_render_points_writes_each_point_of_a_family_or_says_why_not(tmp_path):
    script = [sys.executable, "bench/gpu/render_points.py"]
    done = subprocess.run([*script, "bench/suites/h200/mlp_relu_small.py", "cpp_forward", str(tmp_path)], cwd=REPO,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == [f"mlp_relu_small.cpp_forward.{n}.py" for n in range(4)]
    assert "graphed_forward" in (tmp_path / files[0]).read_text()
    picked = subprocess.run([*script, "bench/suites/h200/mlp_relu_small.py", "cpp_forward@1,3", str(tmp_path / "some")],
                            cwd=REPO, capture_output=True, text=True, timeout=300)
    assert picked.returncode == 0, picked.stderr
    assert sorted(p.name for p in (tmp_path / "some").iterdir()) == [f"mlp_relu_small.cpp_forward.{n}.py" for n in (1, 3)]
    refused = subprocess.run([*script, "bench/suites/h200/gemm_bf16_4096.py", "cpp_forward", str(tmp_path)],
                             cwd=REPO, capture_output=True, text=True, timeout=300)
    assert refused.returncode == 2 and "does not apply to gemm_bf16_4096: not launch-bound" in refused.stderr
