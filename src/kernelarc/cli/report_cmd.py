"""`kernelarc report RUN_DIR`: one self-contained HTML file from a campaign run dir or a bench dir."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from kernelarc.cli.app import EXIT_OK, app, err_console


@app.command("report")
def report_command(
    run_dir: Annotated[Path, typer.Argument(metavar="RUN_DIR", help="A campaign run dir (campaign.sqlite) or a bench dir (results.json).")],
    out: Annotated[Path | None, typer.Option("--out", help="The HTML file to write (default: RUN_DIR/report.html).")] = None,
) -> int:
    """Write RUN_DIR's report: leaderboard, lineage, sources and diffs, findings, agents, winner (HTML, no network)."""
    from kernelarc.report.html import run_kind, write_report

    kind = run_kind(run_dir)  # a missing or foreign dir fails here: one line, exit 2
    path = write_report(run_dir, out)
    err_console.print(f"{kind} report written", highlight=False)
    print(path)
    return EXIT_OK


def announce_report(run_dir: Path, console: Console = err_console) -> Path:
    """Write the report of a finished campaign or bench and print its path on `console` (the command's
    human output); for optimize and bench."""
    from kernelarc.report.html import write_report

    path = write_report(run_dir)
    console.print(f"report: {path}", highlight=False)
    return path


__all__ = ["announce_report", "report_command"]
