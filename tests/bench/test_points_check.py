"""bench/gpu/points_check.sh, run on the CPU: renders the named families' points, judges each with
`kernelarc eval` split over two workers as over two GPUs, and sums them up in points.tsv."""

from __future__ import annotations

import csv
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
def test_every_point_is_judged_and_a_family_that_does_not_apply_is_named(tmp_path):
    env = {**os.environ, "OUT": str(tmp_path), "PYTHON": sys.executable, "DEVICE": "cpu", "GPUS": "2"}
    done = subprocess.run(["bash", "bench/gpu/points_check.sh", "200", "mlp_relu_small:library_gemm",
                           "gemm_bf16_4096:cpp_forward"], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=400)
    assert done.returncode == 0, done.stderr
    assert "gemm_bf16_4096:cpp_forward: not rendered" in done.stdout
    assert "gpu 0: mlp_relu_small.library_gemm.0 rc=0" in done.stdout
    assert "gpu 1: mlp_relu_small.library_gemm.1 rc=0" in done.stdout
    with open(tmp_path / "points.tsv") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    assert [r["candidate"] for r in rows] == ["mlp_relu_small.library_gemm.0", "mlp_relu_small.library_gemm.1"]
    assert all(r["status"] == "PASSED" and r["timing"] == "cpu_wall" for r in rows)
    with tarfile.open(tmp_path / "points.tgz") as packed:  # a device call returns only a few files
        packed.extractall(tmp_path / "unpacked", filter="data")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["points.tgz", "points.tsv", "unpacked"]
    evaluation = json.loads((tmp_path / "unpacked" / "evals" / "mlp_relu_small.library_gemm.0.json").read_text())
    assert evaluation["verdict"] in ("KEEP", "ACCEPT", "REVERT")
