"""`--executor ray`: each guard evaluation is a Ray task that asks the cluster for one device.

The driver (this process) keeps the agents and the campaign database; a Ray task carries the task's
files, the candidate and the incumbent to the node that got the device, where `ray_node.judge_on_node`
runs the same sandboxed judge as a local campaign and returns the evaluation (docs/cluster.md).

Devices, as Ray resources:
- CUDA: `num_gpus=1` plus the GPU kind (`accelerator_type`, which Ray detects per node, e.g. H200):
  the cluster's scheduler is the device lock across nodes, and a node without that kind of GPU is
  never chosen, so every timing of a campaign comes from one kind of card. The kind is the one most
  of the cluster's GPUs have.
- CPU (clusters without GPUs, the tests): the custom resource `kernelarc_cpu`, which a node offers
  once (`ray start --resources '{"kernelarc_cpu": 1}'`): one timing at a time per node, like the local
  executor's one lock for the CPU. Plain `CPU` would let a 16-core node time 16 candidates at once.

Faults: a task whose worker or node is lost is submitted again, at most MAX_ATTEMPTS times, and each
loss is reported to `on_event` (the campaign logs it in its store). Ray's own retries are off so
that every loss is seen. Imports ray only when used.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

from kernelarc.campaign.ray_node import Sandboxing, TaskPayload, judge_on_node
from kernelarc.errors import DeviceError, UserError
from kernelarc.guard import Candidate, Evaluation, GuardSettings
from kernelarc.guard.cutoff import Cutoff, EvaluationCut
from kernelarc.task.model import Task

CPU_RESOURCE = "kernelarc_cpu"
"""The custom Ray resource a CPU node offers once to judge on its CPU (one evaluation at a time)."""
ACCELERATOR_PREFIX = "accelerator_type:"
"""Ray's per-node resource naming the kind of its GPUs (`accelerator_type:H200`)."""
MAX_ATTEMPTS = 3
"""Submissions of one evaluation before a lost worker or node stops the campaign."""
POLL_S = 0.5
"""How often a waiting evaluation looks at the campaign's cutoff."""


class RayMissing(UserError):
    """`--executor ray` without Ray installed."""


class ClusterError(UserError):
    """The cluster cannot be reached, has no device to judge on, or keeps losing an evaluation."""


def import_ray():
    """The ray module, or RayMissing saying how to install it."""
    try:
        import ray
    except ImportError:
        raise RayMissing("--executor ray needs Ray: pip install 'kernelarc[ray]'") from None
    return ray


@dataclass(frozen=True)
class ClusterTarget:
    """What a campaign's evaluations ask the cluster for."""

    device: str
    """`cuda` or `cpu`: what the judge runs on, and what the agents are told."""
    accelerator: str | None
    """The GPU kind every evaluation asks for (Ray's accelerator type, e.g. `H200`); None on the CPU."""
    slots: int
    """Evaluations the cluster can run at once (GPUs of that kind, or nodes offering `kernelarc_cpu`)."""
    nodes: int
    """Nodes that offer those slots."""


def connect(address: str, device: str) -> ClusterTarget:
    """Join the Ray cluster at `address` (unless this process already has) and pick what to judge on.

    Args:
        address: `auto` (the cluster this machine belongs to, or $RAY_ADDRESS) or HOST:PORT.
        device: `auto` (the cluster's GPUs, else its CPU nodes), `cuda` or `cpu`.

    Raises:
        RayMissing: Ray is not installed.
        DeviceError: `cuda:N` (the cluster picks the GPU) or an unknown device.
        ClusterError: the cluster cannot be reached or offers nothing to judge on.
    """
    if device not in ("auto", "cuda", "cpu"):
        raise DeviceError(f"--device {device!r} with --executor ray: use auto, cuda or cpu "
                          "(the cluster's scheduler picks the GPU)")
    ray = import_ray()
    if not ray.is_initialized():
        try:
            ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
        except (ConnectionError, ValueError, RuntimeError) as e:
            raise ClusterError(f"cannot reach the Ray cluster at {address}: {' '.join(str(e).split())}") from None
    nodes = [n["Resources"] for n in ray.nodes() if n["Alive"]]
    gpus: Counter[str] = Counter()
    gpu_nodes: Counter[str] = Counter()
    for resources in nodes:
        kinds = [k.removeprefix(ACCELERATOR_PREFIX) for k in resources if k.startswith(ACCELERATOR_PREFIX)]
        if kinds and resources.get("GPU"):
            gpus[kinds[0]] += int(resources["GPU"])
            gpu_nodes[kinds[0]] += 1
    if device != "cpu" and gpus:
        kind = max(sorted(gpus), key=gpus.__getitem__)  # the most GPUs; a tie goes to the first name
        return ClusterTarget("cuda", kind, gpus[kind], gpu_nodes[kind])
    if device == "cuda":
        raise ClusterError(f"the Ray cluster at {address} has no GPU of a kind Ray detected (use --device cpu)")
    cpu_nodes = [int(r.get(CPU_RESOURCE, 0)) for r in nodes if r.get(CPU_RESOURCE)]
    if not cpu_nodes:
        raise ClusterError(f"the Ray cluster at {address} has no GPU and no node offering the {CPU_RESOURCE} "
                           f"resource (start CPU nodes with: ray start --resources '{{\"{CPU_RESOURCE}\": 1}}')")
    return ClusterTarget("cpu", None, sum(cpu_nodes), len(cpu_nodes))


