"""results.md (card, date, command and method first, then the table and geomeans) and results.png.

Reads only `Results`; imports matplotlib inside the plot function. Imports without torch.
"""

from __future__ import annotations

import math
from pathlib import Path

from kernelarc.bench.options import BOUNDED_MEMORY
from kernelarc.bench.results import (SKIPPED, ArmSummary, BaselineResult, Results, RowStatus, TaskRow,
                                     arm_summaries, suite_geomeans)

RESULTS_MD = "results.md"
RESULTS_PNG = "results.png"

METHOD = (
    "Every time below comes from the kernelarc guard (fresh seeded inputs, outputs checked against the "
    "reference, L2 flushed on CUDA, candidate and incumbent interleaved, medians). Per task, one kernelarc "
    "campaign judges PyTorch eager and torch.compile (default mode) as baseline candidates against the "
    "reference, then times its winner against each of them in one worker: those are the speedups over eager "
    "and compile, and the eager and compile times shown; the kernelarc time is the winner's in its head-to-head "
    "with eager (another worker can time the same kernel differently: compare the ratios, which are measured "
    "side by side). torch.compile mode max-autotune-no-cudagraphs is then judged once against the winner, "
    "interleaved, for the speedup over it. \"× best compile\" is the smaller of the two compile speedups. "
    "Compile times (s) include the first call, where torch.compile compiles. SOL = max(FLOPs / bf16 matmul "
    "rate, minimal bytes / copy bandwidth) with ceilings measured on the card; SOL fraction = T_SOL / "
    "T_kernelarc; TFLOP/s = the task's matmul FLOPs (torch's counter) / T_kernelarc, GPU timings only; SOL score as in SOL-ExecBench with T_b the fastest of eager and both compile modes. "
    "Geomeans are over the complete rows a kernelarc kernel won that have the figure (n in brackets); a row a "
    "baseline won (winner `baseline eager` or `baseline torch.compile`) shows that baseline's speedups, marked, "
    "and is left out of them."
)
ABLATION_METHOD = (
    "Ablation at equal candidate budget: solo_private = one agent whose memory holds only its own findings "
    f"(unbounded); shared_bounded = N agents sharing at most {BOUNDED_MEMORY} findings of each kind per kernel "
    "type; shared_unbounded = N agents sharing every finding. No long-term memory in any arm. Each seed's "
    "suite geomean of the speedup over eager; the arm's figure is their geomean, with min, max and stdev over the "
    "seeds complete on every task (per-task columns use every complete run). The candidate budget is equal only "
    "where the time limit did not cut a campaign first: compare candidates per run with the budget."
)


def _num(v: float | None, fmt: str = ".4g") -> str:
    return "-" if v is None else format(v, fmt)


def _x(v: float | None) -> str:
    return "-" if v is None else f"{v:.2f}x"


def _baseline_cell(b: BaselineResult | None) -> str:
    if b is None or b.status == SKIPPED:
        return "skipped"
    if b.latency_ms is None:
        return b.status
    return _num(b.latency_ms) + (f" ({b.compile_s:.1f} s)" if b.compile_s is not None else "")


_COLUMNS = ("task", "kind", "timing", "SOL ms", "eager ms", "compile ms (build s)", "max-autotune ms (build s)",
            "kernelarc ms", "TFLOP/s", "winner", "× eager", "× compile", "× max-autotune", "× best compile", "SOL fraction",
            "SOL score", "candidates", "wall s")


