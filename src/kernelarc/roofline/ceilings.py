"""Device ceilings: measured copy bandwidth and matmul rate, once per device, cached on disk.

The SOL bound uses what this card actually does, not its datasheet: a large device-to-device copy
(bytes read + written) and a large bf16 matmul, each the median of timed repeats. Results are cached
as JSON under the user's cache dir keyed by device name, torch version and driver.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from kernelarc.paths import user_cache_dir


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
    method: str = "cuda events, median of 20 after 5 warm-ups"


def _cache_path(key: str) -> Path:
    safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in key)
    return user_cache_dir() / f"ceilings-{safe}.json"


def measure(device_index: int = 0, matmul_n: int = 8192, copy_bytes: int = 1 << 31) -> DeviceCeilings:
    """Measure the ceilings of a CUDA device (takes a few seconds)."""
    import datetime

    import torch

    dev = torch.device("cuda", device_index)

    def median_ms(fn, reps: int = 20, warmup: int = 5) -> float:
        for _ in range(warmup):
            fn()
        times = []
        for _ in range(reps):
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            fn()
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end))
        return sorted(times)[len(times) // 2]

    src = torch.empty(copy_bytes // 2, dtype=torch.uint8, device=dev).random_(0, 255)
    dst = torch.empty_like(src)
    copy_ms = median_ms(lambda: dst.copy_(src))
    a = torch.randn(matmul_n, matmul_n, dtype=torch.bfloat16, device=dev)
    b = torch.randn(matmul_n, matmul_n, dtype=torch.bfloat16, device=dev)
    mm_ms = median_ms(lambda: torch.mm(a, b))
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
            return DeviceCeilings.model_validate_json(path.read_text())
        except ValueError:
            pass  # a corrupt cache entry is measured again
    found = measure(device_index)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(found.model_dump(), indent=2))
    return found


__all__ = ["DeviceCeilings", "measure", "ceilings_for"]
