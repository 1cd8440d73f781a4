"""Where a warm judge's time goes per evaluation (issue 15, fast judging): each candidate judged several
times in one `Judge`, as a campaign judges, against the reference and then against an incumbent.

    python bench/gpu/judge_rate_probe.py OUT.json [--repeat N] [--profile] [--device D] TASK=CANDIDATE...

CANDIDATE is a file (a KernelBench ModelNew file or a solution.json) or `eager` / `compile` (kernelarc's
baselines of the task). The incumbent is the task's eager baseline. Per evaluation: the verdict, wall
seconds, stage seconds, judge-clocked seconds per request kind, and the judge's own time between requests
(wall less every request). `--profile` adds the judge process's costliest functions (cProfile).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import statistics
import tempfile
import time
from pathlib import Path

from kernelarc.campaign.baselines import COMPILE, EAGER, baseline_candidates
from kernelarc.guard.build_cache import BuildCache
from kernelarc.guard.candidate import load_candidate
from kernelarc.guard.judge import Judge
from kernelarc.guard.settings import GuardSettings
from kernelarc.task import load_task

BASELINES = {"eager": EAGER, "compile": COMPILE}


def _row(evaluation) -> dict:
    requests = evaluation.request_seconds
    in_requests = sum(seconds for _, seconds in requests.values())
    return {"verdict": evaluation.verdict.value, "status": evaluation.status.value, "reason": evaluation.reason[:200],
            "wall_s": round(evaluation.wall_s, 3), "judge_own_s": round(evaluation.wall_s - in_requests, 3),
            "stages": evaluation.stage_seconds, "requests": requests, "compile_s": evaluation.compile_s}


def _candidate(task, spec: str):
    if spec in BASELINES:
        return baseline_candidates(task)[BASELINES[spec]], True
    return load_candidate(Path(spec), task), False


def _probe(pair: str, repeat: int, device: str) -> dict:
    task_path, spec = pair.split("=", 1)
    task = load_task(task_path)
    candidate, trusted = _candidate(task, spec)
    incumbent = baseline_candidates(task)[EAGER]
    settings = GuardSettings(compile_timeout_s=200, run_timeout_s=200)
    rows: dict[str, list[dict]] = {"vs reference": [], "vs incumbent": []}
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as kept, Judge(task, build_cache=BuildCache(Path(kept))) as judge:
        for which, inc in (("vs reference", None), ("vs incumbent", incumbent)):
            for _ in range(repeat):
                evaluation = judge.evaluate(candidate, inc, device=device, settings=settings, trusted=trusted)
                rows[which].append(_row(evaluation))
                print(pair, which, rows[which][-1]["verdict"], rows[which][-1]["wall_s"], flush=True)
    warm = [r["wall_s"] for which in rows.values() for r in which[1:]]
    return {"rows": rows, "total_s": round(time.monotonic() - started, 2),
            "median_warm_wall_s": statistics.median(warm) if warm else None}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("pairs", nargs="+", help="TASK=CANDIDATE")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--profile", action="store_true")
    ap.add_argument("--device", default="cuda")
    args = ap.parse_args()
    profiler = cProfile.Profile() if args.profile else None
    report = {}
    for pair in args.pairs:
        if profiler is not None:
            profiler.enable()
        report[pair] = _probe(pair, args.repeat, args.device)
        if profiler is not None:
            profiler.disable()
        args.out.write_text(json.dumps(report, indent=1))
    if profiler is not None:
        text = io.StringIO()
        # Python 3.12's profiler sees every thread (waits of the watchdog's too): the judge's own code by
        # cumulative time says where its thread went.
        pstats.Stats(profiler, stream=text).sort_stats("cumulative").print_stats("kernelarc", 40)
        report["judge_profile"] = text.getvalue()
        args.out.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
