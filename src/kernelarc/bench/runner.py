"""`run_suite`: every task of a suite (or every task x arm x seed of the ablation), skipping what
DIR/results.json already holds complete with the same options, saving after each one (re-read
under `results_lock`, so benches sharing DIR, one per GPU, keep each other's rows). On a Ray
cluster (`--executor ray`) as many campaigns run at once, in threads of this process, as the
cluster has devices to judge on; their evaluations share those devices through Ray's scheduler.

Budget: about 120 lines.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from kernelarc.bench.options import Arm, BenchOptions, options_key
from kernelarc.bench.pipeline import run_arm, run_task
from kernelarc.bench.report import RESULTS_MD, RESULTS_PNG, plot_results, render_markdown
from kernelarc.bench.results import Results, RowStatus, load_results, results_lock, save_results
from kernelarc.bench.suite import SuiteError, SuiteTask, discover
from kernelarc.campaign.executor import LOCAL, ExecutorSpec
from kernelarc.guard import resolve_device

Notify = Callable[[str], None]
"""Receives one line per step, for the person watching."""


def _save(out_dir: Path, suite: Path, command: str, versions_from: str | None,
          change: Callable[[Results], None] = lambda results: None) -> Results:
    """Apply `change` to DIR's results as stored now, stamp the command, and write all three files."""
    summary = Path(versions_from) / "summary.json" if versions_from else None
    versions = json.loads(summary.read_text()).get("versions") if summary is not None and summary.is_file() else None

    with results_lock(out_dir):
        results = load_results(out_dir, suite)
        change(results)
        results.command = command
        results.updated_at = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        results.versions = versions or results.versions
        save_results(results, out_dir)
        (out_dir / RESULTS_MD).write_text(render_markdown(results))
        plot_results(results, out_dir / RESULTS_PNG)
    return results


def run_suite(suite_dir: Path, options: BenchOptions, out_dir: Path, *, ablation: bool = False,
              only: Sequence[str] = (), command: str = "", notify: Notify = lambda line: None,
              executor: ExecutorSpec = LOCAL) -> Results:
    """Bench the tasks of `suite_dir` into `out_dir` (results.json, results.md, results.png).

    Args:
        ablation: run the ablation arms (each task x arm x seed) instead of the main comparison.
        only: task names to run (default: all); rows of other tasks already in `out_dir` are kept.
        command: the command line, recorded at the top of results.md.
        executor: where the evaluations run; with Ray, one campaign per device of the cluster at a time.

    Raises:
        UserError: bad suite, unknown task name, results of another suite in `out_dir`, an unusable
            device, an unusable Ray cluster, or `--ablation` with fewer than 2 agents.
    """
    tasks = discover(suite_dir, only)
    if ablation and options.agents < 2:
        raise SuiteError(f"--ablation compares 1 agent with N shared-memory agents: give --agents 2 or more, "
                         f"not {options.agents}")
    width = 1
    if executor.kind == "ray":  # a missing Ray, cluster or device is one clear line before anything runs
        from kernelarc.campaign.ray_executor import connect

        width = connect(executor.ray_address, options.device).slots
    else:
        resolve_device(options.device)
    out_dir.mkdir(parents=True, exist_ok=True)
    suite = suite_dir.resolve()
    results = load_results(out_dir, suite)
    jobs = ([(t, arm, k) for t in tasks for arm in Arm for k in range(options.seeds)] if ablation
            else [(t, None, None) for t in tasks])

    def run_job(n: int, entry: SuiteTask, arm: Arm | None, k: int | None) -> None:
        label = f"[{n}/{len(jobs)}] {entry.name}" + (f" {arm.value} seed {options.seed + k}" if arm else "")
        if arm is None:
            key = options_key(options.campaign_options(), options.compile_baselines)
            old = results.row(entry.name)
        else:
            key = options_key(options.arm_options(arm, k), False)
            old = results.run(entry.name, arm, options.seed + k)
        if old is not None and old.status is RowStatus.COMPLETE and old.options_key == key:
            notify(f"{label}: complete in {out_dir}, kept")
            return
        notify(f"{label}: running")
        if arm is None:
            row = run_task(entry, options, out_dir, executor)
            put = Results.put_row
        else:
            row = run_arm(entry, options, arm, k, out_dir, executor)
            put = Results.put_run
        _save(out_dir, suite, command, row.run_dir if row.status is RowStatus.COMPLETE else None,
              lambda stored: put(stored, row))
        notify(f"{label}: {row.status.value}" + (f" ({row.error})" if row.error else ""))

    numbered = [(n, *job) for n, job in enumerate(jobs, start=1)]
    if width == 1:
        for job in numbered:
            run_job(*job)
    else:
        notify(f"{min(width, len(jobs))} campaigns at a time on the Ray cluster ({width} devices)")
        with ThreadPoolExecutor(width, thread_name_prefix="kernelarc-bench") as pool:
            for done in [pool.submit(run_job, *job) for job in numbered]:
                done.result()
    return _save(out_dir, suite, command, None)


__all__ = ["Notify", "run_suite"]
