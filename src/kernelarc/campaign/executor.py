"""The seam between the campaign and evaluation: submit a candidate, get its Evaluation back.

`LocalExecutor` runs the guard in worker processes on this machine, one lock per device (one GPU:
one evaluation at a time, so timings never overlap). A cluster executor (Ray actors per GPU) would
implement the same `evaluate` coroutine; nothing else in the campaign would change.
"""

from __future__ import annotations

import asyncio
import hashlib
import tempfile
import time
from pathlib import Path
from typing import Protocol

from kernelarc.guard import Candidate, Evaluation, GuardSettings, evaluate
from kernelarc.guard.build_cache import BuildCache
from kernelarc.guard.runner import WarmPool
from kernelarc.task.model import Task


def evaluation_seed(campaign_seed: int, candidate: Candidate, incumbent: Candidate | None) -> int:
    """Input seed for one evaluation: reproducible for the campaign, unknowable to the candidate."""
    text = f"{campaign_seed}:{candidate.hash}:{incumbent.hash if incumbent else 'reference'}"
    return int(hashlib.sha256(text.encode()).hexdigest()[:15], 16)


class Executor(Protocol):
    devices: list[str]

    async def evaluate(self, candidate: Candidate, incumbent: Candidate | None, *, slot: int, seed: int,
                       trusted: bool = False) -> Evaluation: ...

    def close(self) -> None: ...


class LocalExecutor:
    """Guard evaluations in local worker processes, serialized per device by a lock."""

    def __init__(self, task: Task, devices: list[str], settings: GuardSettings):
        self.task = task
        self.devices = devices
        self.settings = settings
        self._locks = {d: asyncio.Lock() for d in devices}
        self._builds_dir = tempfile.TemporaryDirectory(prefix="kernelarc-builds-")
        self._builds = BuildCache(Path(self._builds_dir.name))
        """Each candidate's extension builds, for the later evaluations it takes part in (close() removes them)."""
        self._pool = WarmPool(self._builds.worker_extensions)
        """A started worker waits per device while the current evaluation runs (close() ends them)."""
        self.lock_held_s = {d: 0.0 for d in devices}
        """Seconds each device's lock was held (correctness + timing + worker start-up)."""

    async def evaluate(self, candidate: Candidate, incumbent: Candidate | None, *, slot: int, seed: int,
                       trusted: bool = False) -> Evaluation:
        device = self.devices[slot % len(self.devices)]
        settings = self.settings.model_copy(update={"seed": seed})
        async with self._locks[device]:
            t0 = time.monotonic()
            try:
                return await asyncio.to_thread(evaluate, self.task, candidate, incumbent, device=device,
                                               settings=settings, trusted=trusted, pool=self._pool,
                                               build_cache=self._builds)
            finally:
                self.lock_held_s[device] += time.monotonic() - t0

    def close(self) -> None:
        """End the idle pooled workers and remove the kept builds."""
        self._pool.close()
        self._builds_dir.cleanup()


__all__ = ["Executor", "LocalExecutor", "evaluation_seed"]
