"""What one Ray task does on the node that got the device: rebuild the task from the bytes it was
sent, judge one candidate with the same guard as a local campaign, and say where that happened.

Nothing is read from the driver's file system: the task's files arrive as a task argument and are
written to a private folder on the node, removed afterwards. The judge is started for this one
evaluation (a GPU task gets a fresh Ray worker, `max_calls=1`, so a CUDA context never outlives the
GPU Ray lent it), under the node's own device lock. Imports neither agents nor the store, which stay
on the driver. Budget: about 100 lines.
"""

from __future__ import annotations

import dataclasses
import shutil
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from kernelarc.guard import Candidate, Evaluation, GuardSettings
from kernelarc.guard.cutoff import Cutoff, EvaluationCut
from kernelarc.guard.judge import Judge, isolation
from kernelarc.guard.sandbox import SandboxPolicy
from kernelarc.paths import user_data_dir
from kernelarc.task.model import Task, TaskFormat
from kernelarc.task.sol import DEFINITION_FILE, WORKLOAD_FILE


@dataclass(frozen=True)
class TaskPayload:
    """A task as it travels to a node: the loaded model and the files it was read from, as bytes."""

    task: Task
    files: dict[str, bytes]
    """Path relative to the task's folder (KernelBench: the file's own name) -> content."""

    @classmethod
    def of(cls, task: Task) -> "TaskPayload":
        """The task and its files: the KernelBench file, or definition, workloads and safetensors inputs."""
        if task.format is TaskFormat.KERNELBENCH:
            return cls(task, {task.path.name: task.path.read_bytes()})
        names = {DEFINITION_FILE, WORKLOAD_FILE} | {spec.safetensors_path for w in task.workloads
                                                    for spec in w.inputs if spec.safetensors_path}
        # a missing blob stays missing: the node's judge then says so as it would here
        return cls(task, {n: (task.path / n).read_bytes() for n in sorted(names) if (task.path / n).is_file()})

    def unpack(self, root: Path) -> Task:
        """Write the files under `root` and return the task pointing there."""
        for name, content in self.files.items():
            target = (root / name).resolve()
            if not target.is_relative_to(root.resolve()):
                raise ValueError(f"task file {name!r} would land outside {root}")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(content)
        path = root / self.task.path.name if self.task.format is TaskFormat.KERNELBENCH else root
        return self.task.model_copy(update={"path": path})


@dataclass(frozen=True)
class Sandboxing:
    """The driver's isolation rules, re-applied on the node (whose own sandbox is probed there)."""

    policy: SandboxPolicy
    require: bool
    """Untrusted backend: refuse to judge without a sandbox unless `allow_unsafe`."""
    allow_unsafe: bool


@dataclass(frozen=True)
class NodeResult:
    """An evaluation and where it ran, or why it was cut."""

    evaluation: Evaluation | None
    cut: str | None
    """The cutoff's words when the evaluation was cut (no verdict)."""
    where: str
    """`<Ray node id>/gpu<N>` or `<Ray node id>/cpu`."""
    held_s: float
    """Seconds this task held its device (the judge's whole run)."""


def judge_on_node(payload: TaskPayload, candidate: Candidate, incumbent: Candidate | None, settings: GuardSettings,
                  trusted: bool, sandboxing: Sandboxing, cut_at: float | None) -> NodeResult:
    """One evaluation on the device Ray assigned to this task (cuda:0 under Ray's CUDA_VISIBLE_DEVICES).

    `cut_at` is the caller's cutoff as a Unix time (monotonic clocks differ between machines, and the
    task may have waited in Ray's queue): the judge here ends its sides then; the driver also kills the
    task if the cutoff passes first by its own clock.
    """
    import ray

    context = ray.get_runtime_context()
    gpus = context.get_accelerator_ids().get("GPU", [])
    device = "cuda:0" if gpus else "cpu"
    where = f"{context.get_node_id()}/" + (f"gpu{gpus[0]}" if gpus else "cpu")
    policy = dataclasses.replace(sandboxing.policy, hidden=(*sandboxing.policy.hidden, user_data_dir()))
    iso = isolation(require=sandboxing.require, allow_unsafe=sandboxing.allow_unsafe, policy=policy)
    cutoff = Cutoff(None if cut_at is None else time.monotonic() + (cut_at - time.time()))
    root = Path(tempfile.mkdtemp(prefix="kernelarc-ray-task-"))
    started = time.monotonic()
    try:
        with Judge(payload.unpack(root), isolation_=iso, warm=False) as judge:
            evaluation = judge.evaluate(candidate, incumbent, device=device, settings=settings, trusted=trusted,
                                        cutoff=cutoff)
        return NodeResult(evaluation.model_copy(update={"node": where}), None, where, time.monotonic() - started)
    except EvaluationCut as e:
        return NodeResult(None, str(e), where, time.monotonic() - started)
    finally:
        shutil.rmtree(root, ignore_errors=True)


__all__ = ["NodeResult", "Sandboxing", "TaskPayload", "judge_on_node"]
