"""GPU checks of the guard's design (sandboxed sides, judge-side checks) for docs/benchmarks.md: honest
Triton, CUDA C++ and PyTorch candidates pass, GPU hacks fail, and what the guard costs per candidate.
Run on a CUDA machine (bwrap on PATH for the sandbox):

    python bench/gpu/guard_v2_check.py --shared PATH_TO_SHARED --out DIR [--only LABEL,...]

Writes DIR/guard_v2.json: per case the Evaluation, the guard's seconds, and each workload's
bookkeeping per timed call on both sides (what the residual check compares).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


def cases(shared: Path) -> list[tuple[str, Path, Path, str]]:
    """(label, task, candidate, what we expect)."""
    c, t = HERE / "candidates", HERE / "tasks"
    softmax = t / "softmax_rows.py"
    relu = REPO / "tests/fixtures/tasks/relu_tiny.py"
    gemm = shared / "kernelbench_examples/level2/76_Gemm_Add_ReLU.py"
    sol = shared / "sol_examples/rmsnorm"
    return [
        ("relu tiny: torch (honest, launch-bound)", relu, REPO / "tests/fixtures/candidates/honest_torch.py", "not REJECT"),
        ("relu tiny: Triton (honest, launch-bound)", relu, REPO / "tests/fixtures/candidates/honest_triton.py", "not REJECT"),
        ("relu tiny: CUDA C++ (honest)", relu, REPO / "tests/fixtures/candidates/honest_cuda_inline.py", "not REJECT"),
        ("softmax: torch (honest)", softmax, c / "softmax_torch.py", "not REJECT"),
        ("softmax: Triton (honest)", softmax, c / "softmax_triton.py", "not REJECT"),
        ("softmax: CUDA C++ (honest)", softmax, c / "softmax_cuda.py", "not REJECT"),
        ("gemm+add+relu: Triton (honest)", gemm, c / "gemm_add_relu_triton.py", "not REJECT"),
        ("rmsnorm SOL: Triton (honest)", sol, c / "rmsnorm_triton.py", "not REJECT"),
        ("softmax: side stream (hack)", softmax, c / "hack_side_stream.py", "not faster than it is"),
        ("softmax: torch.empty reuse (hack)", softmax, c / "hack_empty_reuse.py", "REJECT"),
        ("softmax: stale graph replay (hack)", softmax, c / "hack_graph_replay.py", "REJECT"),
        ("softmax: patched CUDA event clock (hack)", softmax, c / "hack_timer_patch.py", "REJECT REWARD_HACK"),
        ("softmax steps: event clock scaled 0.6x (hack)", t / "softmax_steps.py", c / "hack_timer_scaled.py",
         "REJECT REWARD_HACK"),
        ("softmax steps: event clock scaled 0.6x, no busy floor (hack, the guard before it)", t / "softmax_steps.py",
         c / "hack_timer_scaled.py", "KEEP about 1.67x: what the busy floor stops"),
        ("softmax: GPU burner while idle (hack)", softmax, c / "hack_idle_burner.py", "no speedup from the trick"),
        ("rmsnorm SOL: garbage while profiled (hack)", sol, c / "hack_fake_when_profiled.py", "REJECT REWARD_HACK"),
    ]


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--only", default="", help="comma-separated label prefixes")
    ap.add_argument("--repeat", type=int, default=3, help="evaluations of one candidate in one judge (consistency)")
    args = ap.parse_args()
    import torch
    import triton

    from kernelarc.guard import load_candidate, sandbox
    from kernelarc.guard import session as session_module
    from kernelarc.guard.judge import Judge, isolation
    from kernelarc.task.loader import load_task

    bookkeeping: list[dict] = []
    check = session_module.Session._check_residuals

    def recording(self, uuid, times):  # what the residual check compares, kept before it may raise
        bookkeeping.append({"workload": uuid, "residual_ms": dict(times.residual_ms), "alone_ms": times.alone_ms,
                            "wall_ms": {k: v.median for k, v in times.wall.items()},
                            "device_ms": {k: v.median for k, v in times.device.items()}})
        return check(self, uuid, times)

    session_module.Session._check_residuals = recording
    floor = session_module.Session._check_kernel_floor

    def without_busy_floor(self, uuid, times):  # the guard before the busy floor, for the case that shows it
        if "no busy floor" in current[0]:
            times.busy_ms = None
        return floor(self, uuid, times)

    session_module.Session._check_kernel_floor = without_busy_floor
    current = [""]
    iso = isolation()
    env = {"sandbox": iso.sandboxed, "note": iso.note, "uid": os.geteuid(), "as_nobody": sandbox.needs_owner_change()}
    print(f"isolation: {env}", flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    only = [p for p in args.only.split(",") if p]
    records = []
    for label, task_path, cand_path, expect in cases(args.shared):
        if only and not any(label.startswith(p) for p in only):
            continue
        task = load_task(task_path)
        current[0] = label
        start = len(bookkeeping)
        t0 = time.monotonic()
        with Judge(task, isolation_=iso) as judge:
            ev = judge.evaluate(load_candidate(cand_path, task), device="cuda", trusted=True)
        wall = time.monotonic() - t0
        print(f"{label}: {ev.verdict.value} {ev.status.value} [{ev.basis}] {ev.reason[:200]} "
              f"(guard {ev.wall_s:.1f}s, with start-up {wall:.1f}s; stages {ev.stage_seconds})", flush=True)
        if ev.status.value not in ("PASSED",) and "honest" in label:
            print(ev.log_tail[-3000:], flush=True)
        records.append({"label": label, "expect": expect, "evaluation": ev.to_json_dict(), "seconds_with_start": wall,
                        "bookkeeping": bookkeeping[start:]})
    repeat = []
    if not only or any(p.startswith("repeat") for p in only):
        task = load_task(HERE / "tasks" / "softmax_rows.py")
        cand = load_candidate(HERE / "candidates" / "softmax_triton.py", task)
        with Judge(task, isolation_=iso) as judge:
            for i in range(args.repeat):
                ev = judge.evaluate(cand, device="cuda", trusted=True)
                repeat.append(ev.to_json_dict())
                print(f"repeat {i}: {ev.verdict.value} wall {ev.wall_ms} ms, device {ev.device_ms} ms, vs eager "
                      f"{ev.incumbent_wall_ms} / {ev.incumbent_device_ms}; guard {ev.wall_s:.2f}s {ev.stage_seconds}",
                      flush=True)
    meta = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "device": torch.cuda.get_device_name(0), "torch": torch.__version__, "triton": triton.__version__,
            "command": " ".join(sys.argv), **env}
    (args.out / "guard_v2.json").write_text(json.dumps({"meta": meta, "cases": records, "repeat": repeat}, indent=1))
    print("bookkeeping per timed call (ms): " + json.dumps([[r["label"][:30], r["bookkeeping"]] for r in records]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
