"""Issue 15: the guard's device clock beside SOL-ExecBench's, on code from 3 us single kernels to
launch-bound chains and millisecond GEMMs, in one process on one card.

    PYTHONPATH=src:.gpu/tools/sol-execbench/src python3 bench/gpu/device_clock_probe.py OUT.json

Per case, the median of 50 calls (after 10 warm-ups) by: the guard's `device_samples` (CUDA-only
profile, calls told apart by the side's synchronizations), its host-annotated fallback
(`record_function` windows, CPU activity on), and the official evaluator's
`bench_gpu_time_with_cupti` when sol_execbench and cupti-python import. Also records which trace
event categories the CUDA-only profile held (the attribution depends on its runtime records).
"""

from __future__ import annotations

import json
import statistics
import sys
from collections import Counter

import torch

from kernelarc.guard import timing

N, WARMUP = 50, 10


def rms_residual(x, residual, weight, eps=1e-6):
    h = x.to(torch.float32)
    h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + eps)
    return residual + (weight.to(torch.float32) * h).to(x.dtype)


def linear_backward(grad, x, w):
    return grad @ w, grad.t() @ x, grad.sum(0)


def cases():
    d, bf = "cuda", torch.bfloat16
    small = [torch.randn(4, 4096, device=d, dtype=bf), torch.randn(4, 4096, device=d, dtype=bf),
             torch.randn(4096, device=d, dtype=bf)]
    big = [torch.randn(8192, 4096, device=d, dtype=bf), torch.randn(8192, 4096, device=d, dtype=bf),
           torch.randn(4096, device=d, dtype=bf)]
    lin = [torch.randn(256, 4096, device=d, dtype=bf), torch.randn(256, 4096, device=d, dtype=bf),
           torch.randn(4096, 4096, device=d, dtype=bf)]
    gemm = [torch.randn(4096, 4096, device=d, dtype=bf), torch.randn(4096, 4096, device=d, dtype=bf)]
    compiled = torch.compile(rms_residual)
    return {
        "add 4x4096 (one ~3 us kernel)": (torch.add, small[:2]),
        "rms+residual eager 4x4096 (launch-bound chain)": (rms_residual, small),
        "rms+residual compiled 4x4096 (one kernel)": (compiled, small),
        "rms+residual eager 8192x4096": (rms_residual, big),
        "linear backward 256x4096x4096 (3 kernels)": (linear_backward, lin),
        "gemm 4096^3 bf16": (torch.matmul, gemm),
    }


def guard_clock(sampler, fn, inputs) -> float:
    flush = timing.L2Flusher(torch.device("cuda"))
    for _ in range(WARMUP):
        fn(*inputs)
    calls = [(lambda staged=[t.clone() for t in inputs]: _as_list(fn(*staged))) for _ in range(N)]
    return statistics.median(sampler(calls, flush, None).spans_ms)


def _as_list(out):
    return list(out) if isinstance(out, tuple) else [out]


def official_clock(fn, inputs) -> float | None:
    try:
        from sol_execbench.core.bench.timing import bench_gpu_time_with_cupti
    except Exception as e:  # noqa: BLE001 - the official tool is optional here
        print(f"official clock unavailable: {type(e).__name__}: {e}", file=sys.stderr)
        return None
    times = bench_gpu_time_with_cupti(lambda args: fn(*args), warmup=WARMUP, rep=N,
                                      setup=lambda: [t.clone() for t in inputs])
    return statistics.median(times)


def cuda_only_categories(fn, inputs) -> dict:
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        torch.cuda.synchronize()
        fn(*inputs)
        torch.cuda.synchronize()
    events = timing._trace_events(prof)
    return {f"{c}:{n}": k for (c, n), k in Counter((e.get("cat"), e.get("name", "")[:40]) for e in events).items()}


def main() -> int:
    out = {"card": torch.cuda.get_device_name(), "torch": torch.__version__, "n": N, "cases": {}}
    all_cases = cases()
    out["cuda_only_trace"] = cuda_only_categories(*all_cases["rms+residual eager 4x4096 (launch-bound chain)"])
    for name, (fn, inputs) in all_cases.items():
        row = {}
        for label, sampler in (("guard_cuda_only", timing.device_samples),
                               ("guard_annotated", timing._annotated_device_samples)):
            try:
                row[label] = guard_clock(sampler, fn, inputs)
            except Exception as e:  # noqa: BLE001 - a probe reports every failure and goes on
                row[label] = f"{type(e).__name__}: {e}"[:300]
        try:
            row["official"] = official_clock(fn, inputs)
        except Exception as e:  # noqa: BLE001
            row["official"] = f"{type(e).__name__}: {e}"[:300]
        out["cases"][name] = row
        print(name, json.dumps(row), flush=True)
    with open(sys.argv[1], "w") as f:
        json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
