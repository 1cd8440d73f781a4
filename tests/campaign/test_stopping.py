"""Stopping a campaign: a time limit that cuts evaluations in flight, Ctrl-C once and twice, a task whose
reference cannot run, and `--resume` with a larger budget or nothing new to do.

Wall-clock bounds here are deadlines, not speeds: the slow evaluations take minutes, the limits seconds,
and each bound sits far between the two.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from kernelarc.cli.main import run_app

from campaign.runs import CANDIDATES, REPO, SLOW_SUM, open_store
from campaign.test_resume import judged_and_pending

pytestmark = pytest.mark.slow

TASKS = REPO / "tests" / "fixtures" / "tasks"
CHEAP = ["--no-compile-baseline", "--rounds", "2", "--device", "cpu", "--fresh-memory"]
SLOW_EVAL_S = 120.0
"""At least what the slow evaluations would take (sleepy_reference sleeps this long per call, endless longer)."""


def script(tmp_path: Path, *names: str) -> Path:
    """A scripted backend's script: agent a0-reduction proposes the fixture candidates `names` in order."""
    steps = [{"source_file": str(CANDIDATES / f"{n}.py"), "claim": n} for n in names]
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"agents": {"a0-reduction": steps}}))
    return path


def scripted(path: Path) -> list[str]:
    return ["--agents", "1", "--strategies", "reduction", "--backend", "scripted", "--backend-option", f"script={path}"]


def test_the_time_limit_cuts_a_baseline_that_cannot_finish(tmp_path, capsys):
    run_dir = tmp_path / "run"
    t0 = time.monotonic()
    code = run_app(["optimize", str(TASKS / "sleepy_reference.py"), *scripted(script(tmp_path, "fast")), *CHEAP,
                    "--time-limit", "5", "--out", str(run_dir), "--json"])
    elapsed = time.monotonic() - t0
    assert elapsed < SLOW_EVAL_S / 2, elapsed
    summary = json.loads(capsys.readouterr().out)
    assert code == 1 and summary["best"] is None and summary["stop_reason"] == "time_limit"
    assert summary["baselines"]["eager"] is None
    assert "the time limit (5 s) passed" in summary["stop_detail"] and "eager not judged" in summary["stop_detail"]
    assert summary == json.loads((run_dir / "summary.json").read_text())
    assert summary["candidates"] == 0 and open_store(run_dir).evaluations() == []


@pytest.mark.heavy
def test_the_time_limit_cuts_a_candidate_in_flight_and_leaves_it_pending(tmp_path, capsys):
    """Resumed with a larger budget and a time limit, the endless candidate is cut where the final timings'
    reserve begins, not failed."""
    run_dir = tmp_path / "run"
    path = script(tmp_path, "fast", "endless")
    assert run_app(["optimize", str(SLOW_SUM), *scripted(path), *CHEAP, "--budget", "1", "--out", str(run_dir)]) == 0
    capsys.readouterr()
    t0 = time.monotonic()
    code = run_app(["optimize", "--resume", str(run_dir), "--budget", "3", "--time-limit", "40", "--json"])
    elapsed = time.monotonic() - t0
    assert elapsed < SLOW_EVAL_S / 2, elapsed
    out, err = capsys.readouterr()
    summary = json.loads(out)
    assert code == 0 and summary["stop_reason"] == "time_limit" and summary["budget"] == 3
    store = open_store(run_dir)
    (pending,) = [c for c in store.pending_candidates() if c.agent_id is not None]
    assert pending.claim == "endless" and summary["pending"] == [pending.id]
    assert f"#{pending.id} left pending" in summary["stop_detail"]
    assert "the final timings' reserve" in summary["stop_detail"]
    assert summary["verdicts"] == {"KEEP": 1}  # the cut candidate has no verdict
    # Whether the finals then fit their reserve depends on this machine's load (CI's two workers cut them once).
    assert summary["best"]["agent"] == "a0-reduction"
    assert "resuming: 1 candidate(s) judged, 0 pending, budget 3, time limit 40 s" in err


