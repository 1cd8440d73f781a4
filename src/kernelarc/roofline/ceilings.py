"""Device ceilings: measured copy bandwidth and matmul rate, once per device, cached on disk.

The SOL bound uses what this card actually does, not its datasheet: a large device-to-device copy
(bytes read + written) and a large bf16 matmul, each the fastest of timed repeats after a warm-up of
WARMUP_S. A ceiling is the best the card did: anything else on the card or host only slows a repeat down.
Until session 35 it was the median after five repeats of warm-up (about a millisecond of copying), measured
once per machine: softmax_fp32's SOL time on an H100 then implied 2.1 TB/s (session 30, same card type:
2.88 TB/s) while a kernel moved its bytes at 2.33 TB/s, so that kernel's SOL score came out 2.0. Results are cached as
JSON under the user's cache dir keyed by device name and torch version; one measured by another `METHOD` is
measured again.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from kernelarc.paths import user_cache_dir


WARMUP_S = 0.1
"""Seconds each operation runs before its timed repeats: clocks and power states settle."""
METHOD = "cuda events, fastest of 20 after 0.1 s of warm-up"


class DeviceCeilings(BaseModel):
    """Measured limits of one device."""

    model_config = ConfigDict(frozen=True)

    device: str
    """Device name as CUDA reports it."""
    copy_gbps: float
    """Device-to-device copy bandwidth, GB/s counting bytes read plus bytes written."""
    bf16_tflops: float
    """Dense bf16 matmul rate (8192^3 by default), TFLOP/s."""
    measured_at: str
    """ISO timestamp of the measurement."""
    torch_version: str
    method: str = METHOD


def _cache_path(key: str) -> Path:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in key)
    return user_cache_dir() / f"ceilings-{safe}.json"


def measure(device_index: int = 0, matmul_n: int = 8192, copy_bytes: int = 1 << 31) -> DeviceCeilings:
    """Measure the ceilings of a CUDA device (takes a few seconds)."""
    import datetime
    import time

    import torch

    dev = torch.device("cuda", device_index)

    def fastest_ms(fn, reps: int = 20) -> float:
        warm_until = time.perf_counter() + WARMUP_S
        while time.perf_counter() < warm_until:
            fn()
            torch.cuda.synchronize(dev)
        times = []
        for _ in range(reps):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        return min(times)

    src = torch.empty(copy_bytes // 2, dtype=torch.uint8, device=dev).random_(0, 255)
    dst = torch.empty_like(src)
    copy_ms = fastest_ms(lambda: dst.copy_(src))
    a = torch.randn(matmul_n, matmul_n, dtype=torch.bfloat16, device=dev)
    b = torch.randn(matmul_n, matmul_n, dtype=torch.bfloat16, device=dev)
    mm_ms = fastest_ms(lambda: torch.mm(a, b))
    del src, dst, a, b
    torch.cuda.empty_cache()  # the judge measures in its own process: it keeps none of the card's memory
    return DeviceCeilings(
        device=torch.cuda.get_device_name(dev),
        copy_gbps=copy_bytes / (copy_ms * 1e-3) / 1e9,
        bf16_tflops=2 * matmul_n**3 / (mm_ms * 1e-3) / 1e12,
        measured_at=datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        torch_version=torch.__version__,
    )


def ceilings_for(device_index: int = 0) -> DeviceCeilings:
    """The cached ceilings of this CUDA device, measuring them the first time."""
    import torch

    key = f"{torch.cuda.get_device_name(device_index)}-torch{torch.__version__}"
    path = _cache_path(key)
    if path.is_file():
        try:
            cached = DeviceCeilings.model_validate_json(path.read_text())
            if cached.method == METHOD:
                return cached
        except ValueError:
            pass  # a corrupt cache entry is measured again
    found = measure(device_index)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(found.model_dump(), indent=2))
    return found


__all__ = ["DeviceCeilings", "measure", "ceilings_for", "METHOD", "WARMUP_S"]
