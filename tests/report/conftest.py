"""Run directories shared by the report tests (written through the store, see runs.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from report.runs import write_bench, write_run


@pytest.fixture(scope="session")
def run_dir(tmp_path_factory) -> Path:
    """A recorded campaign with every verdict and a hostile winner (read-only for tests)."""
    path = tmp_path_factory.mktemp("report") / "run"
    write_run(path)
    return path


@pytest.fixture
def bench_dir(run_dir, tmp_path) -> Path:
    """A bench dir with one complete task (a copy of run_dir) and one failed task."""
    path = tmp_path / "bench"
    write_bench(path, run_dir)
    return path