@pytest.mark.heavy
def test_resume_with_a_larger_budget_runs_more_and_a_finished_run_is_left_as_it_is(tmp_path, capsys):
    run_dir = tmp_path / "run"
    path = script(tmp_path, "fast", "loop_rows")
    base = ["optimize", str(SLOW_SUM), *scripted(path), *CHEAP, "--out", str(run_dir)]
    assert run_app([*base, "--budget", "1"]) == 0
    capsys.readouterr()
    before = (run_dir / "summary.json").read_bytes()
    assert json.loads(before)["candidates"] == 1

    assert run_app(["optimize", "--resume", str(run_dir)]) == 0
    out, err = capsys.readouterr()
    assert (run_dir / "summary.json").read_bytes() == before  # no re-timing, nothing rewritten
    assert "task slow_sum" in out and f"run dir {run_dir}" in out and "resuming: 1 candidate(s) judged" in out
    assert "nothing new to do" in err and "--remeasure" in err

    assert run_app(["optimize", "--resume", str(run_dir), "--budget", "2", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["candidates"] == summary["budget"] == 2 and summary["stop_reason"] == "budget"
    assert summary["verdicts"] == {"KEEP": 1, "REVERT": 1}


def test_a_campaign_on_a_reference_that_cannot_run_stops_at_once(tmp_path, capsys):
    run_dir = tmp_path / "run"
    code = run_app(["optimize", str(TASKS / "raising_reference.py"), *scripted(script(tmp_path, "fast")),
                    "--rounds", "2", "--device", "cpu", "--fresh-memory", "--out", str(run_dir)])
    out, err = capsys.readouterr()
    assert code == 2 and "Traceback" not in out + err, err
    assert out.splitlines()[0].startswith("task raising_reference")  # the human lines: header, verdicts, report
    (error,) = err.splitlines()  # stderr: the error alone
    assert "this reference always fails" in error
    assert error.startswith("kernelarc: error: INVALID_REFERENCE: the reference of raising_reference")
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["stop_reason"] == "invalid_reference" and summary["candidates"] == 0
    assert summary["baselines"]["torch.compile"] is None  # the same reference: not judged a second time


def _collect(stream, lines: list[str]) -> threading.Thread:
    thread = threading.Thread(target=lambda: lines.extend(iter(stream.readline, "")), daemon=True)
    thread.start()
    return thread


def _wait_for(predicate, timeout_s: float, proc: subprocess.Popen, lines: list[str]) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline or proc.poll() is not None:
            raise AssertionError(f"rc={proc.poll()}, stderr={''.join(lines)[-3000:]!r}")
        time.sleep(0.1)


def test_ctrl_c_once_says_what_it_waits_for_and_twice_stops_at_once(tmp_path):
    run_dir = tmp_path / "run"
    cmd = [sys.executable, "-c", "from kernelarc.cli.main import main; main()", "optimize", str(SLOW_SUM),
           *scripted(script(tmp_path, "endless")), *CHEAP, "--budget", "1", "--out", str(run_dir)]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=dict(os.environ))
    lines: list[str] = []
    reader = _collect(proc.stderr, lines)
    try:
        db = run_dir / "campaign.sqlite"
        _wait_for(lambda: db.exists() and judged_and_pending(db) == (0, 1), 300, proc, lines)
        time.sleep(1.0)  # the endless candidate's evaluation is under way
        os.kill(proc.pid, signal.SIGINT)
        _wait_for(lambda: any("interrupted" in line for line in lines), 30, proc, lines)
        (first,) = [line for line in lines if "interrupted" in line]
        assert "waiting for candidate #2 (a0-reduction)" in first
        assert f"kernelarc optimize --resume {run_dir}" in first
        time.sleep(2.0)
        assert proc.poll() is None  # still waiting for the evaluation
        t0 = time.monotonic()
        os.kill(proc.pid, signal.SIGINT)
        assert proc.wait(timeout=SLOW_EVAL_S / 2) == 130
        assert time.monotonic() - t0 < SLOW_EVAL_S / 2
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        reader.join(timeout=5)
    text = "".join(lines)
    assert "stopping now: candidate #2 (a0-reduction) cut and left pending" in text, text
    assert "Traceback" not in text
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["stop_reason"] == "interrupted" and summary["pending"] == [2]
    assert [c.id for c in open_store(run_dir).pending_candidates()] == [2]
