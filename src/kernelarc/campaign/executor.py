"""The seam between the campaign and evaluation: submit a candidate, get its Evaluation back.

`LocalExecutor` runs the guard's side processes on this machine through one `Judge` (warm sides, the
reference side kept per device, extension builds kept per candidate). Evaluations on one device run
one at a time: here by an asyncio lock per device, across processes by the guard's device lock.
`RayExecutor` (ray_executor.py, `--executor ray`) implements the same `evaluate` coroutine with one
Ray task per evaluation; `ExecutorSpec` says which one a run uses.
"""

from __future__ import annotations

import asyncio
import hashlib
import tempfile
import time
from pathlib import Path
from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict

from kernelarc.guard import Candidate, Evaluation, GuardSettings
from kernelarc.guard.build_cache import BuildCache
from kernelarc.guard.cutoff import Cutoff
from kernelarc.guard.judge import Isolation, Judge
from kernelarc.guard.sides import gpu_capability
from kernelarc.task.model import Task


def evaluation_seed(campaign_seed: int, candidate: Candidate, incumbent: Candidate | None) -> int:
    """Input seed for one evaluation: reproducible for the campaign, unknowable to the candidate."""
    text = f"{campaign_seed}:{candidate.hash}:{incumbent.hash if incumbent else 'reference'}"
    return int(hashlib.sha256(text.encode()).hexdigest()[:15], 16)


class ExecutorSpec(BaseModel):
    """Where a run's evaluations happen (`--executor`, `--ray-address`). Not a campaign option: where a
    candidate was judged does not change what the campaign is, so a campaign started on one executor
    may be resumed on the other, and bench rows of either count alike."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["local", "ray"] = "local"
    """`local`: worker processes on this machine; `ray`: Ray tasks on a cluster's devices."""
    ray_address: str = "auto"
    """The Ray cluster to join: `auto` (this machine's cluster, or $RAY_ADDRESS) or HOST:PORT."""


LOCAL = ExecutorSpec()


class Executor(Protocol):
    devices: list[str]

    async def evaluate(self, candidate: Candidate, incumbent: Candidate | None, *, slot: int, seed: int,
                       trusted: bool = False, cutoff: Cutoff | None = None) -> Evaluation:
        """The candidate's evaluation; EvaluationCut when `cutoff` passed first (its processes ended)."""

    def close(self) -> None: ...


class LocalExecutor:
    """Guard evaluations in local worker processes, serialized per device by a lock."""

    def __init__(self, task: Task, devices: list[str], settings: GuardSettings, isolation: Isolation | None = None):
        self.task = task
        self.devices = devices
        self.settings = settings
        self._locks = {d: asyncio.Lock() for d in devices}
        self._builds_dir = tempfile.TemporaryDirectory(prefix="kernelarc-builds-")
        self.judge = Judge(task, isolation_=isolation, build_cache=BuildCache(Path(self._builds_dir.name)))
        """Started sides wait per device while the current evaluation runs (close() ends them)."""
        self.lock_held_s = {d: 0.0 for d in devices}
        """Seconds each device's lock was held (evaluations, waits for other processes included)."""

    async def evaluate(self, candidate: Candidate, incumbent: Candidate | None, *, slot: int, seed: int,
                       trusted: bool = False, cutoff: Cutoff | None = None) -> Evaluation:
        device = self.devices[slot % len(self.devices)]
        settings = self.settings.model_copy(update={"seed": seed})
        ready = None
        if device != "cpu":  # builds on the CPU while another candidate holds the GPU (the CPU has no such slack),
            await asyncio.to_thread(self.judge.prebuild, candidate, settings, cutoff, gpu_capability(device))
            # and the fresh sides start before the queue for the device, not inside it (Judge.ready_sides)
            ready = await asyncio.to_thread(self.judge.ready_sides, device, incumbent, settings, cutoff)
        try:
            async with self._locks[device]:
                if cutoff is not None:
                    cutoff.check()
                t0 = time.monotonic()
                handed, ready = ready, None  # the evaluation owns them from here
                try:
                    return await asyncio.to_thread(self.judge.evaluate, candidate, incumbent, device=device,
                                                   settings=settings, trusted=trusted, cutoff=cutoff, ready=handed)
                finally:
                    self.lock_held_s[device] += time.monotonic() - t0
        finally:
            self.judge.give_back(ready)  # cut while queued: the sides go back unused

    def close(self) -> None:
        """End the sides and remove the kept builds."""
        self.judge.close()
        self._builds_dir.cleanup()


__all__ = ["Executor", "ExecutorSpec", "LOCAL", "LocalExecutor", "evaluation_seed"]
