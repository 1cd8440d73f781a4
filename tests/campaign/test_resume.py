"""`kill -9` a real `kernelarc optimize` mid-run, then `--resume`: nothing lost, nothing judged twice."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from kernelarc.campaign import AgentSlot, Campaign, start
from kernelarc.campaign.executor import LocalExecutor
from kernelarc.campaign.run import DB_NAME
from kernelarc.cli.main import run_app
from kernelarc.guard import GuardSettings
from kernelarc.memory import Store
from kernelarc.strategies import get_strategy
from kernelarc.task.loader import load_task

from campaign.runs import (
    CANDIDATES, ROBUST_ARGS, SLOW_SUM, decisions, open_store, options, proposal, robust_options, scripted_agents,
    scripted_backend,
)

KILL_DEADLINE_S = 300.0
"""Longest wait for the run to reach the kill point (worker start-up is slow on a loaded CPU)."""
SCRIPTED = [CANDIDATES / f"{name}.py" for name in ("fast", "loop_rows", "wrong", "gated")]
OPTIMIZE = "from kernelarc.cli.main import main; main()"
KILLED_REGISTERING = """
import os, signal
from kernelarc.memory import Store
add_candidate = Store.add_candidate
def add_or_die(self, **row):
    if row["claim"] == {claim!r}:
        os.killpg(os.getpgrp(), signal.SIGKILL)
    return add_candidate(self, **row)
Store.add_candidate = add_or_die
"""
"""Code that SIGKILLs the run as it registers the candidate claiming `claim`, after the agents before it."""


def judged_and_pending(db: Path) -> tuple[int, int]:
    """Agents' candidates judged and waiting, read without writing (the run owns the database)."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=5)
    try:
        return conn.execute(
            "SELECT COUNT(e.id), COUNT(*) - COUNT(e.id) FROM candidates c LEFT JOIN evaluations e"
            " ON e.candidate_id = c.id WHERE c.agent_id IS NOT NULL").fetchone()
    except sqlite3.OperationalError:  # not created or not migrated yet
        return 0, 0
    finally:
        conn.close()


def optimize(run_dir: Path, code: str = OPTIMIZE) -> subprocess.Popen:
    """`kernelarc optimize` of the robust campaign in a subprocess of its own process group, run by `code`."""
    cmd = [sys.executable, "-c", code, "optimize", str(SLOW_SUM), *ROBUST_ARGS, "--out", str(run_dir)]
    return subprocess.Popen(cmd, env=dict(os.environ), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)


def run_until_killed(run_dir: Path) -> tuple[int, int]:
    """Start the campaign in a subprocess; SIGKILL its process group once one candidate is judged and another waits."""
    proc = optimize(run_dir)
    deadline = time.monotonic() + KILL_DEADLINE_S
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            judged, pending = judged_and_pending(run_dir / DB_NAME) if (run_dir / DB_NAME).exists() else (0, 0)
            if judged >= 1 and pending >= 1:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                return judged, pending
            time.sleep(0.05)
        raise AssertionError(f"never reached the kill point; rc={proc.poll()}, stderr={proc.stderr.read()[-2000:]!r}")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        proc.stderr.close()


@pytest.mark.heavy
def test_kill_9_then_resume_evaluates_every_candidate_exactly_once(tmp_path, capsys, robust):
    run_dir = tmp_path / "run"
    judged, pending = run_until_killed(run_dir)
    store = open_store(run_dir)
    killed_pending = [c.id for c in store.pending_candidates() if c.agent_id is not None]
    assert len(killed_pending) == pending >= 1 and store.get_meta().stop_reason is None

    assert run_app(["optimize", "--resume", str(run_dir), "--json"]) == 0
    printed = json.loads(capsys.readouterr().out)

    store = open_store(run_dir)
    sources = [c.source for c in store.candidates() if c.agent_id is not None]
    assert sorted(sources) == sorted(p.read_text() for p in SCRIPTED)  # each scripted candidate once, no more
    assert store.pending_candidates() == []
    judged_ids = [r.candidate_id for r in store.evaluations()]
    assert len(judged_ids) == len(set(judged_ids))
    (resumed,) = store.events("resume")
    assert resumed.payload["pending"] == killed_pending
    assert store.get_meta().stop_reason == "budget"
    summary = json.loads((run_dir / "summary.json").read_text())
    assert printed == summary and summary["candidates"] == summary["budget"] == 4
    # and the decisions are those of the same campaign run without interruption
    assert decisions(store) == decisions(open_store(robust.run_dir))


