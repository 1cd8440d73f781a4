"""Aggregates come from the rows; results.json round-trips; results.md and .png render what the rows say."""

from __future__ import annotations

import json
import math
import statistics

import pytest

from kernelarc.bench.options import Arm
from kernelarc.bench.report import plot_results, render_markdown
from kernelarc.bench.results import (AblationRun, BaselineResult, Results, RowStatus, TaskRow, arm_summaries,
                                     load_results, save_results, suite_geomeans)
from kernelarc.errors import UserError

STAMP = "2026-01-01T00:00:00+00:00"


def row(task: str, eager: float | None, best_compile: float | None = None, *, failed: bool = False,
        **fields) -> TaskRow:
    if failed:
        return TaskRow(task=task, path=f"/s/{task}.py", options_key="k", status=RowStatus.FAILED, error="boom",
                       finished_at=STAMP)
    return TaskRow(task=task, path=f"/s/{task}.py", options_key="k", status=RowStatus.COMPLETE, device="cpu",
                   timing="cpu_wall", eager=BaselineResult(status="PASSED", latency_ms=1.0, compile_s=0.1),
                   compile=BaselineResult(status="COMPILE_ERROR", reason="out of resource"),
                   speedup_vs_eager=eager, speedup_vs_best_compile=best_compile, finished_at=STAMP, **fields)


def run(task: str, arm: Arm, seed: int, speedup: float) -> AblationRun:
    return AblationRun(task=task, arm=arm, seed=seed, agents=1 if arm is Arm.SOLO_PRIVATE else 4, memory="16",
                       options_key="k", status=RowStatus.COMPLETE, speedup_vs_eager=speedup, finished_at=STAMP)


def test_geomeans_cover_complete_rows_that_have_the_figure():
    rows = [row("a", 2.0, 1.5, sol_score=0.6), row("b", 8.0, None, sol_score=0.8), row("c", None),
            row("d", 0, failed=True)]
    g = suite_geomeans(rows)
    assert (g["speedup_vs_eager"].value, g["speedup_vs_eager"].n) == (pytest.approx(4.0), 2)
    assert (g["speedup_vs_best_compile"].value, g["speedup_vs_best_compile"].n) == (pytest.approx(1.5), 1)
    assert (g["sol_fraction"].value, g["sol_fraction"].n) == (None, 0)
    assert g["sol_score_mean"].value == pytest.approx(0.7)


def test_rows_a_baseline_won_are_marked_and_never_counted_as_kernelarcs_gain(tmp_path):
    # issue 19: torch.compile won a row at 3.6x over eager and the suite geomean counted it as kernelarc's
    rows = [row("ours", 2.0, 1.5, best_label="a0-fusion (fusion)"),
            row("compiled", 3.6, 1.0, best_label="baseline torch.compile", winner_baseline="torch.compile"),
            row("plain", None, 0.9, best_label="baseline eager", winner_baseline="eager")]
    g = suite_geomeans(rows)
    assert (g["speedup_vs_eager"].value, g["speedup_vs_eager"].n) == (pytest.approx(2.0), 1)
    assert (g["speedup_vs_best_compile"].value, g["speedup_vs_best_compile"].n) == (pytest.approx(1.5), 1)
    assert g["speedup_vs_eager"].baseline_wins == 2
    md = render_markdown(Results(suite="/suites/demo", updated_at=STAMP, rows=rows))
    assert "| **geomean** (kernelarc's wins only: 2 row(s) a baseline won left out) |" in md
    assert "| baseline torch.compile | 3.60x (baseline's, not counted) |" in md and "| 2.00x (1) |" in md
    assert plot_results(Results(suite="/suites/demo", rows=rows), tmp_path / "r.png").read_bytes()[:4] == b"\x89PNG"


def test_arm_summary_is_geomean_over_seeds_of_suite_geomeans():
    runs = [run("a", Arm.SHARED_BOUNDED, 0, 2.0), run("b", Arm.SHARED_BOUNDED, 0, 8.0),
            run("a", Arm.SHARED_BOUNDED, 1, 1.0), run("b", Arm.SHARED_BOUNDED, 1, 1.0),
            run("a", Arm.SOLO_PRIVATE, 0, 1.5), run("b", Arm.SOLO_PRIVATE, 0, 1.5)]
    solo, bounded = arm_summaries(runs)
    assert (solo.arm, solo.runs, solo.geomean_speedup, solo.seed_stdev) == (Arm.SOLO_PRIVATE, 2, 1.5, 0.0)
    assert bounded.geomean_speedup == pytest.approx(2.0)  # seeds: 4.0 and 1.0
    assert (bounded.seed_min, bounded.seed_max) == (pytest.approx(1.0), pytest.approx(4.0))
    assert bounded.seed_stdev == pytest.approx(statistics.pstdev([4.0, 1.0]))
    assert bounded.per_task == {"a": pytest.approx(math.sqrt(2.0)), "b": pytest.approx(math.sqrt(8.0))}


