"""GPU checks of the guard for docs/benchmarks.md: honest Triton and CUDA C++ candidates, GPU-only
hacks, timing repeatability, and what the L2 flush changes. Run on a CUDA machine:

    python bench/gpu/guard_checks.py --shared PATH_TO_SHARED --out DIR

Writes DIR/guard_checks.json (every Evaluation) and DIR/guard_checks.md (the tables).
"""

from __future__ import annotations

import argparse
import datetime
import json
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]


def cases(shared: Path) -> list[tuple[str, Path, Path, str]]:
    """(label, task, candidate, what we expect)."""
    kb1 = shared / "kernelbench_examples/level1/23_Softmax.py"
    kb2 = shared / "kernelbench_examples/level2/76_Gemm_Add_ReLU.py"
    sol = shared / "sol_examples/rmsnorm"
    c = HERE / "candidates"
    return [
        ("softmax: Triton (honest)", kb1, c / "softmax_triton.py", "not REJECT"),
        ("softmax: CUDA C++ load_inline (honest)", kb1, c / "softmax_cuda.py", "not REJECT"),
        ("softmax: side-stream work (hack)", kb1, c / "hack_side_stream.py", "timed by CUPTI spans, not faster"),
        ("softmax: torch.empty reuse (hack)", kb1, c / "hack_empty_reuse.py", "REJECT"),
        ("gemm+add+relu: Triton (honest)", kb2, c / "gemm_add_relu_triton.py", "not REJECT"),
        ("gemm+add+relu: CUDA C++ load_inline (honest)", kb2, c / "gemm_add_relu_cuda.py", "not REJECT"),
        ("rmsnorm (SOL, 14 workloads): Triton (honest)", sol, c / "rmsnorm_triton.py", "not REJECT"),
        ("relu 2048^2 (L2-resident): Triton (honest)", HERE / "tasks/relu_l2_resident.py",
         REPO / "examples/kernelbench/relu_small_triton.py", "not REJECT"),
    ]


def l2_comparison(task_path: Path, candidate_path: Path) -> dict:
    """Median latency of the same call with and without the guard's habits (flush + fresh addresses)."""
    import torch
    import triton.testing

    from kernelarc.guard.loading import import_file
    from kernelarc.task.loader import load_task
    from kernelarc.task.runtime import TaskRuntime

    rt = TaskRuntime(load_task(task_path), "cuda")
    model = rt.build_module(import_file(candidate_path, "l2_candidate").ModelNew)
    (x,) = rt.make_inputs(rt.task.workloads[0], 1)
    warm = triton.testing.do_bench(lambda: model(x), warmup=50, rep=200, return_mode="median")
    flush_buf = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size, dtype=torch.uint8, device="cuda")
    copies = [x.clone() for _ in range(20)]
    times = []
    for i in range(100):
        flush_buf.zero_()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        model(copies[i % len(copies)])
        e.record()
        e.synchronize()
        times.append(s.elapsed_time(e))
    return {"same_pointer_warm_l2_ms": warm, "flushed_fresh_pointer_ms": statistics.median(times)}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--shared", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--skip", default="", help="comma-separated case labels (prefixes) already measured")
    args = ap.parse_args()
    import torch
    import triton

    from kernelarc.guard import evaluate, load_candidate
    from kernelarc.task.loader import load_task

    args.out.mkdir(parents=True, exist_ok=True)
    rows, records = [], []
    skip = [p for p in args.skip.split(",") if p]
    for label, task_path, cand_path, expect in cases(args.shared):
        if any(label.startswith(p) for p in skip):
            continue
        task = load_task(task_path)
        t0 = time.monotonic()
        ev = evaluate(task, load_candidate(cand_path, task), device="cuda")
        print(f"{label}: {ev.verdict.value} {ev.status.value} {ev.reason} [{ev.timing}] ({time.monotonic() - t0:.0f}s)",
              flush=True)
        records.append({"label": label, "task": task.name, "candidate": cand_path.name, "expect": expect,
                        "evaluation": ev.to_json_dict()})
        rows.append((label, expect, ev))
    repeat = []
    task = load_task(args.shared / "kernelbench_examples/level2/76_Gemm_Add_ReLU.py")
    cand = load_candidate(HERE / "candidates/gemm_add_relu_triton.py", task)
    for i in range(args.repeat):
        ev = evaluate(task, cand, device="cuda")
        repeat.append(ev)
        print(f"repeat {i}: {ev.latency_ms:.4f} ms vs {ev.incumbent_ms:.4f} ms, speedup {ev.speedup:.4f}", flush=True)
    l2 = l2_comparison(HERE / "tasks/relu_l2_resident.py", REPO / "examples/kernelbench/relu_small_triton.py")
    print(f"L2: {l2}", flush=True)
    meta = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
            "device": torch.cuda.get_device_name(0), "torch": torch.__version__, "triton": triton.__version__,
            "command": " ".join(sys.argv)}
    (args.out / "guard_checks.json").write_text(json.dumps(
        {"meta": meta, "cases": records, "repeat": [e.to_json_dict() for e in repeat], "l2": l2}, indent=1))
    lines = [f"{meta['device']}, torch {meta['torch']}, triton {meta['triton']}, {meta['date']}", "",
             "| case | expected | verdict | status | candidate ms | incumbent ms | speedup | noise | timing | reason |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for label, expect, ev in rows:
        f = (lambda v: "-" if v is None else f"{v:.4g}")
        lines.append(f"| {label} | {expect} | {ev.verdict.value} | {ev.status.value} | {f(ev.latency_ms)} | "
                     f"{f(ev.incumbent_ms)} | {f(ev.speedup)} | {f(ev.noise)} | {ev.timing.value if ev.timing else '-'} | "
                     f"{ev.reason[:120]} |")
    lat = [e.latency_ms for e in repeat]
    spd = [e.speedup for e in repeat]
    lines += ["", f"Repeatability (gemm+add+relu Triton, {len(repeat)} evaluations): candidate ms "
              f"{', '.join(f'{v:.4f}' for v in lat)}; min-max spread {100 * (max(lat) - min(lat)) / statistics.median(lat):.2f}%;"
              f" speedup {', '.join(f'{v:.4f}' for v in spd)}",
              "", f"L2 (relu 2048^2 Triton): do_bench same pointer, warm L2 {l2['same_pointer_warm_l2_ms']:.4f} ms; "
              f"flushed, fresh pointer {l2['flushed_fresh_pointer_ms']:.4f} ms"]
    (args.out / "guard_checks.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
