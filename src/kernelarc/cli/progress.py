"""Live campaign progress on a terminal (rich), nothing when stderr is not one; the final summary."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.live import Live
from rich.table import Table


class LiveProgress:
    def __init__(self, console: Console, enabled: bool):
        self.console = console
        self.enabled = enabled
        self._live: Live | None = None

    def __enter__(self) -> "LiveProgress":
        if self.enabled:
            self._live = Live(Table(), console=self.console, refresh_per_second=2, transient=False)
            self._live.__enter__()
        return self

    def __exit__(self, *exc) -> bool:
        if self._live is not None:
            self._live.__exit__(*exc)
        return False

    def update(self, progress) -> None:
        if self._live is None:
            return
        leader = progress.leader
        title = (f"round {progress.round}, budget left {progress.budget_left}, leader "
                 + (f"{leader.agent_id} {leader.speedup:.2f}x" if leader else "none"))
        table = Table(title=title, title_justify="left")
        for col in ("agent", "strategy", "steps", "KEEP", "ACCEPT", "REVERT", "REJECT", "best", "state"):
            table.add_column(col)
        for row in progress.agents:
            v = row["verdicts"]
            state = "retired" if row["retired"] else ("must draft" if row["must_draft"] else f"plateaus {row['plateaus']}")
            table.add_row(row["agent"], row["strategy"], str(row["steps"]), *(str(v.get(k, 0)) for k in
                          ("KEEP", "ACCEPT", "REVERT", "REJECT")), f"{row['speedup']:.2f}x", state)
        self._live.update(table)

    def final(self, summary: dict, run_dir: Path) -> None:
        best = summary.get("best")
        self.console.print(f"stopped: {summary['stop_reason']} after {summary['candidates']} candidates "
                           f"({summary['verdicts']})", highlight=False)
        if summary.get("stop_detail"):
            self.console.print(f"({summary['stop_detail']})", highlight=False, markup=False)
        for agent in summary.get("agents", []):
            if agent.get("failed_steps"):
                self.console.print(f"{agent['agent']} ({agent['backend']}): {agent['failed_steps']} step(s) gave no "
                                   f"candidate; the last: {agent['last_error']}", highlight=False, markup=False)
        if summary.get("backend_failed"):
            self.console.print("[bold red]no agent produced a candidate: their backends failed (above)[/]")
        if not best:
            self.console.print("[bold red]no correct candidate[/]")
            return

        def x(v):
            return "-" if v is None else f"{v:.3f}x"

        if best.get("final_timing", "measured") != "measured":  # no head-to-head timing: only the chained figure
            self.console.print(f"[bold green]best[/]: {best['agent']} ({best['strategy']}), "
                               f"{x(best['speedup_vs_reference_chained'])} vs the reference, chained over the "
                               f"campaign's evaluations (final timings {best['final_timing']})", highlight=False)
        else:
            sol = "" if best["sol_score"] is None else f", SOL score {best['sol_score']:.3f}"
            self.console.print(f"[bold green]best[/]: {best['agent']} ({best['strategy']}), "
                               f"{x(best['speedup_vs_eager'])} vs eager, {x(best['speedup_vs_compile'])} vs "
                               f"torch.compile{sol} [{best['timing']}]")
        if best.get("displaced_leader"):
            self.console.print(f"({best['displaced_leader']} led the campaign but timed slower than {best['agent']} "
                               "head to head at the end)")
        self.console.print(f"files: {', '.join(str(run_dir / f) for f in best['files'])}; "
                           f"{run_dir / 'summary.json'}; {run_dir / 'progress.png'}")
