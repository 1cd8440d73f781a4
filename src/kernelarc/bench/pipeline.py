"""One task of a bench: its campaign (which judges eager and torch.compile as baseline candidates and
measures the winner against both), then torch.compile max-autotune judged against that winner.

Every figure comes from a guard evaluation: the winner's speedups over eager and over default-mode
torch.compile from the campaign's final interleaved measurements, its speedup over max-autotune
from one more interleaved evaluation here. Any failure of a task becomes its row, never the end of
the suite. Budget: about 200 lines.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import traceback
from pathlib import Path

from kernelarc.bench.baselines import MAX_AUTOTUNE_MODE, compile_mode_candidate
from kernelarc.bench.options import Arm, BenchOptions, options_key
from kernelarc.bench.results import SKIPPED, AblationRun, BaselineResult, RowStatus, TaskRow
from kernelarc.bench.suite import SuiteTask
from kernelarc.campaign import CampaignOptions, resume, start
from kernelarc.campaign.baselines import COMPILE, EAGER
from kernelarc.campaign.executor import LOCAL, ExecutorSpec, evaluation_seed
from kernelarc.campaign.run import DB_NAME, campaign_isolation, open_executor
from kernelarc.errors import UserError
from kernelarc.guard import Candidate, Evaluation, evaluate, resolve_device
from kernelarc.guard.candidate import stored_candidate
from kernelarc.memory import Store
from kernelarc.memory.records import CampaignStatus
from kernelarc.roofline import sol_score
from kernelarc.task.loader import load_task
from kernelarc.task.model import Task

ERROR_LOG = "error.log"
"""Written in DIR/<task>/ when a task fails: the traceback behind its row's one-line error."""


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _one_line(error: BaseException) -> str:
    text = " ".join(str(error).split())
    return text if isinstance(error, UserError) else f"{type(error).__name__}: {text}"


def _record_failure(task_dir: Path, error: BaseException) -> str:
    task_dir.mkdir(parents=True, exist_ok=True)
    (task_dir / ERROR_LOG).write_text("".join(traceback.format_exception(error)))
    return _one_line(error)


def campaign_summary(task_path: Path, options: CampaignOptions, run_dir: Path, executor: ExecutorSpec = LOCAL) -> dict:
    """The summary of the campaign in `run_dir`: reused when finished with these options, resumed when
    interrupted, started when absent (its evaluations on `executor`).

    Raises:
        UserError: `run_dir` holds a campaign with other options.
    """
    db = run_dir / DB_NAME
    if not db.exists():
        return start(task_path, options, run_dir, executor=executor).summary
    meta = Store(db).get_meta()
    if meta is None or meta.options != options.model_dump(mode="json"):
        raise UserError(f"{run_dir} holds a campaign with other options: use another --out")
    summary_file = run_dir / "summary.json"
    if meta.status is CampaignStatus.FINISHED and summary_file.is_file():
        return json.loads(summary_file.read_text())
    return resume(run_dir, time_limit_s=options.time_limit_s, executor=executor).summary


def _winner(run_dir: Path, task: Task, candidate_id: int) -> Candidate:
    """The campaign's winning candidate, as stored (already judged, so trusted by the bench)."""
    record = Store(run_dir / DB_NAME).candidate(candidate_id)
    return stored_candidate(record.kind, record.source, task, name=f"c{candidate_id}")


def _baseline(entry: dict | None, final_ms: float | None) -> BaselineResult:
    """A baseline from the campaign summary (absent: not asked for). Its time is the one measured
    interleaved with the winner at the end (`final_ms`), like the speedups, when there is one: the
    baseline's own evaluation ran first, in another worker, on a card that may not have warmed up."""
    if entry is None:
        return BaselineResult(status=SKIPPED)
    return BaselineResult(status=entry["status"], latency_ms=final_ms if final_ms is not None else entry["latency_ms"],
                          compile_s=entry["compile_s"], reason=entry["reason"])


def _max_autotune(task: Task, winner: Candidate | None, options: BenchOptions, run_dir: Path,
                  executor: ExecutorSpec) -> tuple[BaselineResult, Evaluation]:
    """torch.compile max-autotune judged against the winner (against the reference when there is none),
    with the winner's side isolated as in its campaign, on the campaign's executor."""
    candidate = compile_mode_candidate(task, MAX_AUTOTUNE_MODE)
    campaign_options = options.campaign_options()
    seed = evaluation_seed(options.seed, candidate, winner)
    if executor.kind == "ray":
        cluster = open_executor(executor, task, campaign_options, run_dir)
        try:
            ev = asyncio.run(cluster.evaluate(candidate, winner, slot=0, seed=seed, trusted=True))
        finally:
            cluster.close()
    else:
        settings = campaign_options.guard_settings().model_copy(update={"seed": seed})
        ev = evaluate(task, candidate, winner, device=resolve_device(options.device), settings=settings,
                      trusted=True, isolation_=campaign_isolation(campaign_options, run_dir))
    return BaselineResult(status=ev.status.value, latency_ms=ev.latency_ms, compile_s=ev.compile_s,
                          reason=ev.reason), ev


