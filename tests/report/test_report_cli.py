"""`kernelarc report RUN_DIR`, and the report `optimize` writes at its end."""

from __future__ import annotations

import pytest

from kernelarc.cli.main import run_app

from campaign.runs import ROBUST_ARGS, SLOW_SUM


def test_report_writes_the_file_and_prints_its_path(run_dir, tmp_path, capsys):
    out = tmp_path / "r" / "report.html"
    assert run_app(["report", str(run_dir), "--out", str(out)]) == 0
    stdout, _ = capsys.readouterr()
    assert stdout.strip() == str(out) and out.read_text().startswith("<!DOCTYPE html>")


@pytest.mark.parametrize("name, message", [("missing", "does not exist"), (".", "is not a kernelarc run")])
def test_bad_run_dir_is_one_line_and_exit_2(tmp_path, capsys, name, message):
    assert run_app(["report", str(tmp_path / name)]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1 and message in err and "Traceback" not in err


@pytest.mark.slow
def test_optimize_writes_the_report_and_prints_its_path(tmp_path, capsys):
    run = tmp_path / "run"
    code = run_app(["optimize", str(SLOW_SUM), *ROBUST_ARGS, "--time-limit", "1", "--out", str(run)])
    out, _ = capsys.readouterr()
    assert code in (0, 1) and (run / "report.html").is_file()  # 1: the second ran out before a winner
    assert f"report: {run / 'report.html'}" in out  # human output on stdout
