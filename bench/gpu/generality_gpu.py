"""Issue 16's GPU measure: campaigns on a seeded sample of KernelBench development problems at their
real sizes, then fast_1.0 and the geomean speedup over the best of eager and torch.compile.

    python bench/gpu/generality_gpu.py run KB_ROOT RESULTS --n 20 --seed 16 [--time-limit 300] [--part 1/2] [--only NAME,...]
    python bench/gpu/generality_gpu.py table RESULTS [--json FILE]

`run` draws the sample (the same for a given root, n and seed: no problem is picked by hand), then runs
`kernelarc optimize` on its share of it (`--part i/k`: every k-th problem from the i-th, so a device call
can take one part), one campaign at a time, each into RESULTS/<level>_<file>/; a problem whose
summary.json is already there is skipped, so a later call completes the set. `table` reads the
summaries.

fast_1.0 counts a problem when the winner is an agent's kernel (not a baseline) and it is faster than
both eager and torch.compile (default mode) in the campaign's final head-to-head timings. The speedup
over the best baseline is the smaller of the final speedups over the correct baselines; a baseline
winner counts 1.0, and a campaign with no final timing is left out of the geomean and said.
"""

from __future__ import annotations

import argparse
import json
import math
import random
import subprocess
import sys
import time
from pathlib import Path


def sample(root: Path, n: int, seed: int) -> list[Path]:
    """`n` problems of root/level*/ drawn uniformly with `seed`, in a stable order."""
    problems = sorted(root.glob("level*/*.py"))
    return sorted(random.Random(seed).sample(problems, min(n, len(problems))))


def run_dir_name(problem: Path) -> str:
    return f"{problem.parent.name}_{problem.stem}"


def run(root: Path, results: Path, n: int, seed: int, time_limit: float, part: str, agents: int,
        only: tuple[str, ...] = ()) -> None:
    index, parts = (int(x) for x in part.split("/"))
    chosen = sample(root, n, seed)[index - 1::parts]
    if only:  # names of problems of the sample, in the order given (a device call's share, by hand)
        by_name = {run_dir_name(p): p for p in chosen}
        unknown = [o for o in only if o not in by_name]
        if unknown:
            raise SystemExit(f"not in the sample: {', '.join(unknown)}")
        chosen = [by_name[o] for o in only]
    results.mkdir(parents=True, exist_ok=True)
    for problem in chosen:
        out = results / run_dir_name(problem)
        if (out / "summary.json").is_file():
            continue
        started = time.monotonic()
        cmd = [sys.executable, "-m", "kernelarc", "optimize", str(problem), "--agents", str(agents), "--budget", "100",
               "--time-limit", str(time_limit), "--out", str(out)]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        out.mkdir(parents=True, exist_ok=True)
        (out / "optimize.log").write_text(proc.stdout + proc.stderr)
        print(f"{problem.parent.name}/{problem.name}: exit {proc.returncode} in {time.monotonic() - started:.0f} s",
              flush=True)


def row(summary: dict) -> dict:
    """One problem's line of the table from its summary.json."""
    best = summary.get("best") or {}
    vs_eager, vs_compile = best.get("speedup_vs_eager"), best.get("speedup_vs_compile")
    agent_won = not str(best.get("agent") or "baseline").startswith("baseline")  # "baseline:eager" etc.
    timed = [s for s in (vs_eager, vs_compile) if s is not None]  # a baseline winner is not timed against itself
    over_best = None
    if best.get("final_timing") == "measured" and (timed or not agent_won):
        over_best = min(timed) if agent_won else 1.0
    guard = summary.get("guard") or {}
    return {"task": summary["task"]["name"], "kind": summary["task"].get("kernel_type"),
            "winner": best.get("agent") or "none", "strategy": best.get("strategy"),
            "speedup_vs_eager": vs_eager, "speedup_vs_compile": vs_compile, "over_best": over_best,
            "fast_1": bool(agent_won and over_best is not None and over_best > 1.0),
            "candidates": summary.get("candidates"), "evaluations": guard.get("evaluations"),
            "candidates_per_lock_minute": guard.get("candidates_per_lock_minute"),
            "stop": summary.get("stop_reason"), "wall_s": summary.get("wall_s")}


def table(results: Path) -> tuple[str, dict]:
    rows = [row(json.loads(p.read_text())) for p in sorted(results.glob("*/summary.json"))]
    missing = sorted(p.parent.name for p in results.glob("*/optimize.log") if not (p.parent / "summary.json").is_file())
    timed = [r for r in rows if r["over_best"] is not None]
    fast = sum(r["fast_1"] for r in rows)
    geomean = math.exp(sum(math.log(r["over_best"]) for r in timed) / len(timed)) if timed else None
    lines = ["| task | kind | winner | vs eager | vs torch.compile | over best | candidates |", "|---|---|---|---|---|---|---|"]
    fmt = (lambda x: "-" if x is None else f"{x:.2f}x")
    for r in rows:
        lines.append(f"| {r['task']} | {r['kind']} | {r['winner']} | {fmt(r['speedup_vs_eager'])} | "
                     f"{fmt(r['speedup_vs_compile'])} | {fmt(r['over_best'])} | {r['candidates']} |")
    head = {"problems": len(rows), "fast_1.0": fast / len(rows) if rows else None,
            "geomean_over_best": geomean, "timed": len(timed), "no_summary": missing}
    lines.append("")
    lines.append(f"{len(rows)} campaigns; fast_1.0 {fast}/{len(rows)}; geomean over the best baseline "
                 f"{'-' if geomean is None else f'{geomean:.3f}x'} over {len(timed)} with final timings; "
                 f"no summary: {', '.join(missing) or 'none'}")
    return "\n".join(lines), {"summary": head, "rows": rows}


def main() -> int:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run")
    r.add_argument("root", type=Path)
    r.add_argument("results", type=Path)
    r.add_argument("--n", type=int, default=20)
    r.add_argument("--seed", type=int, default=16)
    r.add_argument("--time-limit", type=float, default=300.0,
                   help="seconds per campaign; at real sizes one evaluation takes 3-33 s on the H200 and 110-150 s "
                        "left some problems no agent round (docs/benchmarks.md session 13)")
    r.add_argument("--part", default="1/1")
    r.add_argument("--agents", type=int, default=4)
    r.add_argument("--only", default="", help="comma-separated run dir names of sample problems (level2_14_Gemm_...)")
    t = sub.add_parser("table")
    t.add_argument("results", type=Path)
    t.add_argument("--json", type=Path)
    args = ap.parse_args()
    if args.cmd == "run":
        run(args.root, args.results, args.n, args.seed, args.time_limit, args.part, args.agents,
            tuple(o for o in args.only.split(",") if o))
        return 0
    text, data = table(args.results)
    print(text)
    if args.json:
        args.json.write_text(json.dumps(data, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
