"""Campaign progress: a live table on a terminal, else a line per evaluation (a pipe, a log file:
issue 19's 29-minute campaign printed only its header and its end); the final summary."""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.live import Live
from rich.table import Table


REASON_CHARS = 160
"""Longest verdict reason shown on an evaluation's line."""


def evaluation_line(round_: int, item: dict) -> str:
    """One recorded evaluation on one line: who, which candidate, the verdict, the ratio and what it was
    measured against, the guard's reason."""
    against = f"#{item['incumbent_id']}" if item["incumbent_id"] is not None else "the reference"
    ratio = "" if item["speedup"] is None else f" {item['speedup']:.3f}x vs {against}"
    reason = " ".join(item["reason"].split())
    reason = reason if len(reason) <= REASON_CHARS else reason[:REASON_CHARS - 3] + "..."
    return f"[round {round_}] {item['agent']} #{item['candidate_id']} {item['verdict']} ({item['status']}){ratio}: {reason}"


class LiveProgress:
    def __init__(self, console: Console, enabled: bool, lines: bool = False):
        """
        Args:
            console: where it prints.
            enabled: draw the live table (a terminal).
            lines: without the table, print a line per evaluation and one per round.
        """
        self.console = console
        self.enabled = enabled
        self.lines = lines and not enabled
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
        if self.lines:
            for item in progress.judged:
                self.console.print(evaluation_line(progress.round, item), highlight=False, markup=False)
            if progress.round and progress.judged:
                leader = progress.leader
                self.console.print(f"[round {progress.round}] budget left {progress.budget_left}, leader "
                                   + (f"{leader.agent_id} {leader.speedup:.3f}x chained" if leader else "none"),
                                   highlight=False, markup=False)
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
        for line in winner_lines(best):
            self.console.print(line, highlight=False, markup=False)
        self.console.print(f"files: {', '.join(str(run_dir / f) for f in best['files'])}; "
                           f"{run_dir / 'summary.json'}; {run_dir / 'progress.png'}")


def winner_lines(best: dict) -> list[str]:
    """The headline: who won (a baseline said to be one, an agent's candidate with its claim, as its file
    says), then each speedup with the two times of the head-to-head it comes from."""
    if best.get("baseline"):
        who = (f"best: the {best['baseline']} baseline (no agent candidate beat it; "
               "exported as that baseline, not a kernelarc kernel)")
    else:
        who = f"best: candidate #{best['candidate_id']} by {best['agent']} ({best['strategy']}): {best.get('claim', '')}"
    lines = [who]
    if best.get("displaced_leader"):
        lines.append(f"({best['displaced_leader']} led the campaign but timed slower than it head to head at the end)")
    timed = best.get("final_timing", "measured")
    if timed != "measured" and not best.get("head_to_head"):  # no head-to-head timing: only the chained figure
        return lines + [f"{best['speedup_vs_reference_chained']:.3f}x vs the reference, chained over the campaign's "
                        f"evaluations (final timings {timed})"]
    for name, h in best.get("head_to_head", {}).items():
        if h["speedup"] is None:
            lines.append(f"vs {name}: {h['verdict']} head to head (no speedup: not correct there)")
        else:
            lines.append(f"{h['speedup']:.3f}x vs {name}: {h['candidate_ms']:.4g} ms against "
                         f"{h['baseline_ms']:.4g} ms, timed head to head [{h['timing']}, {h['basis']} time]")
    if timed != "measured":
        lines.append(f"(the other final timings: {timed})")
    elif not best.get("head_to_head"):
        lines.append("no head-to-head timing: no other correct baseline to time it against")
    if best.get("sol_score") is not None:
        lines.append(f"SOL score {best['sol_score']:.3f}")
    if not best.get("baseline"):
        lines.append(f"(chained over the campaign, as progress.png plots it: {best['speedup_vs_reference_chained']:.3g}x "
                     "vs the reference, a product of ratios each against an incumbent)")
    return lines