def _row_cells(r: TaskRow) -> list[str]:
    if r.status is RowStatus.FAILED:
        return [r.task, "-", "-", "-", "-", "-", "-", "-", "-", "FAILED (below)", *["-"] * 8]
    mark = "" if r.winner_baseline is None else " (baseline's, not counted)"

    def x(v: float | None) -> str:
        return _x(v) + (mark if v is not None else "")

    return [r.task, r.kernel_type or "-", r.timing or "-", _num(r.sol_ms), _baseline_cell(r.eager),
            _baseline_cell(r.compile), _baseline_cell(r.max_autotune), _num(r.best_ms), _num(r.tflops, ".0f"), r.best_label or "-",
            x(r.speedup_vs_eager), x(r.speedup_vs_compile), x(r.speedup_vs_max_autotune),
            x(r.speedup_vs_best_compile), _num(r.sol_fraction, ".2f"), _num(r.sol_score, ".3f"),
            "-" if r.candidates is None else f"{r.candidates}/{r.budget}", _num(r.wall_s, ".0f")]


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header), *("| " + " | ".join(r) + " |" for r in rows)]


def _geomean_cells(rows: list[TaskRow]) -> list[str]:
    g = suite_geomeans(rows)

    def cell(key: str, fmt) -> str:
        return f"{fmt(g[key].value)} ({g[key].n})" if g[key].n else "-"

    wins = g["speedup_vs_eager"].baseline_wins
    label = "**geomean**" + (f" (kernelarc's wins only: {wins} row(s) a baseline won left out)" if wins else "")

    return [label, *[""] * 9, cell("speedup_vs_eager", _x), cell("speedup_vs_compile", _x),
            cell("speedup_vs_max_autotune", _x), cell("speedup_vs_best_compile", _x),
            cell("sol_fraction", lambda v: _num(v, ".2f")), cell("sol_score_mean", lambda v: _num(v, ".3f") + " mean"),
            "", ""]


def _arm_lines(arms: list[ArmSummary]) -> list[str]:
    tasks = sorted({t for a in arms for t in a.per_task})
    rows = [[a.arm.value, str(a.agents), a.memory, str(a.runs), str(a.seeds), _num(a.candidates_mean, ".1f"),
             _x(a.geomean_speedup), _x(a.seed_min), _x(a.seed_max), _num(a.seed_stdev, ".3f"),
             *(_x(a.per_task.get(t)) for t in tasks)] for a in arms]
    return _table(["arm", "agents", "memory", "runs", "complete seeds", "candidates per run", "geomean × eager",
                   "seed min", "seed max", "seed stdev", *tasks], rows)


def render_markdown(results: Results) -> str:
    """The whole results.md."""
    devices = sorted({r.device for r in [*results.rows, *results.ablation] if r.device})
    timings = {r.timing for r in [*results.rows, *results.ablation] if r.timing}
    versions = ", ".join(f"{k} {v}" for k, v in results.versions.items() if k != "platform" and v)
    lines = [f"# kernelarc bench: {Path(results.suite).name}", "",
             f"- Card: {', '.join(devices) or 'unknown'}",
             f"- Date: {results.updated_at} (last update; each row has its own timestamp in results.json)",
             f"- Command: `{results.command}`", f"- Suite: {results.suite}",
             f"- Versions: {versions or 'unknown'}", f"- Method: {METHOD}", ""]
    if "cpu_wall" in timings:
        lines += ["**Timings marked cpu_wall are host wall-clock times on a CPU: they rank candidates, they are "
                  "not GPU speed claims, and SOL figures are left empty.**", ""]
    if results.rows:
        done = [r for r in results.rows if r.status is RowStatus.COMPLETE]
        lines += [f"## Tasks ({len(done)} complete, {len(results.rows) - len(done)} failed)", "",
                  *_table(list(_COLUMNS), [_row_cells(r) for r in results.rows] + [_geomean_cells(results.rows)]), ""]
        failed = [r for r in results.rows if r.status is RowStatus.FAILED]
        notes = [f"- {r.task}: {r.error}" for r in failed]
        notes += [f"- {r.task}: {name} {b.status}: {b.reason}" for r in done
                  for name, b in (("compile", r.compile), ("max-autotune", r.max_autotune), ("eager", r.eager))
                  if b is not None and b.status not in (SKIPPED, "PASSED")]
        if notes:
            lines += ["Failures:", "", *notes, ""]
    arms = arm_summaries(results.ablation)
    if results.ablation:
        lines += ["## Ablation", "", ABLATION_METHOD, "", *(_arm_lines(arms) if arms else ["No complete run yet."]), ""]
        timed_out = [r for r in results.ablation if r.status is RowStatus.COMPLETE and r.stop_reason == "time_limit"]
        if timed_out:  # the H200's first ablation: a 60 s limit cut every campaign at 5-10 of 12 candidates
            lines += [f"**Not at an equal candidate budget:** {len(timed_out)} of {len(results.ablation)} runs stopped "
                      "at the time limit before spending their budget (raise --time-limit).", ""]
        failed_runs = [r for r in results.ablation if r.status is RowStatus.FAILED]
        if failed_runs:
            lines += ["Failed runs:", "",
                      *(f"- {r.task} {r.arm.value} seed {r.seed}: {r.error}" for r in failed_runs), ""]
    return "\n".join(lines) + "\n"