@pytest.mark.heavy
def test_a_kill_while_a_round_registers_its_candidates_changes_no_decision(tmp_path, capsys, robust):
    """Killed between two agents' registrations of round 2, the resumed campaign replays that round whole.

    Registered one by one, the first agent's step was kept and the second's lost: the resumed round
    asked the first for a step past its script, and it retired.
    """
    run_dir = tmp_path / "run"
    proc = optimize(run_dir, KILLED_REGISTERING.format(claim="spawns a process") + OPTIMIZE)  # a1's 2nd
    assert proc.wait(timeout=KILL_DEADLINE_S) == -signal.SIGKILL, proc.stderr.read()[-2000:]
    proc.stderr.close()
    killed = open_store(run_dir)
    assert len(killed.evaluations()) == 3 and killed.pending_candidates() == []  # baseline, round 1; no round 2

    assert run_app(["optimize", "--resume", str(run_dir), "--json"]) == 0
    capsys.readouterr()
    assert decisions(open_store(run_dir)) == decisions(open_store(robust.run_dir))


def test_a_reopened_campaign_shows_each_agent_its_stored_verdicts(tmp_path, robust):
    """What an agent is shown after a resume is what it would have been shown without the interruption."""
    shutil.copytree(robust.run_dir, tmp_path / "run")
    store = open_store(tmp_path / "run")
    task = load_task(SLOW_SUM)
    agents = scripted_agents([], [])
    slots = [AgentSlot(id=a.id, index=i, strategy=get_strategy(a.strategy), agent=agents[i])
             for i, a in enumerate(store.agents())]
    campaign = Campaign(task, robust_options(), store, LocalExecutor(task, ["cpu"], GuardSettings()), slots, None)
    for slot in slots:
        shown = [(n.candidate_id, n.claim, n.verdict) for n in campaign.context(slot).last_verdicts]
        stored = [(r.candidate_id, store.candidate(r.candidate_id).claim, r.evaluation.verdict)
                  for r in store.evaluations(slot.id)]
        assert shown == stored and len(shown) == 2


class Killed(BaseException):
    """Stands in for SIGKILL inside the test's own process: nothing after it runs, nothing catches it."""


def test_a_failed_step_is_counted_with_its_round_or_not_at_all(tmp_path, monkeypatch):
    """a0's backend fails while a1 proposes; the run dies registering a1's candidate. a0's failed step
    must not be counted: resumed, the round is proposed again whole, a0's step included."""
    def backend_fails(ctx):
        raise RuntimeError("the model server went away")

    a0, a1 = scripted_agents([backend_fails], [proposal("fast")])
    add_candidate = Store.add_candidate

    def add_or_die(self, **row):
        if row["claim"] == "fast":
            raise Killed
        return add_candidate(self, **row)

    monkeypatch.setattr(Store, "add_candidate", add_or_die)
    with pytest.raises(Killed):
        start(SLOW_SUM, options(agents=2, strategies=("reduction", "memory"), budget=2,
                                backend=scripted_backend([a0, a1])), tmp_path)
    store = open_store(tmp_path)
    assert len(store.events("agent_error")) == 1  # the failure itself is on record
    assert [a.state.steps for a in store.agents()] == [0, 0] and not any(a.state.idle for a in store.agents())
