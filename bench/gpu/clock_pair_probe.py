"""Issue 15: SOL-ExecBench's clock and the guard's on the same callable and the same inputs, in one process.

The agreement table (bench/gpu/official_agreement.sh) compares two whole tools, each in its own process,
each compiling and warming the code its own way. This probe takes the tools apart: for each SOL problem
and workload it times one callable with the official `time_runnable` (CUPTI, its shifting input pool)
and with the guard's `device_samples`, interleaved, so a gap left here is the clock's and a gap that
goes away here is the process's (inputs, compilation, warm-up order). The callables: the reference's
eager code, torch.compile (default) warmed on every workload before timing (as the guard's correctness
stage does), torch.compile (default) compiled and timed one workload at a time (as the official driver
does), and torch.compile with dynamic=False (one static graph per shape).

    python3 bench/gpu/clock_pair_probe.py SOL_EXECBENCH_SRC OUT.json PROBLEM_DIR...

What it showed on the H200 (session 17, docs/benchmarks.md): in one process the official clock read every
callable 2.1x (guard / official 0.42-0.57, from 3 us kernels to 0.4 ms chains) of what the same tool reads
in its own process, so two CUPTI clients in one process do not share a clock (torch's profiler most likely
sets CUPTI's timestamps for both): its official column witnesses only that. The guard's column, in a
plain process, read Olmo-3's compiled kernel at 2.85 us, against 3.20 us inside the guard's side and
2.69 us in the official tool.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import torch

sys.path.insert(0, sys.argv[1])
from sol_execbench.core.bench.timing import time_runnable  # noqa: E402

from probe_rows import probe_each  # noqa: E402

from kernelarc.guard import timing  # noqa: E402
from kernelarc.task import load_task  # noqa: E402
from kernelarc.task.runtime import TaskRuntime  # noqa: E402

ROUNDS, CALLS, REP = 3, 20, 50
COMPILED = (("compile, warmed on every workload first", {}, True),
            ("compile, one workload at a time", {}, False),
            ("compile dynamic=False, warmed on every workload first", {"dynamic": False}, True))
"""(label, torch.compile options, every workload called once before any is timed)."""


def official_ms(fn, inputs) -> float:
    return float(time_runnable(fn, inputs, [], "cuda:0", warmup=10, rep=REP))


def guard_ms(fn, inputs, flush) -> float:
    block = timing.device_samples([lambda: TaskRuntime.as_output_list(fn(*inputs))] * CALLS, flush, None)
    return statistics.median(block.spans_ms)


def pair(fn, inputs, flush) -> dict:
    for _ in range(3):
        fn(*inputs)
    torch.cuda.synchronize()
    official, guard = [], []
    for _ in range(ROUNDS):
        official.append(official_ms(fn, inputs))
        guard.append(guard_ms(fn, inputs, flush))
    o, g = statistics.median(official), statistics.median(guard)
    return {"official_ms": official, "guard_ms": guard, "guard_over_official": round(g / o, 4)}


def probe(problem: str, flush) -> list[dict]:
    task = load_task(problem)
    runtime = TaskRuntime(task, "cuda")
    ref = runtime.reference()
    inputs = {w.uuid: runtime.make_inputs(w, seed=1) for w in task.workloads}
    rows = []

    def record(variant, fn, uuid):
        row = {"problem": task.name, "variant": variant, "workload": uuid, **pair(fn, inputs[uuid], flush)}
        print(json.dumps(row), flush=True)
        rows.append(row)

    for w in task.workloads:
        record("eager", ref, w.uuid)
    for label, options, warm_first in COMPILED:
        torch._dynamo.reset()
        compiled = torch.compile(ref, **options)
        if warm_first:
            for w in task.workloads:
                compiled(*inputs[w.uuid])
        for w in task.workloads:
            record(label, compiled, w.uuid)
    return rows


def main() -> int:
    out, problems = Path(sys.argv[2]), sys.argv[3:]
    flush = timing.L2Flusher(torch.device("cuda"))
    out.write_text(json.dumps(probe_each(problems, lambda problem: probe(problem, flush)), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
