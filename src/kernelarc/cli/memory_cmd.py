"""`kernelarc memory list|show|export|clear`: the user-level long-term memory of wins and traps."""

from __future__ import annotations

from typing import Annotated

import typer
from rich.table import Table

from kernelarc.cli.app import app, err_console, out_console

memory_app = typer.Typer(help="The long-term memory of wins and traps that later campaigns recall.", no_args_is_help=True)
app.add_typer(memory_app, name="memory")


@memory_app.command("list")
def list_command(
    kernel_type: Annotated[str | None, typer.Option("--kernel-type", help="Only this kernel type.")] = None,
) -> None:
    """List findings (id, kind, kernel type, strategy, effect)."""
    from kernelarc.memory.commands import LIST_COLUMNS, finding_row, list_findings

    findings = list_findings(kernel_type)
    table = Table()
    for col in LIST_COLUMNS:
        table.add_column(col)
    for f in findings:
        row = finding_row(f)
        table.add_row(*(row[c] for c in LIST_COLUMNS))
    out_console.print(table)
    err_console.print(f"{len(findings)} finding(s)")


@memory_app.command("show")
def show_command(finding_id: Annotated[int, typer.Argument(help="Finding id from `memory list`.")]) -> None:
    """Show one finding in full."""
    from kernelarc.memory.commands import show_finding

    print(show_finding(finding_id))


@memory_app.command("export")
def export_command(
    kernel_type: Annotated[str | None, typer.Option("--kernel-type", help="Only this kernel type.")] = None,
) -> None:
    """Print findings as JSON on stdout."""
    from kernelarc.memory.commands import export_findings

    print(export_findings(kernel_type))


@memory_app.command("clear")
def clear_command(
    kernel_type: Annotated[str | None, typer.Option("--kernel-type", help="Only this kernel type.")] = None,
    yes: Annotated[bool, typer.Option("--yes", help="Do not ask.")] = False,
) -> None:
    """Delete findings (all, or one kernel type)."""
    from kernelarc.memory.commands import clear_findings

    if not yes:
        typer.confirm(f"delete {'all' if kernel_type is None else kernel_type} findings?", abort=True)
    n = clear_findings(kernel_type)
    err_console.print(f"deleted {n} finding(s)")
