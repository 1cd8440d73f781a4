"""Issue 15 item 2: does a small kernel read slower when the host idles between profiled calls?

Olmo-3's compiled kernel reads 25-29% higher in the guard's side than in SOL-ExecBench's evaluator (session 30,
fresh compiler caches for both), and session 17 saw it at 2.85 us in a plain loop and 3.21 us in a side. The
official loop runs its calls back to back; the side does host work between profiled calls. This probe times
one callable with the guard's own clock (`timing.device_samples`) in a plain process, with host gaps of 0, 0.2,
1 and 5 ms before each call (`before`, outside the measured windows), interleaved over rounds, and reads the
SM clock (NVML, `torch.cuda.clock_rate`) after each block. A span that grows with the gap, with the clock
falling, says the card slows between calls; a flat span says the gap is elsewhere. Each round also times a
block as the side does (`fresh_inputs_none`: every call on its own inputs, all drawn before the block), where
the official evaluator clones one input set just before each call, and three ways of preparing each call
just before its window (`fresh_spans`): H100, 2026-12-07, Olmo-3's compiled kernel read 20-34% above the
same-inputs spans with fresh inputs, and as much with `read` (docs/benchmarks.md, session 32).

    python3 bench/gpu/gap_clock_probe.py [--official] OUT.json PROBLEM_DIR...

Callables per workload: the reference's eager code and torch.compile of it with `dynamic=False` (as the SOL
torch.compile baseline), each warmed on every workload before timing. Each row also gives, per gap, the calls'
median count of GPU activities and longest single one: a span above the longest activity is gaps between
kernels, not a slower kernel. `--official` times the same callables with SOL-ExecBench's own timing function
(`bench_gpu_time_with_cupti`, its inputs cloned before each call as its evaluator does) instead, in a process
of its own (its CUPTI session and torch's profiler do not share one); needs sol_execbench on PYTHONPATH.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

import torch

from probe_rows import probe_each

from kernelarc.guard import timing
from kernelarc.task import load_task
from kernelarc.task.runtime import TaskRuntime

GAPS_MS = (0.0, 0.2, 1.0, 5.0)
PREPARES = ("none", "read", "clone", "clone_kept", "slots")
ROUNDS, CALLS = 5, 20


def clock_mhz() -> int | None:
    """The SM clock NVML reports now (None where NVML is not there)."""
    try:
        return int(torch.cuda.clock_rate())
    except Exception:  # noqa: BLE001 - a probe's reading, never its failure
        return None


def spans(fn, inputs, flush, gap_ms: float) -> dict:
    """A block of calls each preceded by `gap_ms` of host idle: median span, activities and longest
    activity per call, and the SM clock after it."""
    block = timing.device_samples([lambda: TaskRuntime.as_output_list(fn(*inputs))] * CALLS, flush, None,
                                  before=lambda i: time.sleep(gap_ms / 1000.0))
    return {"span_ms": statistics.median(block.spans_ms), "kernels": statistics.median(block.kernels),
            "longest_ms": statistics.median(block.longest_ms), "sm_mhz": clock_mhz()}


def fresh_spans(fn, input_sets, flush, prepare: str = "none") -> dict:
    """A block as the guard's side times it: each call on its own inputs, all drawn before the block (no gap).
    `prepare`, just before each call's window: `read` copies its inputs and drops the copy (the call reads
    the originals); `clone` hands the call copies made then, as the official loop does (`clone_args`), dropped
    after it; `clone_kept` the same, the copies kept to the block's end; `slots` loads each call's values into one
    set of buffers (`timing.InputSlots`, what the guard's side does since session 33)."""
    current, kept = [None], []
    slots = timing.InputSlots(input_sets) if prepare == "slots" else None

    def before(i: int) -> None:
        current[0] = input_sets[i]
        if prepare == "slots":
            slots.load(i)
            current[0] = slots.inputs(i)
        if prepare in ("none", "slots"):
            return
        copies = [t.clone() if type(t) is torch.Tensor else t for t in input_sets[i]]
        if prepare != "read":
            current[0] = copies
        if prepare == "clone_kept":
            kept.append(copies)

    block = timing.device_samples([lambda: TaskRuntime.as_output_list(fn(*current[0]))] * len(input_sets),
                                  flush, None, before)
    return {"span_ms": statistics.median(block.spans_ms), "kernels": statistics.median(block.kernels),
            "longest_ms": statistics.median(block.longest_ms), "sm_mhz": clock_mhz()}


def official_spans(fn, inputs, flush, gap_ms: float) -> dict:
    """The same block timed by SOL-ExecBench's own function (it flushes L2 itself; no gap is possible)."""
    from sol_execbench.core.bench.timing import bench_gpu_time_with_cupti, clone_args

    times = bench_gpu_time_with_cupti(lambda args: fn(*args), warmup=10, rep=CALLS,
                                      setup=lambda: clone_args(list(inputs)))
    return {"span_ms": statistics.median(times), "sm_mhz": clock_mhz()}


def probe(problem: str, flush, timer=spans, gaps=GAPS_MS) -> list[dict]:
    task = load_task(problem)
    runtime = TaskRuntime(task, "cuda")
    reference = runtime.reference()
    inputs = {w.uuid: runtime.make_inputs(w, seed=1) for w in task.workloads}
    compiled = torch.compile(reference, dynamic=False)
    rows = []
    for label, fn in (("eager", reference), ("compile dynamic=False", compiled)):
        for w in task.workloads:  # every workload compiled and warmed before any is timed
            fn(*inputs[w.uuid])
        torch.cuda.synchronize()
        for w in task.workloads:
            readings = {gap: [] for gap in gaps}
            fresh = {prepare: [] for prepare in PREPARES}  # the side's way (ours only): inputs drawn ahead
            for r in range(ROUNDS):  # gaps interleaved: a drift of the card over the probe hits each alike
                for gap in gaps:
                    readings[gap].append(timer(fn, inputs[w.uuid], flush, gap))
                if timer is spans:
                    sets = [runtime.make_inputs(w, seed=100 + r * CALLS + i) for i in range(CALLS)]
                    for prepare in PREPARES:
                        fresh[prepare].append(fresh_spans(fn, sets, flush, prepare))
                    del sets
            row = {"problem": task.name, "variant": label, "workload": w.uuid, "timer": timer.__name__,
                   "by_gap_ms": {str(gap): {"span_ms": statistics.median(b["span_ms"] for b in r), "blocks": r}
                                 for gap, r in readings.items()}}
            for prepare, blocks in fresh.items():
                if blocks:
                    row[f"fresh_inputs_{prepare}"] = {"span_ms": statistics.median(b["span_ms"] for b in blocks),
                                                      "blocks": blocks}
            print(json.dumps(row), flush=True)
            rows.append(row)
    return rows


def main() -> int:
    args = sys.argv[1:]
    official = bool(args) and args[0] == "--official"
    args = args[1:] if official else args
    if len(args) < 2 or not torch.cuda.is_available():
        print("usage: python3 bench/gpu/gap_clock_probe.py [--official] OUT.json PROBLEM_DIR... (needs a CUDA device)",
              file=sys.stderr)
        return 2
    out, problems = Path(args[0]), args[1:]
    flush = timing.L2Flusher(torch.device("cuda"))
    timer, gaps = (official_spans, (0.0,)) if official else (spans, GAPS_MS)
    out.write_text(json.dumps(probe_each(problems, lambda problem: probe(problem, flush, timer, gaps)), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
