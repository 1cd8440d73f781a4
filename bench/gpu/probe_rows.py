"""What the per-problem GPU probes share (clock_pair_probe.py, gap_clock_probe.py): every problem's rows, a
problem that fails kept as one row saying why, so that one problem's failure does not lose the others'."""

from __future__ import annotations

from collections.abc import Callable


def probe_each(problems: list[str], probe: Callable[[str], list[dict]]) -> list[dict]:
    """The rows of `probe(problem)` for each problem in order; a failure is that problem's row."""
    rows: list[dict] = []
    for problem in problems:
        try:
            rows += probe(problem)
        except Exception as e:  # noqa: BLE001 - one problem's failure is its row
            rows.append({"problem": problem, "error": f"{type(e).__name__}: {e}"})
            print(rows[-1], flush=True)
    return rows