def _ratios(best: dict, speedups: list[float]) -> dict:
    """SOL fraction and SOL score of the winner; T_b = the fastest baseline, from the direct speedups."""
    best_ms, sol = best.get("latency_ms"), best.get("sol_ms")
    if best_ms is None or sol is None:
        return {"sol_fraction": None, "sol_score": None}
    baseline_ms = best_ms * min(speedups) if speedups else None
    return {"sol_fraction": sol / best_ms,
            "sol_score": sol_score(best_ms, baseline_ms, sol) if baseline_ms is not None else None}


def _label(best: dict) -> str:
    """Who won, as the table shows it: a baseline named as one, else the agent and its strategy."""
    if best.get("baseline"):
        return f"baseline {best['baseline']}"
    return f"{best['agent']} ({best['strategy']})"


def run_task(entry: SuiteTask, options: BenchOptions, out_dir: Path, executor: ExecutorSpec = LOCAL) -> TaskRow:
    """Bench one task into DIR/<task>/campaign, its evaluations on `executor`; a failure becomes a FAILED row."""
    campaign_options = options.campaign_options()
    common = {"task": entry.name, "path": str(entry.path),
              "options_key": options_key(campaign_options, options.compile_baselines)}
    task_dir = out_dir / entry.name
    try:
        task = load_task(entry.path)
        summary = campaign_summary(entry.path, campaign_options, task_dir / "campaign", executor)
        best = summary["best"]
        eager = summary["baselines"].get(EAGER)
        compiled = _baseline(summary["baselines"].get(COMPILE), (best or {}).get("compile_ms"))
        wall_s = summary["wall_s"]
        winner = _winner(task_dir / "campaign", task, best["candidate_id"]) if best else None
        max_autotune, vs_max_autotune = BaselineResult(status=SKIPPED), None
        if options.compile_baselines:
            max_autotune, ev = _max_autotune(task, winner, options, task_dir / "campaign", executor)
            wall_s += ev.wall_s or 0.0
            if winner is not None and ev.correct:
                vs_max_autotune = 1.0 / ev.speedup
    except Exception as e:  # any failure of one task (ours included) is its row; the suite goes on
        return TaskRow(**common, status=RowStatus.FAILED, error=_record_failure(task_dir, e), finished_at=_now())
    best, eager = best or {}, eager or {}
    speedups = {"speedup_vs_eager": best.get("speedup_vs_eager"), "speedup_vs_compile": best.get("speedup_vs_compile"),
                "speedup_vs_max_autotune": vs_max_autotune}
    compile_speedups = [s for s in (speedups["speedup_vs_compile"], vs_max_autotune) if s is not None]
    return TaskRow(
        **common, status=RowStatus.COMPLETE, kernel_type=summary["task"]["kernel_type"], device=eager.get("device"),
        timing=best.get("timing") or eager.get("timing"), sol_ms=best.get("sol_ms") or eager.get("sol_ms"),
        eager=_baseline(eager or None, best.get("eager_ms")), compile=compiled, max_autotune=max_autotune,
        best_ms=best.get("latency_ms"), basis=best.get("basis"), best_device_ms=best.get("device_ms"),
        best_wall_ms=best.get("wall_ms"), flops=task.workloads[0].flops if len(task.workloads) == 1 else None,
        best_label=_label(best) if best else None, winner_baseline=best.get("baseline"),
        **speedups, speedup_vs_best_compile=min(compile_speedups) if compile_speedups else None,
        **_ratios(best, [s for s in speedups.values() if s is not None]),
        candidates=summary["candidates"], budget=summary["budget"], stop_reason=summary["stop_reason"],
        wall_s=wall_s, run_dir=str(task_dir / "campaign"), finished_at=_now())


def run_arm(entry: SuiteTask, options: BenchOptions, arm: Arm, seed_index: int, out_dir: Path,
            executor: ExecutorSpec = LOCAL) -> AblationRun:
    """One ablation campaign in DIR/<task>/ablation/<arm>-seed<k>; a failure becomes a FAILED run."""
    campaign_options = options.arm_options(arm, seed_index)
    run_dir = out_dir / entry.name / "ablation" / f"{arm.value}-seed{campaign_options.seed}"
    common = {"task": entry.name, "arm": arm, "seed": campaign_options.seed, "agents": campaign_options.agents,
              "memory": campaign_options.memory, "options_key": options_key(campaign_options, False),
              "run_dir": str(run_dir)}
    try:
        summary = campaign_summary(entry.path, campaign_options, run_dir, executor)
    except Exception as e:  # as in run_task
        return AblationRun(**common, status=RowStatus.FAILED, error=_record_failure(run_dir, e), finished_at=_now())
    best = summary["best"] or {}
    eager = summary["baselines"].get(EAGER) or {}
    # An arm whose agents found nothing is won by eager itself, which is not timed against itself: 1.0x.
    vs_eager = 1.0 if best.get("baseline") == EAGER else best.get("speedup_vs_eager")
    return AblationRun(**common, status=RowStatus.COMPLETE, device=eager.get("device"),
                       timing=best.get("timing") or eager.get("timing"), speedup_vs_eager=vs_eager,
                       best_ms=best.get("latency_ms"), candidates=summary["candidates"],
                       stop_reason=summary["stop_reason"], wall_s=summary["wall_s"], finished_at=_now())


__all__ = ["ERROR_LOG", "campaign_summary", "run_arm", "run_task"]
