"""A host-wide lock per device that keeps worker start-ups out of timed windows.

Measured on the H200 (docs/benchmarks.md, 2026-11-30): while the warm pool started the next worker
(importing torch, creating a CUDA context, starting CUPTI) during the current worker's timing,
launch-bound candidates showed 30-90% spread between p20 and p80, and the same eager reference
measured anywhere from 0.034 to 0.128 ms across evaluations. A starting worker holds this lock
shared (start-ups may overlap each other); the timing stage holds it exclusively, so timing waits
for start-ups in flight and new start-ups wait for the timing to end. Imports without torch.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

ENV_VAR = "KERNELARC_QUIET_LOCK"
"""Set by the runner in each worker's environment: the lock file of the worker's device."""


def physical_device(device: str) -> str:
    """`device` as the host knows it: `cuda:1` under CUDA_VISIBLE_DEVICES=2,3 is the host's GPU 3.

    Two benches on one machine, each given one GPU through CUDA_VISIBLE_DEVICES, both call theirs
    `cuda:0`; they must not share one lock (each would wait for the other's start-ups for nothing).
    """
    kind, _, index = device.partition(":")
    visible = [v.strip() for v in os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    if kind != "cuda" or not visible:
        return device
    position = int(index or 0)
    return f"cuda:{visible[position]}" if position < len(visible) else device


def lock_path(device: str) -> str:
    """The lock file of `device` on this host, shared by every campaign of this user."""
    name = physical_device(device).replace(":", "_").replace("/", "_")
    return str(Path(tempfile.gettempdir()) / f"kernelarc-quiet-{os.getuid()}-{name}.lock")


WAIT_S = 60.0
"""Longest wait for the lock. A start-up takes seconds; past this one is stuck (a hung CUDA init, say),
and the waiting worker goes on without the lock rather than time out a candidate for it."""
_POLL_S = 0.01


@contextlib.contextmanager
def quiet(*, exclusive: bool, wait_s: float = WAIT_S) -> Iterator[None]:
    """Hold the device's lock: exclusive while timing, shared while starting up (no-op without it)."""
    path = os.environ.get(ENV_VAR)
    if not path:
        yield
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    deadline = time.monotonic() + wait_s
    try:
        while True:
            try:
                fcntl.flock(fd, (fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH) | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    print(f"kernelarc: {path} still held after {wait_s:.0f} s; going on without it",
                          file=sys.stderr, flush=True)
                    break
                time.sleep(_POLL_S)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock, if it was taken


__all__ = ["ENV_VAR", "WAIT_S", "lock_path", "physical_device", "quiet"]
