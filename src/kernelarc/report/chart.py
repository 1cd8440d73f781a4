"""An inline SVG chart of the leaderboard over time, for the HTML report (no matplotlib, no script).

One point per evaluation in the order the guard recorded them (its chained speedup over the
reference, coloured by verdict; a REJECT, which has no speedup, is a cross on the bottom edge), the
best-so-far as a step line, the reference as a dashed line at 1x and the winner ringed and labelled.
The y axis turns logarithmic when the values span an order of magnitude or more. Every text that
reaches the SVG is escaped here. Imports nothing from kernelarc. Budget: 150 lines.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from html import escape

VERDICT_COLOURS = {"KEEP": "#1a7f37", "ACCEPT": "#57ab5a", "REVERT": "#bf8700", "REJECT": "#cf222e"}
BASELINE_COLOUR = "#6e7781"
LOG_SPAN = 10.0
"""max / min of the plotted values from which the y axis is logarithmic."""
WIDTH, HEIGHT = 960, 340
LEFT, RIGHT, TOP, BOTTOM = 64, 24, 18, 44


@dataclass(frozen=True)
class Point:
    """One evaluation on the chart."""

    order: int
    """Its place in the campaign's evaluation order (1 = first recorded)."""
    value: float | None
    """Chained speedup over the reference; None when it has none (a REJECT)."""
    verdict: str
    label: str
    """Tooltip text."""
    baseline: bool = False


def _nice_step(span: float, ticks: int = 6) -> float:
    raw = span / max(ticks, 1)
    magnitude = 10 ** math.floor(math.log10(raw)) if raw > 0 else 1.0
    return next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)


def _y_ticks(lo: float, hi: float, log: bool) -> list[float]:
    if log:
        decades = range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)
        mantissas = (1, 2, 5) if len(decades) <= 4 else (1,)
        return [m * 10.0 ** d for d in decades for m in mantissas if lo <= m * 10.0 ** d <= hi]
    step = _nice_step(hi - lo)
    return [i * step for i in range(math.ceil(lo / step), math.floor(hi / step) + 1)]


def _fmt(v: float) -> str:
    return f"{v:g}x" if v >= 0.01 else f"{v:.1e}x"


def leaderboard_svg(points: list[Point], best: list[tuple[int, float]], winner: Point | None) -> str:
    """The chart as an `<svg>` element.

    Args:
        points: every evaluation, in order.
        best: (order, best chained speedup so far) after each evaluation.
        winner: the campaign's winner (drawn ringed and labelled), if it has a point.
    """
    values = [p.value for p in points if p.value] + [v for _, v in best] + [1.0]
    lo, hi = min(values), max(values)
    log = hi / lo >= LOG_SPAN
    if log:
        lo, hi = lo / 1.15, hi * 1.15
    else:
        pad = (hi - lo) * 0.08 or 0.5
        lo, hi = max(0.0, lo - pad), hi + pad
    n = max((p.order for p in points), default=1)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(order: float) -> float:
        return LEFT + (order - 0.5) / n * plot_w

    def y(v: float) -> float:
        frac = (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)) if log else (v - lo) / (hi - lo)
        return TOP + (1 - frac) * plot_h

    out = [f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" '
           f'width="{WIDTH}" height="{HEIGHT}" role="img" aria-label="leaderboard over time">',
           f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="#fff" stroke="#d0d7de"/>']
    for t in _y_ticks(lo, hi, log):
        out.append(f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{y(t):.1f}" y2="{y(t):.1f}" stroke="#eaeef2"/>'
                   f'<text x="{LEFT - 6}" y="{y(t) + 4:.1f}" text-anchor="end" class="tick">{_fmt(t)}</text>')
    x_step = max(1, math.ceil(n / 12))
    for order in range(1, n + 1, x_step):
        out.append(f'<text x="{x(order):.1f}" y="{TOP + plot_h + 16}" text-anchor="middle" class="tick">{order}</text>')
    out.append(f'<line x1="{LEFT}" x2="{LEFT + plot_w}" y1="{y(1.0):.1f}" y2="{y(1.0):.1f}" stroke="#8c959f" '
               f'stroke-dasharray="5 4"><title>the reference (1x)</title></line>')
    if best:
        path = [f"M{x(best[0][0] - 0.5):.1f},{y(best[0][1]):.1f}"]
        for order, v in best:
            path.append(f"V{y(v):.1f}H{x(order + 0.5):.1f}")
        out.append(f'<path d="{"".join(path)}" fill="none" stroke="#0969da" stroke-width="2">'
                   f'<title>best chained speedup so far</title></path>')
    for p in points:
        colour = BASELINE_COLOUR if p.baseline else VERDICT_COLOURS.get(p.verdict, "#000")
        tip = f"<title>{escape(p.label)}</title>"
        if p.value is None:
            cx, cy = x(p.order), TOP + plot_h - 6
            out.append(f'<path d="M{cx - 4:.1f},{cy - 4:.1f}l8,8m0,-8l-8,8" stroke="{colour}" stroke-width="2">'
                       f'{tip}</path>')
        else:
            shape = "rect" if p.baseline else "circle"
            if shape == "rect":
                out.append(f'<rect x="{x(p.order) - 4:.1f}" y="{y(p.value) - 4:.1f}" width="8" height="8" '
                           f'fill="{colour}">{tip}</rect>')
            else:
                out.append(f'<circle cx="{x(p.order):.1f}" cy="{y(p.value):.1f}" r="4" fill="{colour}">{tip}</circle>')
    if winner is not None and winner.value is not None:
        wx, wy = x(winner.order), y(winner.value)
        anchor = "end" if wx > LEFT + plot_w * 0.7 else "start"
        dx = -10 if anchor == "end" else 10
        out.append(f'<circle cx="{wx:.1f}" cy="{wy:.1f}" r="9" fill="none" stroke="#8250df" stroke-width="2.5"/>'
                   f'<text x="{wx + dx:.1f}" y="{wy - 12 if wy - TOP > 30 else wy + 24:.1f}" text-anchor="{anchor}" '
                   f'class="winner-label">winner: {escape(winner.label)}</text>')
    out.append(f'<text x="{LEFT + plot_w / 2}" y="{HEIGHT - 6}" text-anchor="middle" class="axis">'
               f'evaluation (the order the guard recorded them)</text>'
               f'<text transform="translate(14 {TOP + plot_h / 2}) rotate(-90)" text-anchor="middle" class="axis">'
               f'chained speedup over the reference{" (log)" if log else ""}</text></svg>')
    return "\n".join(out)


__all__ = ["LOG_SPAN", "Point", "VERDICT_COLOURS", "leaderboard_svg"]
