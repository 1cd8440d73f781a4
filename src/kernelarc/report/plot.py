"""PNG plot of best speedup against candidates evaluated, one line per agent (matplotlib, no display).

The lines are chained speedups (each candidate's ratio to its incumbent, multiplied down to the
reference): what the campaign saw as it ran. The winner is marked where it was judged and labelled
with the headline's figure, its head-to-head speedup, which is measured apart and may differ.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from kernelarc.report.chart import LOG_SPAN  # the HTML report's chart turns logarithmic at the same span
BASELINES = "baselines"
"""The series of the baseline candidates (eager, torch.compile), drawn apart from the agents'."""


@dataclass(frozen=True)
class WinnerMark:
    """Where the campaign's winner sits on the plot and what its label says."""

    order: int
    """The evaluation number at which it was judged."""
    chained: float
    """Its chained speedup over the reference there."""
    label: str
    """Who it is and the headline's figure, e.g. `winner: #7 a1-fusion, 3.2x vs eager head to head`."""


def log_axis(series: dict[str, list[tuple[int, float]]]) -> bool:
    """Whether the speedups span an order of magnitude (the reference's 1x included): a log axis then."""
    values = [y for points in series.values() for _, y in points if y > 0] + [1.0]
    return max(values) / min(values) >= LOG_SPAN


def plot_progress(series: dict[str, list[tuple[int, float]]], path: Path, title: str,
                  winner: WinnerMark | None = None) -> Path:
    """Write a step plot; `series` maps agent label -> [(candidate number, best chained speedup so far)].

    A bare `Figure`, not pyplot: a Ray bench ends several campaigns at once in threads of one process,
    and pyplot's global figure state is not thread-safe.
    """
    from matplotlib.figure import Figure
    from matplotlib.ticker import FormatStrFormatter

    fig = Figure(figsize=(7, 4), dpi=120)
    ax = fig.subplots()
    for label, points in sorted(series.items()):
        if points:
            xs, ys = zip(*points)
            style = dict(color="grey", linestyle=":") if label == BASELINES else {}
            ax.step(xs, ys, where="post", label=label, marker="o", markersize=3, **style)
    if winner is not None:
        ax.plot([winner.order], [winner.chained], marker="*", markersize=14, color="#8250df", linestyle="none",
                label=winner.label)
    ax.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")
    if log_axis(series):
        ax.set_yscale("log")
        for set_formatter in (ax.yaxis.set_major_formatter, ax.yaxis.set_minor_formatter):
            set_formatter(FormatStrFormatter("%gx"))
    ax.set_xlabel("candidates evaluated (campaign order)")
    ax.set_ylabel("best chained speedup over the reference", fontsize=8)
    ax.set_title(title)
    if series:
        ax.legend(fontsize=7, loc="best")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    return path


__all__ = ["BASELINES", "LOG_SPAN", "WinnerMark", "log_axis", "plot_progress"]
