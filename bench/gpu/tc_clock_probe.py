"""Issue 15 item 3: does a tensor-core-bound kernel's time follow the SM clock over seconds of load?

Across 120-s campaigns on an H100 (session 36, docs/benchmarks.md), gemm_bf16_4096's cuBLAS call read
0.1728-0.1852 ms (6.9%) and a flash-attention kernel 0.645-0.752 ms, while memory-bound kernels stayed within
1%. The guard ramps the card for 0.2 s with memsets before timing (`op_ramp`), which lifts an idle card's clock
but draws little power; a tensor-core load draws more and may pull the clock down later. This probe, in one
plain process without a judge, times blocks of calls with CUDA events after each of three starts and reads,
after every block, the SM clock (NVML, `torch.cuda.clock_rate`), the power draw and the temperature:

- `idle`: after 3 s with nothing on the card;
- `memset_ramp`: after 3 s idle and 0.2 s of memsets (the guard's ramp);
- `loaded`: straight after the previous start's blocks (the card already under tensor-core load).

Kernels: a 4096^3 bf16 GEMM (cuBLAS, as gemm_bf16_4096's eager baseline), causal SDPA (flash attention,
bf16, 16x32 heads of 2048x128) and, for contrast, a 64 MiB fp32 softmax (memory-bound).

    python3 bench/gpu/tc_clock_probe.py OUT.json [--seconds S]

Each row: kernel, start, block index, seconds since the start, ms per call (median of the block's
events), SM MHz, W, C. A time that falls as the MHz falls says the spread is the card's clock.

`--experiments duty` (the second experiment): can short timed blocks with rests between them keep the card out
of its power limit? After 1 s of the kernel back to back (the card at its limit), blocks of about
`BLOCK_LOAD_MS` of calls (each after an L2 flush, as the guard times) with `rest` ms of idle before each, for 1 s
per rest, the rests in shuffled order; each row: kernel, rest, block, ms per call (the block's median), the first
call's ms. A rest after which the block reads the idle start's time, and stays there, is one the guard can use.

What it showed on the H100 (docs/benchmarks.md, session 37): the GEMM and SDPA ran at boost for their first 20-40 ms
of load, then at the 700 W limit with the clock swinging 1215-1980 MHz (NVML's reading lagging the limiter by
about 0.1 s); rests of 2-100 ms before 5-ms blocks held their medians within 1%, but every block's first call read
long, longer after longer rests (the GEMM 0.28-0.41 ms against 0.177 ms).
"""

from __future__ import annotations

import argparse
import itertools
import json
import random
import statistics
import time

import torch
import torch.nn.functional as F

from kernelarc.guard.timing import L2Flusher

CALLS_PER_BLOCK = 20
BLOCK_LOAD_MS = 5.0
RESTS_MS = (0, 2, 5, 10, 20, 50, 100)


def kernels(dev: torch.device) -> dict:
    a = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    b = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    q, k, v = (torch.randn(16, 32, 2048, 128, device=dev, dtype=torch.bfloat16) for _ in range(3))
    x = torch.randn(4096, 4096, device=dev)
    return {
        "gemm_bf16_4096": lambda: a @ b,
        "sdpa_causal_bf16": lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True),
        "softmax_fp32_64MiB": lambda: torch.softmax(x, dim=-1),
    }


def reading(dev: torch.device) -> dict:
    def read(fn):
        try:
            return fn(dev)
        except Exception:  # noqa: BLE001 - NVML missing: the row says None
            return None
    return {"mhz": read(torch.cuda.clock_rate), "watts": read(lambda d: torch.cuda.power_draw(d) / 1000.0),
            "celsius": read(torch.cuda.temperature)}


def block_times(call, calls: int = CALLS_PER_BLOCK, flush=None) -> list[float]:
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(calls)]
    for start, end in events:
        if flush is not None:
            flush()
        start.record()
        call()
        end.record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in events]


def block_ms(call) -> float:
    return statistics.median(block_times(call))


def memset_ramp(dev: torch.device, seconds: float) -> None:
    """The guard's ramp (`Side.op_ramp`: memsets eight at a time, then a synchronize), on a 256 MiB buffer."""
    buf = torch.empty(256 * 2**20, dtype=torch.uint8, device=dev)
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        for _ in range(8):
            buf.zero_()
        torch.cuda.synchronize()


def series(call, dev: torch.device, seconds: float) -> list[dict]:
    rows, t0 = [], time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        ms = block_ms(call)
        rows.append({"t_s": round(time.perf_counter() - t0, 3), "ms": ms, **reading(dev)})
    return rows


def duty(name: str, call, dev: torch.device, out: dict) -> None:
    """The second experiment (module docstring): blocks of about BLOCK_LOAD_MS after each rest in RESTS_MS."""
    flush = L2Flusher(dev)
    per_call = block_ms(call)
    calls = max(1, round(BLOCK_LOAD_MS / per_call))
    rests = list(RESTS_MS)
    random.Random(0).shuffle(rests)
    for rest in rests:
        heat = time.perf_counter() + 1.0
        while time.perf_counter() < heat:
            block_times(call)
        t0 = time.perf_counter()
        for i in itertools.count():
            if time.perf_counter() - t0 > 1.0:
                break
            time.sleep(rest / 1000.0)
            ms = block_times(call, calls, flush)
            out["duty"].append({"kernel": name, "rest_ms": rest, "calls": calls, "block": i,
                                "ms": statistics.median(ms), "first_ms": ms[0], **reading(dev)})
        rows = [r["ms"] for r in out["duty"] if r["kernel"] == name and r["rest_ms"] == rest]
        print(f"{name} rest {rest} ms, {calls} calls a block: first blocks {[round(m, 4) for m in rows[:4]]}, "
              f"median {statistics.median(rows):.4f}, {min(rows):.4f}-{max(rows):.4f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--seconds", type=float, default=4.0)
    parser.add_argument("--experiments", default="ramp,duty")
    args = parser.parse_args()
    dev = torch.device("cuda")
    out = {"device": torch.cuda.get_device_name(dev), "torch": torch.__version__, "rows": [], "duty": []}
    for name, call in kernels(dev).items():
        if "duty" in args.experiments:
            duty(name, call, dev, out)
        if "ramp" not in args.experiments:
            continue
        for _ in range(3):
            call()
        torch.cuda.synchronize()
        for start in ("idle", "memset_ramp", "loaded"):
            if start != "loaded":
                time.sleep(3.0)
                out.setdefault("idle_reading", []).append({"kernel": name, **reading(dev)})
            if start == "memset_ramp":
                memset_ramp(dev, 0.2)
            for i, row in enumerate(series(call, dev, args.seconds)):
                out["rows"].append({"kernel": name, "start": start, "block": i, **row})
        rows = [r for r in out["rows"] if r["kernel"] == name]
        ms = [r["ms"] for r in rows]
        print(f"{name}: ms {min(ms):.4f}-{max(ms):.4f} ({100 * (max(ms) / min(ms) - 1):.1f}%), MHz "
              f"{min(r['mhz'] or 0 for r in rows)}-{max(r['mhz'] or 0 for r in rows)}", flush=True)
    with open(args.out, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
