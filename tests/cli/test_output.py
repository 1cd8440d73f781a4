"""What `optimize` prints when its output is not a terminal (issue 19, item 6): human lines on stdout, a line
per evaluation, where the long-term memory lives; `-v` logs campaign events on stderr, `-q` keeps only the result."""

from __future__ import annotations

import re

import pytest

from kernelarc.cli.main import run_app
from kernelarc.memory import Store
from kernelarc.memory.longterm import longterm_path

from campaign.runs import ROBUST_ARGS, SLOW_SUM

EVALUATION_LINE = re.compile(r"^\[round (\d+)\] (\S+) #(\d+) (KEEP|ACCEPT|REVERT|REJECT) \((\w+)\)")


@pytest.mark.slow  # the robust scripted campaign: four candidates and a baseline judged on the CPU
def test_a_piped_campaign_prints_a_line_per_evaluation_and_verbose_logs_its_events(tmp_path, capsys):
    run_dir = tmp_path / "run"
    args = [arg for arg in ROBUST_ARGS if arg != "--fresh-memory"]  # the long-term memory is used: say where
    code = run_app(["-v", "optimize", str(SLOW_SUM), *args, "--out", str(run_dir)])
    out, err = capsys.readouterr()

    assert code == 0
    lines = out.splitlines()
    assert lines[0].startswith("task slow_sum (kernelbench")
    assert lines[1].startswith(f"long-term memory: {longterm_path()} (")
    judged = [m.groups() for line in lines if (m := EVALUATION_LINE.match(line))]
    store = Store(run_dir / "campaign.sqlite")
    records = store.evaluations()
    assert [int(cid) for *_, cid, _, _ in judged] == [r.candidate_id for r in records]  # every evaluation, in order
    assert [verdict for *_, verdict, _ in judged] == [r.evaluation.verdict.value for r in records]
    assert judged[0][:2] == ("0", "baseline:eager")
    assert any(line.startswith("[round 1] budget left ") for line in lines)
    assert "best: candidate #" in out and "INFO" not in out
    # -v: every stored event is logged on stderr as it happens, not on stdout
    assert "kernelarc: INFO: kernelarc.memory.store: stop: " in err
    assert err.count("kernelarc: INFO: ") == len(store.events())


def test_quiet_keeps_only_the_result(tmp_path, capsys):
    code = run_app(["-q", "optimize", str(SLOW_SUM), *ROBUST_ARGS, "--time-limit", "1", "--out", str(tmp_path / "r")])
    out, err = capsys.readouterr()
    assert code == 1  # the time limit cut the eager baseline: no winner
    assert "task slow_sum" not in out and "long-term memory" not in out and "[round" not in out
    assert "stopped: time_limit" in out and "INFO" not in err


def test_the_header_says_when_the_long_term_memory_is_not_used(tmp_path, capsys):
    run_app(["optimize", str(SLOW_SUM), *ROBUST_ARGS, "--time-limit", "1", "--out", str(tmp_path / "r")])
    out = capsys.readouterr().out
    assert "long-term memory: not used (--fresh-memory)" in out and str(longterm_path()) not in out
