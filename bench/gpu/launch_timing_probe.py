"""How a launch-bound call's latency depends on the way it is timed (run on a GPU machine).

    python bench/gpu/launch_timing_probe.py OUT.json [TASK.py[=CANDIDATE.py] ...]

(TASK.py=CANDIDATE.py times the candidate's ModelNew on the task's inputs instead of the reference:
how much of a candidate's time is its host code, e.g. a CUTLASS GEMM against cuBLAS.)

The guard's medians for microsecond calls spread 30-140% between p20 and p80 on the H200 and moved
3x between evaluations of one campaign (docs/benchmarks.md). This script times the eager reference
of each task four ways in one process, first before and then after a torch.profiler session (the
guard profiles each side once, and CUPTI might stay attached and slow every later launch):
- idle: flush L2, synchronize, record start, call, record end (the guard since 2026-11-30);
- queued: flush L2, record start, call, record end, with no synchronize in between (Triton's
  do_bench): the flush kernel hides up to its own duration of the call's host code;
- loop: 50 calls back to back between two events, no flush: per-call cost at steady state;
- host: perf_counter around one call, no synchronize: the host's share.
Each is sampled 300 times (loop: 30 windows); the output holds median, p20 and p80 per method.
It also records how long the process's first and second profiler sessions took (the first starts
CUPTI: what moving the guard's stream probe after timing would add to each evaluation), and runs
itself once more with TEARDOWN_CUPTI=1 (Kineto then finalizes CUPTI after each session) under
"teardown_cupti", to see whether that removes the post-profiler overhead and what a restart costs.
Last, each call's GPU kernels with their grids and blocks ("kernels"): which kernel a library chose.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

SAMPLES = 300
CHILD_TIMEOUT_S = 120
"""The TEARDOWN_CUPTI=1 rerun: on 2026-11-30 (torch 2.11 cu130) it wrote its results, then hung at
interpreter exit until the device call's 600 s limit. Both processes now leave by os._exit."""
LOOP_WINDOWS, LOOP_CALLS = 30, 50
DEFAULT_TASKS = ("bench/suites/h200/mlp_relu_small.py", "bench/suites/h200/layernorm_gelu_small.py")


def _module(path: str):
    spec = importlib.util.spec_from_file_location(Path(path).stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _load(task_spec: str):
    """A call of the task's Model, or with TASK=CANDIDATE of the candidate's ModelNew, on the task's inputs."""
    path, _, candidate = task_spec.partition("=")
    task = _module(path)
    model_class = _module(candidate).ModelNew if candidate else task.Model
    torch.manual_seed(0)
    model = model_class(*task.get_init_inputs()).cuda()
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in task.get_inputs()]
    return lambda: model(*inputs)


def _events_ms(call, flush, *, sync_before_start: bool) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    flush()
    if sync_before_start:
        torch.cuda.synchronize()
    start.record()
    call()
    end.record()
    end.synchronize()
    return start.elapsed_time(end)


def _loop_ms(call) -> float:
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(LOOP_CALLS):
        call()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / LOOP_CALLS


def _host_ms(call) -> float:
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    call()
    return (time.perf_counter() - t0) * 1000.0


def _stats(times: list[float]) -> dict[str, float]:
    s = sorted(times)
    q = lambda p: s[round(p * (len(s) - 1))]  # noqa: E731
    return {"median_ms": q(0.5), "p20_ms": q(0.2), "p80_ms": q(0.8), "spread": (q(0.8) - q(0.2)) / q(0.5), "n": len(s)}


def _measure(call, flush) -> dict[str, dict[str, float]]:
    for _ in range(20):
        call()
    return {
        "idle": _stats([_events_ms(call, flush, sync_before_start=True) for _ in range(SAMPLES)]),
        "queued": _stats([_events_ms(call, flush, sync_before_start=False) for _ in range(SAMPLES)]),
        "loop": _stats([_loop_ms(call) for _ in range(LOOP_WINDOWS)]),
        "host": _stats([_host_ms(call) for _ in range(SAMPLES)]),
    }


def _kernels(call) -> list[dict]:
    """The GPU kernels one call launches, with their grids and blocks: which kernel a library picked."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        call()
        torch.cuda.synchronize()
    with tempfile.TemporaryDirectory() as d:
        prof.export_chrome_trace(f"{d}/trace.json")
        events = json.loads(Path(f"{d}/trace.json").read_text()).get("traceEvents", [])
    return [{"name": e["name"], "grid": e.get("args", {}).get("grid"), "block": e.get("args", {}).get("block"),
             "us": e.get("dur")} for e in events if e.get("cat") == "kernel"]


def main(out: str, tasks: list[str]) -> None:
    flush_buf = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size, dtype=torch.uint8, device="cuda")
    flush = flush_buf.zero_
    calls = {Path(t.split("=")[-1]).stem: _load(t) for t in tasks}
    result = {"device": torch.cuda.get_device_name(0), "torch": torch.__version__,
              "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "tasks": {}}
    for name, call in calls.items():
        result["tasks"][name] = {"before_profiler": _measure(call, flush)}
    from torch.profiler import ProfilerActivity, profile
    t0 = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
        for call in calls.values():
            call()
        torch.cuda.synchronize()
    result["first_profiler_session_s"] = time.perf_counter() - t0
    for name, call in calls.items():
        result["tasks"][name]["after_profiler"] = _measure(call, flush)
    t0 = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]):
        for call in calls.values():
            call()
        torch.cuda.synchronize()
    result["second_profiler_session_s"] = time.perf_counter() - t0  # with TEARDOWN_CUPTI=1: CUPTI's restart
    for name, call in calls.items():
        result["tasks"][name]["kernels"] = _kernels(call)
    if os.environ.get("TEARDOWN_CUPTI") != "1":
        again = Path(out).with_suffix(".teardown.json")
        try:
            subprocess.run([sys.executable, __file__, str(again), *tasks], env={**os.environ, "TEARDOWN_CUPTI": "1"},
                           check=False, timeout=CHILD_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            result["teardown_cupti_child"] = f"killed after {CHILD_TIMEOUT_S} s"
        if again.is_file():
            result["teardown_cupti"] = json.loads(again.read_text())
            again.unlink()
    Path(out).write_text(json.dumps(result, indent=2))
    label = "TEARDOWN_CUPTI=1 " if os.environ.get("TEARDOWN_CUPTI") == "1" else ""
    print(f"{label}profiler sessions: first {result['first_profiler_session_s']:.2f} s, "
          f"second {result['second_profiler_session_s']:.2f} s")
    for name, phases in result["tasks"].items():
        for kernel in phases["kernels"]:
            print(f"{label}{name:22} kernel {kernel['name'][:150]} grid {kernel['grid']} block {kernel['block']}")
        for phase in ("before_profiler", "after_profiler"):
            methods = phases[phase]
            row = "  ".join(f"{m} {v['median_ms'] * 1000:.1f} us ({v['spread'] * 100:.0f}%)" for m, v in methods.items())
            print(f"{label}{name:22} {phase:16} {row}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:] or list(DEFAULT_TASKS))
    sys.stdout.flush()
    os._exit(0)  # no interpreter teardown: with TEARDOWN_CUPTI=1 it hung (see CHILD_TIMEOUT_S)
