"""Which neighbour moves a host-bound call's wall time (issue 15 item 3), in one process, without the judge.

    python3 bench/gpu/host_gap_probe.py OUT.json PROBLEM.py [--seconds S] [--cores]

Why: the same eager call of a launch-bound task read 50-103 us across evaluations in one warm side of the
judge, with nothing else on the machine (session 21, `host_noise_probe.py`), while a 0.3 ms GPU-bound call
read within 3%. Each condition below times the problem's reference for `--seconds` the way the guard's wall
clock does (L2 flush, synchronize, CUDA events around one call), in blocks of 100 calls, and records each
block's median and the samples' p10 / p50 / p90:
- `alone`; `alone after idle` (each block after 1 s with the GPU idle: its clocks drop to 345 MHz);
- `ramped` (each block after 50 ms of GPU work, the guard's clock ramp);
- `side start-ups`: processes beside that import torch, create a CUDA context and start CUPTI, one after
  another, as the judge's pool of idle sides refills;
- `busy thread`: a Python thread of this process spinning beside the timed calls (the GIL);
- `cpu burners`: a busy process per core at niceness 19.
`--cores` instead pins the process to each core in turn (two sweeps of `--seconds` per core), then to one
core for ten times as long: whether the two speeds seen alone belong to cores or to moments.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import torch

from kernelarc.task.execute import load_module

STARTUP = ("import torch\nfrom torch.profiler import ProfilerActivity, profile\n"
           "x = torch.ones(1024, device='cuda')\n"
           "with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):\n"
           "    x.add_(1); torch.cuda.synchronize()\n"
           "import torch._inductor.codecache, triton\n")
BURNER = "import os\nos.nice(19)\nwhile True:\n    sum(range(10000))\n"


def block(call, flush: torch.Tensor, n: int = 100) -> list[float]:
    samples = []
    for _ in range(n):
        flush.zero_()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1000.0)
    return samples


def _q(values: list[float], q: float) -> float:
    return sorted(values)[min(len(values) - 1, int(q * len(values)))]


def measure(call, flush, seconds: float, before=lambda: None) -> dict:
    medians, every = [], []
    stop = time.monotonic() + seconds
    while time.monotonic() < stop:
        before()
        got = block(call, flush)
        medians.append(statistics.median(got))
        every += got
    return {"block_medians_us": [round(m, 1) for m in medians], "p10": round(_q(every, 0.1), 1),
            "p50": round(_q(every, 0.5), 1), "p90": round(_q(every, 0.9), 1),
            "block_spread": round((max(medians) - min(medians)) / statistics.median(medians), 3)}


@contextlib.contextmanager
def beside(code: str, count: int, again: bool):
    """`count` processes running `code`, each started again when it ends (`again`) until the block ends."""
    procs: list[subprocess.Popen] = []
    done = threading.Event()

    def start() -> subprocess.Popen:
        return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    def keep() -> None:
        while not done.is_set():
            for i, p in enumerate(procs):
                if p.poll() is not None and again:
                    procs[i] = start()
            time.sleep(0.05)

    procs += [start() for _ in range(count)]
    watcher = threading.Thread(target=keep, daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()
        for p in procs:
            p.send_signal(signal.SIGKILL)
            p.wait()


@contextlib.contextmanager
def busy_thread():
    done = threading.Event()

    def spin() -> None:
        while not done.is_set():
            sum(range(1000))

    t = threading.Thread(target=spin, daemon=True)
    t.start()
    try:
        yield
    finally:
        done.set()
        t.join()


def sweep(out: Path, name: str, call, flush, seconds: float) -> int:
    cores = sorted(os.sched_getaffinity(0))
    report: dict = {"problem": name, "sweeps": []}
    for _ in range(2):
        row = {}
        for c in cores:
            os.sched_setaffinity(0, {c})
            row[c] = measure(call, flush, seconds)
            print(c, row[c]["p50"], row[c]["block_spread"], flush=True)
        report["sweeps"].append(row)
        out.write_text(json.dumps(report, indent=1))
    os.sched_setaffinity(0, {cores[len(cores) // 2]})
    report["one core, long"] = measure(call, flush, 10 * seconds)
    os.sched_setaffinity(0, set(cores))
    report["unpinned, long"] = measure(call, flush, 10 * seconds)
    out.write_text(json.dumps(report, indent=1))
    return 0


def main() -> int:
    args = sys.argv[1:]
    seconds = 8.0
    if "--seconds" in args:
        i = args.index("--seconds")
        seconds = float(args[i + 1])
        del args[i:i + 2]
    out, problem_path = Path(args[0]), Path(args[1])
    problem = load_module(problem_path.read_text(), str(problem_path), "problem")
    torch.manual_seed(0)
    model = problem.Model(*problem.get_init_inputs()).cuda()
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in problem.get_inputs()]
    flush = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size, dtype=torch.uint8, device="cuda")
    ramp = torch.randn(4096, 4096, device="cuda")

    def call():
        with torch.no_grad():
            return model(*inputs)

    def ramped() -> None:
        stop = time.monotonic() + 0.05
        while time.monotonic() < stop:
            ramp @ ramp
        torch.cuda.synchronize()

    block(call, flush)  # first-use costs
    if "--cores" in args:
        return sweep(out, problem_path.name, call, flush, seconds)
    conditions = {
        "alone": (contextlib.nullcontext, lambda: None),
        "alone after idle": (contextlib.nullcontext, lambda: time.sleep(1.0)),
        "ramped": (contextlib.nullcontext, ramped),
        "side start-ups": (lambda: beside(STARTUP, 1, again=True), lambda: None),
        "busy thread": (busy_thread, lambda: None),
        "cpu burners": (lambda: beside(BURNER, os.cpu_count() or 1, again=False), lambda: None),
        "alone again": (contextlib.nullcontext, lambda: None),
    }
    report = {"problem": problem_path.name}
    for name, (context, before) in conditions.items():
        with context():
            report[name] = measure(call, flush, seconds, before)
        print(name, report[name]["p50"], report[name]["block_spread"], flush=True)
        out.write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
