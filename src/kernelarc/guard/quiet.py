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
import tempfile
from collections.abc import Iterator
from pathlib import Path

ENV_VAR = "KERNELARC_QUIET_LOCK"
"""Set by the runner in each worker's environment: the lock file of the worker's device."""


def lock_path(device: str) -> str:
    """The lock file of `device` on this host, shared by every campaign of this user."""
    return str(Path(tempfile.gettempdir()) / f"kernelarc-quiet-{os.getuid()}-{device.replace(':', '_')}.lock")


@contextlib.contextmanager
def quiet(*, exclusive: bool) -> Iterator[None]:
    """Hold the device's lock: exclusive while timing, shared while starting up (no-op without it)."""
    path = os.environ.get(ENV_VAR)
    if not path:
        yield
        return
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


__all__ = ["ENV_VAR", "lock_path", "quiet"]
