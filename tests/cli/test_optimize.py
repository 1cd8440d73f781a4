"""`kernelarc optimize`: a time-limited run with --json, quiet progress off a terminal, and bad options."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from kernelarc.agents import LeaderboardEntry
from kernelarc.campaign import Progress
from kernelarc.campaign.run import DB_NAME
from kernelarc.cli.main import run_app
from kernelarc.cli.progress import LiveProgress
from kernelarc.memory import Store

from campaign.runs import ROBUST_ARGS, SLOW_SUM, open_store


def test_time_limit_stops_and_json_prints_the_summary(tmp_path, capsys):
    run_dir = tmp_path / "run"
    code = run_app(["optimize", str(SLOW_SUM), *ROBUST_ARGS, "--time-limit", "1", "--out", str(run_dir), "--json"])
    out, err = capsys.readouterr()
    assert code == 1  # no correct candidate: not even a baseline was judged
    summary = json.loads(out)  # stdout holds the summary and nothing else
    assert summary == json.loads((run_dir / "summary.json").read_text())
    # judging the eager baseline alone outlasts one second: it was cut, and no agent was asked for a candidate
    assert summary["stop_reason"] == "time_limit" and summary["candidates"] == 0
    assert [a["steps"] for a in summary["agents"]] == [0, 0]
    assert summary["best"] is None and summary["baselines"]["eager"] is None
    assert summary["stop_detail"] == "the time limit (1 s) passed: baseline(s) eager not judged"
    assert open_store(run_dir).get_meta().stop_reason == "time_limit"
    assert "budget left" not in err  # no live table when stderr is not a terminal


def progress_snapshot() -> Progress:
    leader = LeaderboardEntry(agent_id="a0-reduction", strategy="reduction", candidate_id=2, speedup=95.0,
                              latency_ms=0.02, source="...")
    rows = [{"agent": "a0-reduction", "strategy": "reduction", "steps": 3, "verdicts": {"KEEP": 1, "REVERT": 2},
             "speedup": 95.0, "plateaus": 0, "must_draft": True, "retired": False},
            {"agent": "a1-memory", "strategy": "memory", "steps": 2, "verdicts": {"REJECT": 2},
             "speedup": 1.0, "plateaus": 0, "must_draft": False, "retired": True}]
    return Progress(round=3, budget_left=5, leader=leader, agents=rows)


@pytest.mark.parametrize("terminal", [True, False])
def test_live_progress_shows_each_agent_only_on_a_terminal(terminal):
    buffer = io.StringIO()
    console = Console(file=buffer, force_terminal=terminal, width=140)
    with LiveProgress(console, enabled=console.is_terminal) as progress:
        progress.update(progress_snapshot())
    text = buffer.getvalue()
    if terminal:
        assert "budget left 5" in text and "a0-reduction 95.00x" in text
        assert "must draft" in text and "retired" in text and "a1-memory" in text
    else:
        assert text == ""


def existing_campaign(tmp_path: Path) -> Path:
    run_dir = tmp_path / "taken"
    Store(run_dir / DB_NAME).close()
    return run_dir


BAD_OPTIONS = {
    "unknown strategy": (["--backend", "scripted", "--strategies", "reduction,nosuch"], "unknown strategy 'nosuch'"),
    "unknown backend": (["--backend", "nosuch"], "unknown agent backend 'nosuch'"),
    "option without =": (["--backend", "scripted", "--backend-option", "script"], "KEY=VALUE"),
    "option the backend lacks": (["--backend", "scripted", "--backend-option", "model=x"], "rejected its options"),
    "missing script": (["--backend", "scripted", "--backend-option", "script=/nonexistent/s.json"], "cannot read"),
    "memory garbage": (["--backend", "scripted", "--memory", "lots"], "'lots'"),
    "target SOL of 0": (["--backend", "scripted", "--target-sol", "0"], "--target-sol"),
    "no agents": (["--agents", "0"], "--agents"),
}


@pytest.mark.parametrize("args,message", BAD_OPTIONS.values(), ids=BAD_OPTIONS.keys())
def test_bad_options_exit_2_with_one_line(tmp_path, capsys, args, message):
    out_dir = tmp_path / "out"
    assert run_app(["optimize", str(SLOW_SUM), *args, "--out", str(out_dir)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith("kernelarc: error:") and message in err, err
    assert not out_dir.exists()  # refused before anything was written


def test_bad_run_dirs_exit_2_with_one_line(tmp_path, capsys):
    taken = existing_campaign(tmp_path)
    cases = [
        (["optimize", str(SLOW_SUM), "--backend", "scripted", "--out", str(taken)], "already holds a campaign"),
        (["optimize", "--resume", str(tmp_path / "absent")], "no campaign to resume"),
        (["optimize", str(SLOW_SUM), "--resume", str(taken)], "not both"),
        (["optimize"], "missing TASK"),
    ]
    for argv, message in cases:
        assert run_app(argv) == 2, argv
        out, err = capsys.readouterr()
        assert out == "" and err.count("\n") == 1 and message in err, (argv, err)
    assert not (tmp_path / "absent").exists()



def test_the_final_line_says_when_a_baseline_displaced_the_leader(tmp_path):
    buffer = io.StringIO()
    vs_compile = {"baseline_candidate_id": 2, "candidate_id": 1, "verdict": "KEEP", "candidate_ms": 1.0,
                  "baseline_ms": 1.2, "speedup": 1.2, "basis": "wall", "timing": "cuda_events"}
    best = {"candidate_id": 1, "agent": "baseline:eager", "strategy": "baseline", "baseline": "eager",
            "head_to_head": {"torch.compile": vs_compile}, "speedup_vs_eager": None, "speedup_vs_compile": 1.2,
            "speedup_vs_reference_chained": 1.0, "sol_score": None, "timing": "cuda_events",
            "files": ["best/model_new.py"], "displaced_leader": "a1-fusion"}
    summary = {"stop_reason": "time_limit", "candidates": 9, "verdicts": {"ACCEPT": 9}, "best": best}
    LiveProgress(Console(file=buffer, width=200), enabled=False).final(summary, tmp_path)
    shown = buffer.getvalue()
    assert "best: the eager baseline (no agent candidate beat it" in shown
    assert "a1-fusion led the campaign but timed slower than it head to head at the end" in shown
    # the ratio comes with the two times of its own head-to-head, and the baseline is not timed against itself
    assert "1.200x vs torch.compile: 1 ms against 1.2 ms, timed head to head" in shown and "vs eager" not in shown
