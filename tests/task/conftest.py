"""Fixtures for task tests: the examples folder and a builder of small SOL-ExecBench problem dirs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Callable

import pytest

from .problems import base_definition


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


@pytest.fixture
def examples_dir() -> Path:
    return EXAMPLES


@pytest.fixture
def make_problem(tmp_path) -> Callable[..., Path]:
    """Write a problem dir from a definition (dict or raw text) and workload rows (dicts or raw lines)."""

    def make(definition: dict | str | None = None, workloads: list | None = None, name: str = "problem") -> Path:
        root = tmp_path / name
        root.mkdir()
        d = base_definition() if definition is None else definition
        (root / "definition.json").write_text(d if isinstance(d, str) else json.dumps(d))
        rows = [{"uuid": "w1", "axes": {"n": 8}}] if workloads is None else workloads
        (root / "workload.jsonl").write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
        return root

    return make
