"""Host cost per call of a KernelBench reference, torch.compile of it and candidate files, in one process.

    python3 bench/gpu/launch_probe.py OUT.json PROBLEM.py [CANDIDATE.py ...] [--scale S]

Why: a generated Triton kernel ran 1.6x faster than eager on the device and 0.43x on the wall clock
(level1 12, session 14): its call's host work, not its kernel, decided. Per variant, two numbers:
- host_us: a loop of calls on the same inputs, synchronized once at the end; where the kernel is shorter
  than the host's work per call (small inputs, `--scale`), this is the host's cost per call;
- event_us: CUDA events around one call after an L2 flush, the median of 200 (as the guard's wall clock).
Each variant is measured again after a CUDA-only torch.profiler session (as the guard's device pass runs
before its wall pass), to see whether profiling leaves a cost behind.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

import torch

from kernelarc.task.execute import load_module


def _scaled(problem, scale: float) -> None:
    """Shrink every module-level int size of the problem by `scale` (at least 1)."""
    for key, value in list(vars(problem).items()):
        if key.isupper() or key.endswith("_size") or key in ("dim", "features"):
            if isinstance(value, int) and value > 1:
                setattr(problem, key, max(1, int(value * scale)))


def host_us(call, n: int = 2000) -> float:
    for _ in range(20):
        call()
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        call()
    torch.cuda.synchronize()
    return (time.perf_counter() - t0) * 1e6 / n


def event_us(call, flush: torch.Tensor, n: int = 200) -> float:
    samples = []
    for _ in range(n):
        flush.zero_()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1000.0)
    return statistics.median(samples)


def profile_once(call) -> None:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]):
        for _ in range(50):
            call()
        torch.cuda.synchronize()


def main() -> int:
    args = sys.argv[1:]
    scale = 1.0
    if "--scale" in args:
        i = args.index("--scale")
        scale = float(args[i + 1])
        del args[i:i + 2]
    out, problem_path, candidates = Path(args[0]), Path(args[1]), [Path(p) for p in args[2:]]
    problem = load_module(problem_path.read_text(), str(problem_path), "problem")
    if scale != 1.0:
        _scaled(problem, scale)
    torch.manual_seed(0)
    inputs = [x.cuda() if isinstance(x, torch.Tensor) else x for x in problem.get_inputs()]
    init = problem.get_init_inputs()
    reference = problem.Model(*init).cuda()
    variants = {"eager": reference, "torch.compile": torch.compile(problem.Model(*init).cuda())}
    for i, path in enumerate(candidates):
        module = load_module(path.read_text(), str(path), f"candidate_{i}")
        variants[path.stem] = module.ModelNew(*init).cuda()
    flush = torch.empty(2 * torch.cuda.get_device_properties(0).L2_cache_size, dtype=torch.uint8, device="cuda")
    rows = {}
    with torch.no_grad():
        for name, model in variants.items():
            call = lambda model=model: model(*inputs)  # noqa: E731
            rows[name] = {"host_us": host_us(call), "event_us": event_us(call, flush)}
        for name, model in variants.items():
            call = lambda model=model: model(*inputs)  # noqa: E731
            profile_once(call)
            rows[name].update(host_us_after_profiler=host_us(call), event_us_after_profiler=event_us(call, flush))
    import triton

    report = {"problem": problem_path.name, "scale": scale, "shapes": [list(x.shape) for x in inputs if hasattr(x, "shape")],
              "torch": torch.__version__, "triton": triton.__version__, "gpu": torch.cuda.get_device_name(0), "rows": rows}
    out.write_text(json.dumps(report, indent=1))
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