def _one_line(error: BaseException) -> str:
    return f"{type(error).__name__}: {' '.join(str(error).split())}"[:500]


class RayExecutor:
    """Guard evaluations as Ray tasks, one device each, anywhere on one cluster."""

    def __init__(self, task: Task, target: ClusterTarget, settings: GuardSettings, sandboxing: Sandboxing,
                 on_event: Callable[[str, dict], None] = lambda kind, payload: None):
        ray = import_ray()
        self.target = target
        self.devices = [target.device]
        self.settings = settings
        self.sandboxing = sandboxing
        self.on_event = on_event
        """Receives what the campaign should record: each lost attempt (`evaluation_lost`)."""
        self.lock_held_s: dict[str, float] = {}
        """Seconds each device (`<node id>/gpu<N>`, `<node id>/cpu`) was held by this executor's evaluations."""
        self._payload = ray.put(TaskPayload.of(task))  # sent once to the object store, fetched by each node
        if target.accelerator is None:
            self._remote = ray.remote(resources={CPU_RESOURCE: 1}, max_retries=0)(judge_on_node)
        else:  # num_gpus in the decorator: Ray then gives each evaluation a fresh worker (max_calls=1)
            self._remote = ray.remote(num_gpus=1, accelerator_type=target.accelerator, max_retries=0)(judge_on_node)

    async def evaluate(self, candidate: Candidate, incumbent: Candidate | None, *, slot: int, seed: int,
                       trusted: bool = False, cutoff: Cutoff | None = None) -> Evaluation:
        """The candidate's evaluation on whichever node got a device (`slot` is not used: Ray places it).

        Raises:
            EvaluationCut: `cutoff` passed first (the node's judge ended its sides, or the task was killed).
            ClusterError: the evaluation was lost MAX_ATTEMPTS times.
        """
        from ray.exceptions import (LocalRayletDiedError, NodeDiedError, ObjectLostError, OutOfMemoryError,
                                    RaySystemError, WorkerCrashedError)

        lost = (WorkerCrashedError, NodeDiedError, ObjectLostError, LocalRayletDiedError, OutOfMemoryError,
                RaySystemError)
        settings = self.settings.model_copy(update={"seed": seed})
        last: BaseException | None = None
        for attempt in range(1, MAX_ATTEMPTS + 1):
            if cutoff is not None:
                cutoff.check()
            cut_at = None if cutoff is None or cutoff.at is None else time.time() + cutoff.at - time.monotonic()
            ref = self._remote.remote(self._payload, candidate, incumbent, settings, trusted, self.sandboxing, cut_at)
            try:
                result = await self._wait(ref, cutoff)
            except lost as e:
                last = e
                self.on_event("evaluation_lost", {"candidate": candidate.name, "hash": candidate.hash[:16],
                                                  "attempt": attempt, "max_attempts": MAX_ATTEMPTS,
                                                  "error": _one_line(e)})
                continue
            self.lock_held_s[result.where] = self.lock_held_s.get(result.where, 0.0) + result.held_s
            if result.cut is not None:
                raise EvaluationCut(result.cut)
            return result.evaluation
        raise ClusterError(f"the Ray cluster lost the evaluation of {candidate.name} {MAX_ATTEMPTS} times "
                           f"(last: {_one_line(last)}); what was judged is kept: check the cluster, then --resume")

    async def _wait(self, ref, cutoff: Cutoff | None):
        """The task's result; the task is killed when the cutoff passes or the caller gives up on it."""
        import ray
        from ray.exceptions import RayTaskError

        future = asyncio.wrap_future(ref.future())
        try:
            while not (await asyncio.wait({future}, timeout=POLL_S))[0]:
                if cutoff is not None and cutoff.passed():
                    ray.cancel(ref, force=True)
                    raise EvaluationCut(cutoff.why)
        except asyncio.CancelledError:
            ray.cancel(ref, force=True)
            raise
        try:
            return future.result()
        except RayTaskError as e:  # raised in judge_on_node: a user's mistake stays one line, our bug raises
            if isinstance(e.cause, UserError):
                raise e.cause from None
            raise

    def close(self) -> None:
        """Nothing runs after the campaign: its tasks ended or were killed; the connection stays for others."""
        self._payload = None


__all__ = ["CPU_RESOURCE", "ClusterError", "ClusterTarget", "MAX_ATTEMPTS", "RayExecutor", "RayMissing", "connect",
           "import_ray"]
