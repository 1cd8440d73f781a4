"""What moves the wall time of a host-bound call between evaluations (issue 15, consistent verdicts).

    python bench/gpu/host_noise_probe.py OUT.json [--repeat N] [--conditions quiet,load,pinned] [--set KEY=VALUE]...
        TASK=CANDIDATE...

Each TASK=CANDIDATE (CANDIDATE a file or `eager` / `compile`) is judged `--repeat` times against the reference
in one `Judge` per condition: the reference side stays warm across a condition's evaluations, the candidate
gets a fresh side each time. Conditions:
- `quiet`: nothing else runs on the host;
- `load`: one memory-bound busy process per core at niceness 19 beside the judge (what builds made ahead
  and the seed's generation look like to the host: every core, the last-level cache and memory bandwidth);
- `pinned`: the same load confined to all cores but the first four, the judge and its sides to those four;
- `nopool`: quiet, and the judge starts no idle sides ahead (each candidate side starts when taken).
`--set KEY=VALUE` changes one of the guard's settings (guard/settings.py, e.g. `--set rest_ratio=2`), so that two
settings are compared on one warm machine by two runs of the probe instead of two checkouts of the guard.
Per evaluation: each side's wall and device time per call (geometric means over workloads), the noise, and the
evaluation's and its timing stage's seconds;
per condition: the spread (max - min) / median of each side's times over the evaluations.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from pydantic import ValidationError

from kernelarc.campaign.baselines import COMPILE, EAGER, baseline_candidates
from kernelarc.guard.build_cache import BuildCache
from kernelarc.guard.candidate import load_candidate
from kernelarc.guard.judge import Judge
from kernelarc.guard.settings import GuardSettings
from kernelarc.task import load_task

BASELINES = {"eager": EAGER, "compile": COMPILE}
JUDGE_CORES = 4
BURNER = ("import os, numpy as np\nos.nice(19)\na = np.ones(1 << 24)\n"
          "while True:\n    a.sum()\n")  # 128 MiB per process: past any last-level cache


@contextlib.contextmanager
def _load(cores: list[int] | None):
    """One busy process per core (on `cores` when given), ended when the block ends."""
    placed = list(range(os.cpu_count() or 1)) if cores is None else cores
    procs = [subprocess.Popen([sys.executable, "-c", BURNER], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                              preexec_fn=(lambda c=c: os.sched_setaffinity(0, {c})) if cores is not None else None)
             for c in placed]
    try:
        yield
    finally:
        for p in procs:
            p.send_signal(signal.SIGKILL)
            p.wait()


def _spread(values: list[float]) -> float | None:
    values = [v for v in values if v]
    return round((max(values) - min(values)) / statistics.median(values), 4) if len(values) > 1 else None


def guard_settings(pairs: list[str]) -> GuardSettings:
    """The probe's settings (200-s stage limits) with each KEY=VALUE of `--set` applied, validated as the guard's
    own; ValueError names the first that is not one of its settings or not a valid value."""
    fields: dict[str, str] = {"compile_timeout_s": "200", "run_timeout_s": "200"}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ValueError(f"--set expects KEY=VALUE, got {pair!r}")
        fields[key.strip()] = value.strip()
    try:
        return GuardSettings.model_validate(fields)
    except ValidationError as e:
        first = e.errors()[0]
        raise ValueError(f"--set {'.'.join(map(str, first['loc']))}: {first['msg']}") from None


def _condition(task, candidate, trusted: bool, repeat: int, device: str, warm: bool, settings: GuardSettings) -> dict:
    rows = []
    with tempfile.TemporaryDirectory() as kept, Judge(task, build_cache=BuildCache(Path(kept)), warm=warm) as judge:
        for _ in range(repeat):
            e = judge.evaluate(candidate, None, device=device, settings=settings, trusted=trusted)
            rows.append({"verdict": e.verdict.value, "status": e.status.value, "reason": e.reason[:160],
                         "wall_ms": e.wall_ms, "ref_wall_ms": e.incumbent_wall_ms, "device_ms": e.device_ms,
                         "ref_device_ms": e.incumbent_device_ms, "speedup": e.speedup, "noise": e.noise,
                         "basis": e.basis, "wall_s": round(e.wall_s or 0.0, 2),
                         "timing_s": round(e.stage_seconds.get("timing", 0.0), 2)})
            print(rows[-1], flush=True)
    keys = ("wall_ms", "ref_wall_ms", "device_ms", "ref_device_ms", "speedup")
    return {"rows": rows, "spread": {k: _spread([r[k] for r in rows]) for k in keys},
            "median": {k: statistics.median([r[k] for r in rows if r[k]] or [0.0]) for k in keys}}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("pairs", nargs="+", help="TASK=CANDIDATE")
    ap.add_argument("--repeat", type=int, default=4)
    ap.add_argument("--conditions", default="quiet,load,pinned")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a guard setting (repeatable)")
    args = ap.parse_args()
    try:
        settings = guard_settings(args.set)
    except ValueError as e:
        print(f"host_noise_probe: {e}", file=sys.stderr)
        return 2
    everything = sorted(os.sched_getaffinity(0))
    report: dict = {"cores": len(everything), "settings": settings.model_dump(exclude_defaults=True)}
    for pair in args.pairs:
        task_path, spec = pair.split("=", 1)
        task = load_task(task_path)
        candidate, trusted = ((baseline_candidates(task)[BASELINES[spec]], True) if spec in BASELINES
                              else (load_candidate(Path(spec), task), False))
        for condition in args.conditions.split(","):
            print(pair, condition, flush=True)
            if condition == "pinned":
                os.sched_setaffinity(0, set(everything[:JUDGE_CORES]))
                load = _load(everything[JUDGE_CORES:])
            else:
                os.sched_setaffinity(0, set(everything))
                load = _load(None) if condition == "load" else contextlib.nullcontext()
            with load:
                report.setdefault(pair, {})[condition] = _condition(task, candidate, trusted, args.repeat, args.device,
                                                                   warm=condition != "nopool", settings=settings)
            os.sched_setaffinity(0, set(everything))
            args.out.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
