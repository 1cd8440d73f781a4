"""Issue 15 item 4: where the judge's own time goes in one evaluation on the card, beyond the sides' requests.

    python bench/gpu/judge_profile.py OUT_DIR TASK.py CANDIDATE.py [REPEATS] [DEVICE]

In one warm `Judge` (the eager baseline judged first, as a campaign's first evaluation), the candidate is
judged REPEATS times (default 3) against the reference, each under cProfile: OUT_DIR gets each evaluation's
stage seconds and request seconds (`evaluations.json`) and the profile of the judge's process
(`judge_N.prof`, read with `python -m pstats`; each row also lists its costliest functions, `own_time`).
Session 30 saw a Triton row kernel's timing stage take 2.35 s where its timed requests summed to 0.9 s: the
rest is the judge's, between requests. DEVICE (default cuda)
`cpu` profiles the judge's own code on a machine without a GPU: its shares, never its seconds, carry over.
"""

from __future__ import annotations

import cProfile
import io
import json
import pstats
import sys
import tempfile
from pathlib import Path

from kernelarc.campaign.baselines import EAGER, baseline_candidates
from kernelarc.guard import load_candidate
from kernelarc.guard.build_cache import BuildCache
from kernelarc.guard.judge import Judge
from kernelarc.guard.settings import GuardSettings
from kernelarc.task import load_task


def main() -> int:
    if len(sys.argv) < 4:
        print("usage: python bench/gpu/judge_profile.py OUT_DIR TASK.py CANDIDATE.py [REPEATS] [DEVICE]", file=sys.stderr)
        return 2
    out, task = Path(sys.argv[1]), load_task(sys.argv[2])
    candidate = load_candidate(Path(sys.argv[3]), task)
    repeats = int(sys.argv[4]) if len(sys.argv) > 4 else 3
    device = sys.argv[5] if len(sys.argv) > 5 else "cuda"
    out.mkdir(parents=True, exist_ok=True)
    settings = GuardSettings(compile_timeout_s=200, run_timeout_s=200)
    rows = []
    with tempfile.TemporaryDirectory() as kept, Judge(task, build_cache=BuildCache(Path(kept))) as judge:
        judge.evaluate(baseline_candidates(task)[EAGER], device=device, settings=settings, trusted=True)
        for i in range(repeats):
            profile = cProfile.Profile()
            ev = profile.runcall(judge.evaluate, candidate, device=device, settings=settings)
            profile.dump_stats(out / f"judge_{i}.prof")
            rows.append({"verdict": ev.verdict.value, "reason": ev.reason, "wall_s": ev.wall_s,
                         "stages": ev.stage_seconds, "requests": ev.request_seconds,
                         "own_time": own_time(profile)})
            print(json.dumps(rows[-1]), flush=True)
    (out / "evaluations.json").write_text(json.dumps(rows, indent=1))
    return 0


def own_time(profile: cProfile.Profile, n: int = 25) -> list[str]:
    """The `n` functions with the most time spent in themselves, as pstats prints them: kept in the JSON
    rows, since a device machine may not bring the .prof files back (session 33: too many files)."""
    text = io.StringIO()
    pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(n)
    return [line.rstrip() for line in text.getvalue().splitlines() if line.strip()][-n - 1:]


if __name__ == "__main__":
    raise SystemExit(main())
