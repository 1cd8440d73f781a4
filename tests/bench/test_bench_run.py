"""`kernelarc bench` end to end on the CPU: real campaigns (scripted agents), real guard, tiny tasks.

One run with the compile baselines on (torch.compile is slow on a CPU) is checked from several sides
in one test (a module fixture would run once per xdist worker); the ablation runs with an empty script
(the winner is then a baseline: arms are listed, not ranked).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from kernelarc.bench import Arm, BenchOptions, Results, RowStatus, SuiteError, load_results, run_suite, suite_geomeans
from kernelarc.bench.pipeline import ERROR_LOG
from kernelarc.cli import bench_cmd  # noqa: F401  (registers `bench` on the app)
from kernelarc.cli.main import run_app

HERE = Path(__file__).resolve().parent
SMOKE = HERE.parents[1] / "bench" / "suites" / "cpu_smoke"
ROWSUM_SCRIPT = HERE / "fixtures" / "rowsum_script.json"
EMPTY_SCRIPT = HERE / "fixtures" / "empty_script.json"
ARGS = ["--budget", "2", "--agents", "1", "--device", "cpu", "--rounds", "1", "--backend", "scripted",
        "--backend-option", f"script={ROWSUM_SCRIPT}"]


def _results(out: Path) -> Results:
    return load_results(out, json.loads((out / "results.json").read_text())["suite"])


def _check_rows_table_and_chart(out: Path) -> None:
    rowsum = _results(out).row("slow_rowsum")
    assert rowsum.status is RowStatus.COMPLETE and rowsum.timing == "cpu_wall" and rowsum.sol_ms is None
    assert rowsum.eager.status == "PASSED" and rowsum.compile.status == "PASSED" and rowsum.compile.compile_s > 0
    assert rowsum.max_autotune.status == "PASSED" and rowsum.max_autotune.latency_ms > 0
    # Which of the agent's kernel and the baselines wins is a CPU timing (cpu_wall): not asserted (the agent's
    # kernel lost to torch.compile once in CI after the timed inputs moved inside the judge's clock).
    assert rowsum.best_label in ("a0-fusion (fusion)", "baseline torch.compile", "baseline torch.compile max-autotune",
                                 "baseline eager") and rowsum.speedup_vs_eager > 0
    # the eager time and "× eager" shown come from the one evaluation that timed eager interleaved with the winner
    # (the speedup is paired block by block, so it is not the ratio of the two medians: docs/guard.md)
    vs_eager = json.loads((out / "slow_rowsum" / "campaign" / "summary.json").read_text())["best"]["head_to_head"]["eager"]
    assert (rowsum.eager.latency_ms, rowsum.best_ms) == (vs_eager["baseline_ms"], vs_eager["candidate_ms"])
    assert rowsum.speedup_vs_eager == vs_eager["speedup"]
    assert rowsum.basis == "wall" and rowsum.best_wall_ms == rowsum.best_ms and rowsum.best_device_ms is None
    # a compile baseline that won is not timed against itself: its own speedup is None, the other decides
    versus_compilers = [s for s in (rowsum.speedup_vs_compile, rowsum.speedup_vs_max_autotune) if s is not None]
    assert versus_compilers and rowsum.speedup_vs_best_compile == min(versus_compilers)
    assert (rowsum.candidates, rowsum.budget) == (1, 2)
    md = (out / "results.md").read_text()
    assert "--backend scripted" in md and "| slow_rowsum |" in md and "cpu_wall" in md
    assert (out / "results.png").stat().st_size > 0


def _check_failure_recorded(out: Path) -> None:
    broken = _results(out).row("broken_task")
    assert broken.status is RowStatus.FAILED and "syntax error" in broken.error
    assert "TaskError" in (out / "broken_task" / ERROR_LOG).read_text()
    assert "- broken_task: " in (out / "results.md").read_text()


def _check_geomeans_from_rows(out: Path) -> None:
    data = json.loads((out / "results.json").read_text())
    assert data["geomeans"] == {k: v.model_dump() for k, v in suite_geomeans(_results(out).rows).items()}
    # Whether the agent's kernel or a baseline won is a CPU timing (not asserted): the geomean counts the row
    # only when the kernel won, and a baseline's win otherwise.
    won_by_kernel = _results(out).row("slow_rowsum").winner_baseline is None
    assert data["geomeans"]["speedup_vs_eager"]["n"] == int(won_by_kernel)
    assert data["geomeans"]["speedup_vs_eager"]["baseline_wins"] == int(not won_by_kernel)


@pytest.mark.slow
@pytest.mark.heavy
def test_bench_suite_end_to_end_with_compile_baselines_then_resume(tmp_path):
    """A broken task and slow_rowsum, benched through the CLI; then the same command again."""
    suite, out = tmp_path / "suite", tmp_path / "out"
    suite.mkdir()
    shutil.copy(SMOKE / "slow_rowsum.py", suite)
    (suite / "broken_task.py").write_text("def Model(:\n")
    assert run_app(["bench", str(suite), "--out", str(out), *ARGS]) == 1  # a task failed; the suite went on
    _check_rows_table_and_chart(out)
    _check_failure_recorded(out)
    _check_geomeans_from_rows(out)

    before = _results(out)
    assert run_app(["bench", str(suite), "--out", str(out), *ARGS]) == 1
    after = _results(out)
    assert after.row("slow_rowsum") == before.row("slow_rowsum")  # kept, not run again
    assert after.row("broken_task").status is RowStatus.FAILED
    assert after.row("broken_task").finished_at >= before.row("broken_task").finished_at


@pytest.mark.slow
@pytest.mark.heavy
def test_ablation_lists_every_arm(tmp_path):
    options = BenchOptions(agents=2, budget=1, seeds=1, backend="scripted", device="cpu", compile_baselines=False,
                           rounds=1, backend_options={"script": str(EMPTY_SCRIPT)})
    lines: list[str] = []
    results = run_suite(SMOKE, options, tmp_path, ablation=True, only=["relu_tiny"], notify=lines.append)
    assert [(r.arm, r.agents, r.status) for r in results.ablation] == [
        (Arm.SOLO_PRIVATE, 1, RowStatus.COMPLETE), (Arm.SHARED_BOUNDED, 2, RowStatus.COMPLETE),
        (Arm.SHARED_UNBOUNDED, 2, RowStatus.COMPLETE)]
    assert {r.stop_reason for r in results.ablation} == {"all_agents_retired"}  # the empty script: why each stopped
    data = json.loads((tmp_path / "results.json").read_text())
    assert [a["arm"] for a in data["arms"]] == [arm.value for arm in Arm]
    assert all(a["geomean_speedup"] > 0 for a in data["arms"])
    md = (tmp_path / "results.md").read_text()
    assert all(f"| {arm.value} |" in md for arm in Arm)
    assert lines[0] == "[1/3] relu_tiny solo_private seed 0: running"


def test_ablation_needs_several_agents(tmp_path):
    with pytest.raises(SuiteError, match="--agents 2 or more"):
        run_suite(SMOKE, BenchOptions(agents=1, device="cpu"), tmp_path, ablation=True)


def test_bad_suite_dir_is_one_line_and_exit_2(tmp_path, capsys):
    assert run_app(["bench", str(tmp_path / "nowhere"), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "is not a directory" in err