def plot_results(results: Results, path: Path) -> Path:
    """Bar chart: per task the speedup over eager and over the best compile (log scale); arms if any."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FormatStrFormatter

    done = [r for r in results.rows if r.status is RowStatus.COMPLETE]
    arms = arm_summaries(results.ablation)
    panels = [p for p in (done and "tasks", arms and "arms") if p] or ["tasks"]
    fig, axes = plt.subplots(1, len(panels), figsize=(max(6, 0.7 * len(done) + 3) + 4 * (len(panels) - 1), 4.5),
                             dpi=120, squeeze=False)
    timing = ", ".join(sorted({r.timing for r in [*done, *results.ablation] if r.timing})) or "no timing"
    for ax, panel in zip(axes[0], panels):
        if panel == "tasks":
            xs = range(len(done))
            width = 0.4
            ours = [r.winner_baseline is None for r in done]
            for offset, values, label in ((-width / 2, [r.speedup_vs_eager for r in done], "over eager"),
                                          (width / 2, [r.speedup_vs_best_compile for r in done],
                                           "over best torch.compile")):
                bars = ax.bar([x + offset for x in xs], [v or math.nan for v in values], width, label=label)
                for bar, mine in zip(bars, ours):  # a baseline's win drawn hollow: not kernelarc's speedup
                    if not mine:
                        bar.set(facecolor="none", edgecolor="grey", hatch="//")
            if not all(ours):
                ax.bar([0], [math.nan], width, facecolor="none", edgecolor="grey", hatch="//",
                       label="won by a baseline (not kernelarc's; left out of the geomeans)")
            ax.set_xticks(list(xs), [r.task + ("" if mine else f"\n[{r.best_label}]") for r, mine in zip(done, ours)],
                          rotation=45, ha="right", fontsize=7)
            ax.set_ylabel("kernelarc speedup")
            ax.set_title(f"{Path(results.suite).name} ({timing})", fontsize=9)
        else:
            values = [a.geomean_speedup or math.nan for a in arms]
            low = [v - (a.seed_min or v) for v, a in zip(values, arms)]
            high = [(a.seed_max or v) - v for v, a in zip(values, arms)]
            ax.bar([a.arm.value for a in arms], values, yerr=[low, high], capsize=4)
            ax.set_ylabel("geomean speedup over eager (seed min-max)")
            ax.set_title("ablation at equal budget", fontsize=9)
            ax.tick_params(axis="x", labelsize=7)
        ax.axhline(1.0, color="grey", linewidth=0.8, linestyle="--")
        ax.set_yscale("log")
        for axis in (ax.yaxis.set_major_formatter, ax.yaxis.set_minor_formatter):
            axis(FormatStrFormatter("%gx"))
        ax.grid(alpha=0.3, axis="y")
        if panel == "tasks" and done:
            ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path


__all__ = ["RESULTS_MD", "RESULTS_PNG", "plot_results", "render_markdown"]
