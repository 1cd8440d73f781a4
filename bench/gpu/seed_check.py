"""Issue 16 item 3 on the card: each problem's `inductor_seed` candidate judged against torch.compile.

    python bench/gpu/seed_check.py OUT SECONDS PROBLEM...   (SEED_DEVICE=cuda:0 by default)

For each problem: the family renders its default point (Inductor's code generated in a child on the
device, timed as `generation_s`), the torch.compile baseline is written beside it, and `kernelarc
eval PROBLEM seed.py --incumbent compile.py --json` judges one against the other (device and wall
times of both per workload). Generation runs for all problems at once; evaluations one at a time
until SECONDS have passed. OUT/results.json gathers everything; OUT/<problem>/ keeps the sources.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from kernelarc.agents.builtin.agent import shared_analysis
from kernelarc.agents.builtin.moves import get_family
from kernelarc.campaign.baselines import COMPILE, baseline_candidates
from kernelarc.task import load_task

DEVICE = os.environ.get("SEED_DEVICE", "cuda:0")
FIELDS = ("uuid", "status", "device_ms", "wall_ms", "incumbent_device_ms", "incumbent_wall_ms")


def prepare(problem: str, out: Path) -> tuple[Path, str | None, float]:
    """(problem folder, error, generation seconds): the seed and the torch.compile baseline written."""
    folder = out / (Path(problem).stem if problem.endswith(".py") else Path(problem).name)
    folder.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    try:
        task = load_task(problem)
        move = get_family("inductor_seed").render(shared_analysis(task, DEVICE), {"tuning": "default"})
        (folder / "seed.py").write_text(move.source)
        (folder / "compile.py").write_text(baseline_candidates(task)[COMPILE].source)
        return folder, None, time.monotonic() - started
    except Exception as e:  # noqa: BLE001 - one problem's failure is its row, not the run's end
        return folder, f"{type(e).__name__}: {e}", time.monotonic() - started


def judge(problem: str, folder: Path, seconds_left: float) -> dict:
    proc = subprocess.run([sys.executable, "-m", "kernelarc", "eval", problem, str(folder / "seed.py"),
                           "--incumbent", str(folder / "compile.py"), "--json", "--device", DEVICE, "--timeout", "120"],
                          capture_output=True, text=True, timeout=min(seconds_left, 400))
    (folder / "eval.json").write_text(proc.stdout)
    (folder / "eval.err").write_text(proc.stderr[-5000:])
    try:
        evaluation = json.loads(proc.stdout)
    except json.JSONDecodeError:
        return {"error": f"eval exit {proc.returncode}: {proc.stderr.strip().splitlines()[-1:]}"}
    return {**{k: evaluation.get(k) for k in ("verdict", "status", "speedup", "reason", "timing")},
            "workloads": [{k: w.get(k) for k in FIELDS} for w in evaluation.get("workloads", [])]}


def main() -> int:
    out, deadline, problems = Path(sys.argv[1]), time.monotonic() + float(sys.argv[2]), sys.argv[3:]
    with ThreadPoolExecutor(6) as pool:
        prepared = list(pool.map(lambda p: prepare(p, out), problems))
    results = {}
    for problem, (folder, error, generation_s) in zip(problems, prepared):
        row = results[folder.name] = {"generation_s": round(generation_s, 1), "error": error}
        left = deadline - time.monotonic()
        if error is None and left < 60:
            row["error"] = "no time left"
        elif error is None:
            started = time.monotonic()
            row.update(judge(problem, folder, left))
            row["eval_s"] = round(time.monotonic() - started, 1)
        print(folder.name, json.dumps({k: row.get(k) for k in ("verdict", "speedup", "error")}), flush=True)
        (out / "results.json").write_text(json.dumps(results, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
