"""The HTML report of a campaign and of a bench: contents, escaping, no network."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from kernelarc.report.chart import Point, leaderboard_svg
from kernelarc.report.html import NotARunDirError, load_campaign, render_campaign, run_kind, write_report

from report.runs import HOSTILE, HOSTILE_SOURCE


@pytest.fixture(scope="module")
def page(run_dir, tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("page") / "report.html"
    return write_report(run_dir, out).read_text()


def test_no_script_and_no_external_resource(page):
    assert "<script" not in page.lower()
    assert not re.search(r"""(src|href)\s*=\s*["']?\s*(https?:)?//""", page, re.IGNORECASE)
    assert "http://" not in page and "https://" not in page
    assert "default-src 'none'" in page  # the browser itself refuses to load or run anything


def test_hostile_text_is_escaped_everywhere(page):
    assert HOSTILE not in page
    escaped = "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;"
    # the winner's source (twice: its card and the winner's section), its claim, its reason, a log, an agent error
    assert page.count(escaped) >= 6
    assert "&lt;img src=x onerror=alert(2)&gt;" in page and "<img" not in page


def test_leaderboard_marks_the_winner_on_a_log_axis(page, run_dir):
    assert '<svg class="chart"' in page
    assert "chained speedup over the reference (log)" in page  # 0.5x to 200x spans orders of magnitude
    data = load_campaign(run_dir)
    winner = data["winner"]
    assert f"winner: #{winner.id} a0-reduction" in page
    assert [c.id for c in data["leader_changes"]] == [2, winner.id]
    assert [round(c.chained, 6) for c in data["leader_changes"]] == [4.0, 200.0]  # 4x, then 4x * 50x


def test_winner_figures_are_summary_jsons(page):
    section = page[page.index('id="winner"'):page.index('id="leaderboard"')]
    assert "187.654x" in section and "23.457x" in section and "200.000x" in section
    assert "4.879" in section and "0.61" in section  # eager and compile ms of the head-to-head


def test_every_candidate_with_its_verdict_reason_and_diff(page, run_dir):
    data = load_campaign(run_dir)
    assert len(data["candidates"]) == 7
    for c in data["candidates"]:
        assert f'id="cand-{c.id}"' in page
    verdicts = {c.claim.split()[0]: c.verdict for c in data["candidates"]}
    assert verdicts == {"baseline:": "ACCEPT", "stack": "KEEP", "one": "KEEP", "positional": "ACCEPT",
                        "loop": "REVERT", "off": "REJECT", "proposed": "PENDING"}
    hostile = data["winner"]
    assert hostile.source == HOSTILE_SOURCE and hostile.diff_base == hostile.parent_id
    assert any(kind == "add" and "keepdim=True" in line for kind, line in hostile.diff)
    assert "workload default: 100% of elements out of tolerance" in page
    assert "Not judged:" in page


def test_lineage_puts_each_candidate_under_its_incumbent(run_dir):
    data = load_campaign(run_dir)
    roots = {c.claim.split()[0]: c for c in data["roots"]}
    assert set(roots) == {"baseline:", "stack", "loop", "off"}  # judged against the reference
    assert [c.claim.split()[0] for c in roots["stack"].children] == ["one"]
    assert [c.claim.split()[0] for c in roots["stack"].children[0].children] == ["positional"]


def test_findings_agents_and_lock(page, run_dir):
    findings = load_campaign(run_dir)["findings"]
    assert {f["kind"] for f in findings} == {"win", "trap"}
    section = page[page.index('id="findings"'):page.index('id="agents"')]
    for f in findings:
        assert f'href="#cand-{f["candidate_id"]}"' in section
    agents = page[page.index('id="agents"'):page.index('id="candidates"')]
    assert "a0-reduction" in agents and "a1-memory" in agents and "ValueError: &lt;/script&gt;" in agents
    assert "0.760" in agents and "31.6" in agents  # lock busy fraction, candidates per lock-minute
    assert "1.35" in agents and "1 of 2" in agents  # judging's own seconds, native builds loaded


def test_a_running_campaign_without_summary_still_reports(run_dir, tmp_path):
    import shutil

    copy = tmp_path / "running"
    shutil.copytree(run_dir, copy)
    (copy / "summary.json").unlink()
    html = render_campaign(load_campaign(copy))
    assert "No summary.json" in html and '<svg class="chart"' in html


def test_the_report_leaves_the_store_untouched(run_dir, tmp_path):
    db = run_dir / "campaign.sqlite"
    before = db.read_bytes()
    write_report(run_dir, tmp_path / "r.html")
    assert db.read_bytes() == before


def test_bench_report_has_a_row_and_a_card_per_task_and_links_campaigns(bench_dir):
    page = write_report(bench_dir).read_text()
    assert (bench_dir / "slow_sum" / "campaign" / "report.html").is_file()
    assert 'href="slow_sum/campaign/report.html"' in page
    assert page.count('class="card"') == 2 and "187.654x" in page and "FAILED" in page
    assert HOSTILE not in page and "<script" not in page.lower()
    assert run_kind(bench_dir) == "bench"


@pytest.mark.parametrize("make, message", [
    (lambda tmp: tmp / "missing", "does not exist"),
    (lambda tmp: tmp, "is not a kernelarc run"),
    (lambda tmp: (tmp / "f.txt").write_text("x") and tmp / "f.txt", "is not a directory"),
])
def test_bad_paths_raise_a_user_error(tmp_path, make, message):
    with pytest.raises(NotARunDirError, match=message):
        write_report(make(tmp_path))


def test_a_foreign_sqlite_file_is_refused(tmp_path):
    import sqlite3

    sqlite3.connect(tmp_path / "campaign.sqlite").execute("CREATE TABLE t (x)").connection.commit()
    with pytest.raises(NotARunDirError, match="not a kernelarc campaign store"):
        write_report(tmp_path)


def test_a_broken_summary_is_one_user_error(run_dir, tmp_path):
    import shutil

    copy = tmp_path / "broken"
    shutil.copytree(run_dir, copy)
    (copy / "summary.json").write_text("{not json")
    with pytest.raises(NotARunDirError, match="summary.json is not JSON"):
        write_report(copy)


def test_chart_axis_is_linear_for_a_narrow_span():
    points = [Point(1, 1.2, "KEEP", "a"), Point(2, None, "REJECT", "b"), Point(3, 2.0, "KEEP", "<c>")]
    svg = leaderboard_svg(points, [(1, 1.2), (2, 1.2), (3, 2.0)], points[2])
    assert "(log)" not in svg and "&lt;c&gt;" in svg and "<c>" not in svg
