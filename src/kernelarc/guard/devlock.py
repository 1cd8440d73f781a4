"""One lock per device, held across processes: two campaigns or benches on one machine queue for a
GPU instead of timing on it at once.

A lock is `flock` on a file per device under the user cache (`locks/<device id>.lock`), opened anew
for each acquisition, so two holders in one process exclude each other as two processes do, and
the kernel drops the lock of a process that dies. The CPU has a lock too: timings on it are only
rankings, but two at once would still disturb each other. The device id is the GPU's UUID, so
`cuda:0` in two processes with different CUDA_VISIBLE_DEVICES still names one card. Imports
without torch (the UUID is asked of torch only for CUDA devices).
"""

from __future__ import annotations

import fcntl
import os
import re
import time
from contextlib import contextmanager
from pathlib import Path

from kernelarc.guard.cutoff import Cutoff
from kernelarc.guard.sandbox import device_index
from kernelarc.paths import user_cache_dir


def lock_dir() -> Path:
    return user_cache_dir() / "locks"


def device_id(device: str) -> str:
    """A name for the physical device behind `device` that every process agrees on."""
    if device == "cpu":
        return "cpu"
    import torch

    index = device_index(device)
    uuid = getattr(torch.cuda.get_device_properties(index), "uuid", None)
    return f"gpu-{uuid}" if uuid is not None else f"cuda-{index}"


POLL_S = 0.1
"""How often a wait with a cutoff tries the lock again."""


@contextmanager
def device_lock(device: str, directory: Path | None = None, cutoff: Cutoff | None = None):
    """Hold `device`'s lock for the block; yields the seconds spent waiting for it.

    Raises:
        EvaluationCut: `cutoff` passed while waiting (another process held the lock).
    """
    folder = directory or lock_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', device_id(device))}.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        t0 = time.monotonic()
        if cutoff is None:
            fcntl.flock(fd, fcntl.LOCK_EX)
        else:
            while True:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except BlockingIOError:
                    cutoff.check()
                    time.sleep(POLL_S)
        yield time.monotonic() - t0
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


__all__ = ["device_lock", "device_id", "lock_dir"]