def test_arm_figure_leaves_out_a_seed_missing_a_task():
    """Run on the H200 (2026-11-30): a seed cut short after one task of two made a 'seed geomean' of
    that task alone, pulling the arm's figure from 6.5x to 1.7x."""
    runs = [run("a", Arm.SHARED_UNBOUNDED, 0, 2.0), run("b", Arm.SHARED_UNBOUNDED, 0, 8.0),
            run("a", Arm.SHARED_UNBOUNDED, 1, 1.0), run("b", Arm.SOLO_PRIVATE, 0, 3.0)]
    solo, unbounded = arm_summaries(runs)
    assert (unbounded.runs, unbounded.seeds, unbounded.geomean_speedup) == (3, 1, pytest.approx(4.0))
    assert unbounded.per_task == {"a": pytest.approx(math.sqrt(2.0)), "b": pytest.approx(8.0)}
    assert (solo.seeds, solo.geomean_speedup, solo.seed_min, solo.seed_stdev) == (0, None, None, None)


def test_results_round_trip_with_computed_aggregates(tmp_path):
    results = Results(suite="/s", rows=[row("a", 2.0)], ablation=[run("a", Arm.SHARED_UNBOUNDED, 0, 3.0)])
    save_results(results, tmp_path)
    data = json.loads((tmp_path / "results.json").read_text())
    assert data["geomeans"]["speedup_vs_eager"] == {"value": 2.0, "n": 1, "baseline_wins": 0}
    assert [a["arm"] for a in data["arms"]] == ["shared_unbounded"]
    assert load_results(tmp_path, "/s") == results


def test_results_of_another_suite_or_garbage_are_refused(tmp_path):
    save_results(Results(suite="/s"), tmp_path)
    with pytest.raises(UserError, match="holds results of suite /s"):
        load_results(tmp_path, "/other")
    (tmp_path / "results.json").write_text("{not json")
    with pytest.raises(UserError, match="is not a kernelarc bench results file"):
        load_results(tmp_path, "/s")


def test_markdown_states_card_command_method_failures_and_cpu_label(tmp_path):
    results = Results(suite="/suites/demo", command="kernelarc bench demo", updated_at=STAMP,
                      rows=[row("a", 2.0, 1.5), row("b", 0, failed=True)],
                      ablation=[run("a", Arm.SOLO_PRIVATE, 0, 1.2)])
    md = render_markdown(results)
    assert md.startswith("# kernelarc bench: demo\n")
    for expected in ("- Card: cpu", f"- Date: {STAMP}", "`kernelarc bench demo`", "- Method:", "not GPU speed claims",
                     "## Tasks (1 complete, 1 failed)", "| **geomean** |", "2.00x (1)", "- b: boom",
                     "- a: compile COMPILE_ERROR: out of resource", "## Ablation", "| solo_private | 1 |"):
        assert expected in md, expected
    png = plot_results(results, tmp_path / "results.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "Not at an equal candidate budget" not in md


def test_markdown_says_when_the_time_limit_cut_ablation_runs_short():
    cut = run("a", Arm.SHARED_BOUNDED, 0, 1.1).model_copy(update={"stop_reason": "time_limit", "candidates": 7})
    results = Results(suite="/suites/demo", rows=[], ablation=[run("a", Arm.SOLO_PRIVATE, 0, 1.2), cut])
    assert ("**Not at an equal candidate budget:** 1 of 2 runs stopped at the time limit before spending their "
            "budget") in render_markdown(results)


def test_tflops_only_for_gpu_timings():
    """A 4096^3 GEMM in 0.227 ms is 605 TFLOP/s on the card; the same figure from a CPU wall clock is not shown."""
    flops = 2 * 4096 ** 3
    gpu = row("gemm", 1.0, 1.2, flops=flops, best_ms=0.227).model_copy(update={"timing": "cuda_events"})
    assert round(gpu.tflops) == 605
    assert row("gemm", 1.0, flops=flops, best_ms=0.227).tflops is None  # cpu_wall
    md = render_markdown(Results(suite="/suites/demo", rows=[gpu]))
    assert "| 0.227 | 605 |" in md
