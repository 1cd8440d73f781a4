"""The compiler caches kept per candidate (guard/build_cache.py), on the card: the torch.compile baseline
of a problem judged twice in one `Judge`, as a campaign judges an incumbent again and again.

    python bench/gpu/compile_cache_check.py OUT.json PROBLEM...

Per problem, both evaluations' stage seconds and the seconds of the candidate's first call (where
torch.compile traces, compiles and autotunes): the second finds Inductor's and Triton's caches the first
filled. Then the same with the caches dropped between the two (a fresh BuildCache), for comparison.
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

from kernelarc.campaign.baselines import COMPILE, baseline_candidates
from kernelarc.guard.build_cache import BuildCache
from kernelarc.guard.judge import Judge
from kernelarc.guard.settings import GuardSettings
from kernelarc.task import load_task


def _row(evaluation) -> dict:
    return {"verdict": evaluation.verdict.value, "wall_s": round(evaluation.wall_s, 2),
            "stages": evaluation.stage_seconds,
            "first_call_s": (evaluation.request_seconds.get("candidate warm") or (0, None))[1],
            "latency_ms": evaluation.latency_ms, "device_ms": evaluation.device_ms}


def main() -> int:
    out, problems = Path(sys.argv[1]), sys.argv[2:]
    settings = GuardSettings(compile_timeout_s=200, run_timeout_s=200)
    report = {}
    for problem in problems:
        task = load_task(problem)
        compiled = baseline_candidates(task)[COMPILE]
        rows = {}
        with tempfile.TemporaryDirectory() as kept, Judge(task, build_cache=BuildCache(Path(kept))) as judge:
            rows["kept: first"] = _row(judge.evaluate(compiled, device="cuda", settings=settings, trusted=True))
            rows["kept: second"] = _row(judge.evaluate(compiled, device="cuda", settings=settings, trusted=True))
            with tempfile.TemporaryDirectory() as fresh:
                judge.build_cache = BuildCache(Path(fresh))
                rows["dropped: again"] = _row(judge.evaluate(compiled, device="cuda", settings=settings, trusted=True))
        report[Path(problem).stem] = rows
        print(json.dumps({Path(problem).stem: rows}, indent=1), flush=True)
    out.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
