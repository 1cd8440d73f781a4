"""The report in a real headless browser (Debian's chromium, installed by .ci/run; skipped without it):
it parses with no console message, the hostile source stays text in the DOM, and a screenshot is taken."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from kernelarc.report.html import write_report

CHROMIUM = shutil.which("chromium")
pytestmark = pytest.mark.skipif(CHROMIUM is None, reason="chromium is not installed (apt-get install chromium)")
FLAGS = ["--headless", "--disable-gpu", "--no-sandbox", "--hide-scrollbars", "--enable-logging=stderr", "--v=0"]


def _chromium(*args: str, cwd) -> subprocess.CompletedProcess:
    return subprocess.run([CHROMIUM, *FLAGS, *args], capture_output=True, text=True, timeout=120, cwd=cwd)


def test_the_browser_logs_no_console_message_and_screenshots_the_page(run_dir, tmp_path):
    report = write_report(run_dir, tmp_path / "report.html")
    shot = tmp_path / "shot.png"
    done = _chromium(f"--screenshot={shot}", "--window-size=1280,1500", report.as_uri(), cwd=tmp_path)
    console = [line for line in done.stderr.splitlines() if "CONSOLE" in line or "Content Security Policy" in line]
    assert console == []  # a blocked resource or script, or any script output, would be logged here
    assert shot.is_file() and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000


def test_the_dom_holds_the_chart_and_no_injected_element(run_dir, tmp_path):
    report = write_report(run_dir, tmp_path / "report.html")
    dom = _chromium("--dump-dom", report.as_uri(), cwd=tmp_path).stdout
    assert '<svg class="chart"' in dom and "winner: #" in dom
    assert "<script" not in dom.lower() and "<img" not in dom.lower()
    assert "&lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;" in dom  # the text, shown as text
