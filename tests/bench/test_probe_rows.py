"""bench/gpu/probe_rows.py: one problem's failure becomes its row; the other problems' rows are kept in order."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "gpu" / "probe_rows.py"


def test_a_failing_problem_is_a_row_and_the_others_are_kept():
    spec = importlib.util.spec_from_file_location("probe_rows", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)

    def probe(problem: str) -> list[dict]:
        if problem == "bad":
            raise ValueError("no such workload")
        return [{"problem": problem, "row": 1}, {"problem": problem, "row": 2}]

    rows = module.probe_each(["a", "bad", "b"], probe)
    assert rows == [{"problem": "a", "row": 1}, {"problem": "a", "row": 2},
                    {"problem": "bad", "error": "ValueError: no such workload"},
                    {"problem": "b", "row": 1}, {"problem": "b", "row": 2}]
