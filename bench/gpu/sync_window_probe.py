"""Whether the guard's device clock can tell a profiled block's calls apart without host tracing (session 16):
counts the device synchronizations one torch.profiler session records around five calls of a five-kernel
softmax, with and without the side's RNG seeding before each call, and says whether `device_samples` fell
back to host-traced spans (`annotated`). Run on a CUDA machine with src/ on PYTHONPATH:

    python3 bench/gpu/sync_window_probe.py
"""

import torch
from torch.profiler import ProfilerActivity, profile

from kernelarc.guard import timing
from kernelarc.guard.side import forward_seed

CALLS = 5
x = torch.randn(16384, 1024, device="cuda")


def call():
    shifted = x - x.amax(1, keepdim=True)
    e = torch.exp(shifted)
    return [e / e.sum(1, keepdim=True)]


flush = timing.L2Flusher(torch.device("cuda"))
for _ in range(3):
    call()
for name, before in [("no seed", lambda i: None), ("seeded", lambda i: torch.manual_seed(forward_seed(i + 1)))]:
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for i in range(CALLS):
            before(i)
            torch.cuda.synchronize()
            flush()
            call()
            torch.cuda.synchronize()
    syncs = [e for e in timing._trace_events(prof) if e.get("name") == timing.SYNC_NAME]
    block = timing.device_samples([call] * CALLS, flush, None, before)
    print(f"{name} | syncs {len(syncs)} for {CALLS} calls | annotated {block.annotated} | spans "
          f"{[round(s, 4) for s in block.spans_ms]}", flush=True)
