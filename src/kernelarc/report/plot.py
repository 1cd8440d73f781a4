"""PNG plot of best speedup against candidates evaluated, one line per agent (matplotlib, no display)."""

from __future__ import annotations

from pathlib import Path


def plot_progress(series: dict[str, list[tuple[int, float]]], path: Path, title: str) -> Path:
    """Write a step plot; `series` maps agent label -> [(candidate number, best speedup so far)]."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4), dpi=120)
    for label, points in sorted(series.items()):
        if points:
            xs, ys = zip(*points)
            ax.step(xs, ys, where="post", label=label, marker="o", markersize=3)
    ax.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")
    ax.set_xlabel("candidates evaluated (campaign order)")
    ax.set_ylabel("best speedup over the reference")
    ax.set_title(title)
    if series:
        ax.legend(fontsize=7, loc="best")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


__all__ = ["plot_progress"]
