"""Rich rendering of guard results for people (the command's human console: stdout)."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from kernelarc.cli.app import out_console
from kernelarc.guard.types import Evaluation, Verdict

VERDICT_STYLE = {Verdict.KEEP: "bold green", Verdict.ACCEPT: "green", Verdict.REVERT: "yellow", Verdict.REJECT: "bold red"}


def _ms(v: float | None) -> str:
    return "-" if v is None else f"{v:.4g}"


def render_evaluation(ev: Evaluation, console: Console = out_console) -> None:
    style = VERDICT_STYLE[ev.verdict]
    # the reason quotes the candidate's own error messages: text, never markup (a "[/bold]" in one crashed `eval`)
    console.print(f"[{style}]{ev.verdict.value}[/] ({ev.status.value}) {escape(ev.reason)}", highlight=False,
                  soft_wrap=True)
    if ev.workloads:
        table = Table(title=f"{ev.device}, timing {ev.timing.value if ev.timing else '-'}", title_justify="left")
        for col in ("workload", "status", "candidate ms", "incumbent ms", "speedup", "spread", "SOL ms", "max abs err"):
            table.add_column(col, justify="right" if col not in ("workload", "status") else "left")
        for w in ev.workloads:
            if w.paired_speedup is not None:  # the pairs of blocks decided (guard/verdict.py)
                speed, spread = f"{w.paired_speedup:.3f}x paired", w.paired_spread
            else:
                speed = f"{w.incumbent_ms / w.latency_ms:.3f}x" if w.latency_ms and w.incumbent_ms else "-"
                spread = w.spread
            table.add_row(w.uuid[:18], w.status.value, _ms(w.latency_ms), _ms(w.incumbent_ms), speed,
                          "-" if spread is None else f"{spread:.1%}", _ms(w.sol_ms),
                          "-" if w.max_abs_error is None else f"{w.max_abs_error:.2e}")
        console.print(table)
    if ev.speedup is not None:
        sol = f", SOL score {ev.sol_score:.3f}" if ev.sol_score is not None else ""
        console.print(f"speedup {ev.speedup:.3f}x (noise {ev.noise:.1%}){sol}", highlight=False)
    if ev.verdict is Verdict.REJECT and ev.log_tail.strip():
        console.print("[dim]worker log (tail):[/]")
        console.print(ev.log_tail[-1500:], markup=False, highlight=False)
