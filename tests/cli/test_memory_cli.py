"""`kernelarc memory list|show|export|clear` on what the mixed campaign left in the long-term memory."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys

import pytest

from kernelarc.cli.main import run_app
from kernelarc.memory import LongTermMemory

from campaign.mixed import build_mixed
from campaign.runs import SharedRun, open_store, shared_run


@pytest.fixture(scope="session")
def mixed(tmp_path_factory) -> SharedRun:
    return shared_run(tmp_path_factory, "mixed", build_mixed)


@pytest.fixture
def home(mixed, tmp_path, monkeypatch):
    """A copy of the mixed campaign's KERNELARC_HOME, set for this test (and any subprocess it starts)."""
    copy = tmp_path / "home"
    shutil.copytree(mixed.home, copy)
    monkeypatch.setenv("KERNELARC_HOME", str(copy))
    return copy


def test_the_campaign_left_its_findings_under_the_users_home(mixed, home):
    campaign = {(f.kind, f.candidate_hash) for f in open_store(mixed.run_dir).findings()}
    with LongTermMemory() as memory:
        absorbed = {(f.kind, f.candidate_hash) for f in memory.findings()}
    assert absorbed == campaign and len(campaign) >= 2  # a win and a trap at least


def test_list_show_export(home, capsys):
    with LongTermMemory() as memory:
        findings = memory.findings()
    assert run_app(["memory", "list"]) == 0
    out, err = capsys.readouterr()
    assert f"{len(findings)} finding(s)" in err
    for f in findings:
        assert f"#{f.id}" in out
    win = next(f for f in findings if f.kind.value == "win")
    assert run_app(["memory", "show", str(win.id)]) == 0
    out, _ = capsys.readouterr()
    assert out.startswith(f"#{win.id} win for reduction, learned on task slow_sum") and f"{win.speedup:.2f}x" in out
    assert run_app(["memory", "export"]) == 0
    exported = json.loads(capsys.readouterr().out)
    assert [f["id"] for f in exported["findings"]] == [f.id for f in findings]
    assert run_app(["memory", "export", "--kernel-type", "gemm"]) == 0  # slow_sum is a reduction
    assert json.loads(capsys.readouterr().out)["findings"] == []


def test_show_an_unknown_finding_exits_2(home, capsys):
    assert run_app(["memory", "show", "999"]) == 2
    _, err = capsys.readouterr()
    assert err.count("\n") == 1 and "no finding #999" in err


def test_clear_asks_first_and_deletes_with_yes(home, capsys, monkeypatch):
    with LongTermMemory() as memory:
        before = len(memory.findings())
    monkeypatch.setattr(sys, "stdin", io.StringIO("n\n"))
    assert run_app(["memory", "clear"]) != 0  # declined: aborted, nothing deleted
    with LongTermMemory() as memory:
        assert len(memory.findings()) == before
    assert run_app(["memory", "clear", "--yes"]) == 0
    assert f"deleted {before} finding(s)" in capsys.readouterr().err
    with LongTermMemory() as memory:
        assert memory.findings() == []


def test_a_subprocess_reads_the_home_it_inherits(home):
    """The command line, started as users start it, finds the memory through KERNELARC_HOME."""
    done = subprocess.run([sys.executable, "-c", "from kernelarc.cli.main import main; main()", "memory", "export"],
                          env=dict(os.environ), capture_output=True, text=True, timeout=120, check=True)
    with LongTermMemory() as memory:
        assert len(json.loads(done.stdout)["findings"]) == len(memory.findings()) > 0
