"""Issue 15 item 4: what compiling Triton candidates ahead in a GPU-less side (guard/triton_ahead.py) takes off
the device lock, on the card.

    python bench/gpu/ahead_probe.py OUT.json TASK.py [FAMILY ...]

For one task, every point of each named Triton move family (default: triton_rowwise and
triton_rowwise_looped) that applies: half the points judged as they come, half built ahead first (`Judge.prebuild`,
as the campaign's executor does on a GPU), alternating, in one `Judge` whose first evaluation (the eager
baseline) gave the outputs' shapes. Per candidate: its stage seconds (the first call is JIT compilation where
nothing was compiled ahead), the prebuild's own seconds (outside the lock), and which Triton cache files its
GPU side added to what was kept for it (kernels compiled again would show as .cubin; Triton's launcher
modules, which need the GPU's driver to build, as .so).
"""

from __future__ import annotations

import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

from kernelarc.agents.builtin.analysis import analyze
from kernelarc.agents.builtin.moves import get_family
from kernelarc.campaign.baselines import EAGER, baseline_candidates
from kernelarc.guard import candidate_from_source
from kernelarc.guard.build_cache import BuildCache
from kernelarc.guard.judge import Judge
from kernelarc.guard.settings import GuardSettings
from kernelarc.guard.sides import gpu_capability
from kernelarc.task import load_task

DEFAULT_FAMILIES = ("triton_rowwise", "triton_rowwise_looped")


def _files(kept: Path) -> list[str]:
    return sorted(str(p.relative_to(kept)) for p in kept.rglob("*") if p.is_file()) if kept.is_dir() else []


def main() -> int:
    if len(sys.argv) < 3:
        print("usage: python bench/gpu/ahead_probe.py OUT.json TASK.py [FAMILY ...]", file=sys.stderr)
        return 2
    out, task_path, families = Path(sys.argv[1]), sys.argv[2], sys.argv[3:] or DEFAULT_FAMILIES
    task = load_task(task_path)
    analysis = analyze(task)
    points = []
    for name in families:
        family = get_family(name)
        if family is not None and family.applies(analysis) is None:
            points += [(name, params) for params in family.space(analysis)]
    rows = []
    settings = GuardSettings(compile_timeout_s=200, run_timeout_s=200)
    capability = gpu_capability("cuda")
    with tempfile.TemporaryDirectory() as kept_root, Judge(task, build_cache=BuildCache(Path(kept_root))) as judge:
        eager = judge.evaluate(baseline_candidates(task)[EAGER], device="cuda", settings=settings, trusted=True)
        for i, (name, params) in enumerate(points):
            candidate = candidate_from_source(get_family(name).render(analysis, params).source, task)
            kept = Path(kept_root) / "kept" / candidate.hash / "compiled" / "triton"
            ahead_s = None
            if i % 2:
                t0 = time.monotonic()
                judge.prebuild(candidate, settings, build_for=capability)
                ahead_s = round(time.monotonic() - t0, 3)
            before = _files(kept)
            ev = judge.evaluate(candidate, device="cuda", settings=settings)
            added = sorted(set(_files(kept)) - set(before))
            row = {"family": name, "params": params, "ahead": bool(i % 2), "prebuild_s": ahead_s,
                   "verdict": ev.verdict.value, "reason": ev.reason[:160], "wall_s": round(ev.wall_s or 0, 3),
                   "stages": ev.stage_seconds, "compiled_restored": ev.compiled_restored,
                   "compiled_ahead": len([f for f in before if f.endswith(".cubin")]),
                   "added_cubin": len([f for f in added if f.endswith(".cubin")]),
                   "added_so": [f.rsplit("/", 1)[-1] for f in added if f.endswith(".so")]}
            print(json.dumps(row), flush=True)
            rows.append(row)
            out.write_text(json.dumps({"task": task.name, "eager": eager.verdict.value, "rows": rows}, indent=1))
    summary = {}
    for ahead in (False, True):
        group = [r for r in rows if r["ahead"] is ahead and r["verdict"] != "REJECT"]
        if group:
            summary["ahead" if ahead else "as_they_come"] = {
                "candidates": len(group),
                "median_first_call_s": statistics.median(r["stages"].get("first_call", 0.0) for r in group),
                "median_wall_s": statistics.median(r["wall_s"] for r in group),
                "median_prebuild_s": statistics.median(r["prebuild_s"] for r in group) if ahead else None}
    out.write_text(json.dumps({"task": task.name, "eager": eager.verdict.value, "rows": rows, "summary": summary},
                              indent=1))
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
