"""The guard's one entry point: `evaluate(task, candidate, incumbent=None)` -> `Evaluation`.

Order: static gate (no process), then a worker process for reference, compile, correctness and
timing, then the decision. Every way a candidate can fail becomes exactly one status; only our own
bugs raise. Imports torch lazily (device resolution, SOL ceilings).
"""

from __future__ import annotations

import random
import secrets
import time

from kernelarc.errors import DeviceError
from kernelarc.guard.build_cache import BuildCache, BuildSession
from kernelarc.guard.candidate import Candidate
from kernelarc.guard.gate import check_candidate
from kernelarc.guard.runner import WarmPool, WorkerOutcome, run_worker
from kernelarc.guard.settings import GuardSettings
from kernelarc.guard.types import Evaluation, Status, TimingMethod, Verdict, WorkloadResult
from kernelarc.guard.verdict import decide, geomean
from kernelarc.task.model import Task


class GuardInternalError(RuntimeError):
    """The guard's own code failed inside the worker: a kernelarc bug, not the candidate's fault."""


def resolve_device(device: str) -> str:
    """`auto` -> `cuda` when a CUDA device is present, else `cpu`; checks an explicit `cuda`.

    Raises:
        DeviceError: unknown device name, or `cuda` asked for on a machine without one.
    """
    import torch

    if device == "auto":
        return "cuda:0" if torch.cuda.is_available() else "cpu"
    if device == "cpu":
        return "cpu"
    suffix = device.removeprefix("cuda:") if device.startswith("cuda:") else "0" if device == "cuda" else None
    if suffix is not None and suffix.isdigit():
        if not torch.cuda.is_available():
            raise DeviceError(f"device {device!r} asked for, but no CUDA device is available (use --device cpu)")
        index = int(suffix)
        if index >= torch.cuda.device_count():
            raise DeviceError(f"device {device!r} does not exist: {torch.cuda.device_count()} CUDA device(s) present")
        return f"cuda:{index}"
    raise DeviceError(f"unknown device {device!r}: use auto, cpu, cuda or cuda:N")


def draw_seeds(task: Task, settings: GuardSettings) -> tuple[dict[str, list[int]], dict[str, int], int]:
    """Input seeds per workload and round, audit seeds, and the audit-position seed.

    From the OS unless `settings.seed` is set (campaigns derive it from their own seed and the
    candidate hash, so decisions are reproducible while the candidate still cannot know them).
    """
    rng = random.Random(settings.seed) if settings.seed is not None else secrets.SystemRandom()
    rounds = settings.rounds or task.rounds
    seeds = {w.uuid: [rng.randrange(1, 2**31) for _ in range(rounds)] for w in task.workloads}
    audit = {w.uuid: rng.randrange(1, 2**31) for w in task.workloads}
    return seeds, audit, rng.randrange(2**31)


def evaluate(
    task: Task,
    candidate: Candidate,
    incumbent: Candidate | None = None,
    *,
    device: str = "auto",
    settings: GuardSettings | None = None,
    trusted: bool = False,
    pool: WarmPool | None = None,
    build_cache: BuildCache | None = None,
) -> Evaluation:
    """Judge `candidate` against `incumbent` (the reference when None) on every workload of `task`.

    Args:
        trusted: skip the static gate; only for kernelarc's own baselines (they reuse the reference).
        pool: already started workers to take from (a campaign's); None starts one now.
        build_cache: extension builds kept across evaluations (a campaign's); None builds afresh.
    """
    settings = settings or GuardSettings()
    started = time.monotonic()
    device = resolve_device(device)
    finding = None if trusted else check_candidate(candidate)
    if finding is not None:
        return Evaluation(
            verdict=Verdict.REJECT, status=Status.STATIC_REJECT, correct=False, device=_device_name(device),
            reason=f"static gate, rule {finding.rule} at line {finding.line}: {finding.message}",
            static_rule=finding.rule, static_line=finding.line, wall_s=time.monotonic() - started,
        )
    seeds, audit_seeds, audit_rng = draw_seeds(task, settings)
    job = {
        # The task itself, not its path: the worker judges what the caller loaded and skips the loader's
        # meta-device probing (seconds per worker). `definition` is excluded from dumps, so it rides apart.
        "task": task.model_dump(mode="json"), "task_definition": task.definition,
        "device": device, "settings": settings.model_dump(mode="json"),
        "seeds": seeds, "audit_seeds": audit_seeds, "audit_rng": audit_rng,
        "candidate": candidate.model_dump(mode="json"),
        "incumbent": incumbent.model_dump(mode="json") if incumbent is not None else None,
    }
    deadlines = {"reference": settings.reference_timeout_s, "compile": settings.compile_timeout_s,
                 "first_call": settings.compile_timeout_s, "correctness": settings.run_timeout_s,
                 "timing": settings.run_timeout_s}
    builds = BuildSession(build_cache, candidate, incumbent) if build_cache is not None else None
    outcome = run_worker(job, deadlines=deadlines, device=device, pool=pool, builds=builds)
    return _to_evaluation(task, outcome, settings, device, incumbent is None, time.monotonic() - started)


def _device_name(device: str) -> str:
    if device == "cpu":
        return "cpu"
    import torch

    return torch.cuda.get_device_name(torch.device(device))


def _failure_from_outcome(outcome: WorkerOutcome) -> tuple[Status, str]:
    """The status and reason when the worker gave no usable PASSED result."""
    if outcome.internal_error:
        raise GuardInternalError(outcome.internal_error)
    if outcome.forged_lines:  # whatever else came back: the candidate wrote to the guard's channel
        return Status.REWARD_HACK, f"{outcome.forged_lines} forged line(s) written to the guard's result channel"
    if outcome.result is not None and outcome.result["status"] != "PASSED":
        return Status(outcome.result["status"]), outcome.result.get("message", "")
    stage = outcome.last_stage or "start"
    if outcome.timed_out_stage:
        if outcome.timed_out_stage == "compile":
            return Status.COMPILE_ERROR, "timed out while importing or building the candidate"
        if outcome.timed_out_stage in ("reference", "start"):
            return Status.INVALID_REFERENCE, "timed out while computing the reference outputs"
        if outcome.timed_out_stage == "first_call":
            return Status.TIMEOUT, "timed out during the candidate's first call (JIT compilation included)"
        return Status.TIMEOUT, f"timed out during {outcome.timed_out_stage}"
    how = f"killed by {outcome.signal_name}" if outcome.signal_name else f"exited with code {outcome.returncode}"
    if outcome.returncode == 0:
        return Status.REWARD_HACK, f"the worker exited during {stage} without a result (os._exit or sys.exit in the candidate?)"
    if stage in ("reference", "start"):
        return Status.INVALID_REFERENCE, f"worker {how} while computing the reference"
    status = Status.COMPILE_ERROR if stage == "compile" else Status.RUNTIME_ERROR
    hint = " (out of host memory?)" if outcome.signal_name == "SIGKILL" else ""
    return status, f"worker {how} during {stage}{hint}"


def _to_evaluation(task: Task, outcome: WorkerOutcome, settings: GuardSettings, device: str,
                   vs_reference: bool, wall_s: float) -> Evaluation:
    result = outcome.result or {}
    device_name = result.get("device") or _device_name(device)
    common = {"device": device_name, "wall_s": wall_s, "log_tail": outcome.log_tail,
              "stage_seconds": {k: round(v, 4) for k, v in outcome.stage_seconds.items()},
              "compile_s": result.get("compile_s")}
    passed = result.get("status") == "PASSED" and not outcome.forged_lines
    status, message = (Status.PASSED, "") if passed else _failure_from_outcome(outcome)
    if status is not Status.PASSED:
        done = [WorkloadResult(uuid=w["uuid"], status=Status(w["status"]), max_abs_error=w.get("max_abs_error"),
                               max_rel_error=w.get("max_rel_error"), message=w.get("message", ""))
                for w in result.get("workloads", [])]
        return Evaluation(verdict=Verdict.REJECT, status=status, correct=False, reason=message or status.value,
                          workloads=tuple(done), **common)
    sol = _sol_times(task, device)
    workloads = [
        WorkloadResult(uuid=w["uuid"], status=Status.PASSED, latency_ms=w["latency_ms"], incumbent_ms=w["incumbent_ms"],
                       spread=w["spread"], incumbent_spread=w["incumbent_spread"], iterations=w.get("iterations"),
                       calls_per_sample=w.get("calls_per_sample", 1), sol_ms=sol.get(w["uuid"]),
                       max_abs_error=w["max_abs_error"], max_rel_error=w["max_rel_error"])
        for w in result["workloads"]
    ]
    decision = decide(workloads, settings, "reference" if vs_reference else "incumbent")
    sol_ms, score = _sol_summary(workloads, vs_reference)
    return Evaluation(
        verdict=decision.verdict, status=Status.PASSED, correct=True, reason=decision.reason,
        latency_ms=decision.latency_ms, incumbent_ms=decision.incumbent_ms, speedup=decision.speedup,
        noise=decision.noise, sol_ms=sol_ms, sol_score=score, timing=TimingMethod(result["timing"]),
        workloads=tuple(workloads), **common,
    )


def _sol_times(task: Task, device: str) -> dict[str, float]:
    """SOL time per workload on a CUDA device (ceilings measured once and cached); empty on the CPU."""
    if device == "cpu":
        return {}
    from kernelarc.roofline import ceilings_for, sol_ms

    ceilings = ceilings_for(int(device.split(":")[1]))
    return {w.uuid: t for w in task.workloads if (t := sol_ms(w, ceilings)) is not None}


def _sol_summary(workloads: list[WorkloadResult], vs_reference: bool) -> tuple[float | None, float | None]:
    """Geometric-mean SOL time and mean SOL score (baseline = the reference; only when timed against it)."""
    from kernelarc.roofline import sol_score

    if not workloads or any(w.sol_ms is None for w in workloads):
        return None, None
    sol = geomean([w.sol_ms for w in workloads])
    if not vs_reference:
        return sol, None
    scores = [sol_score(w.latency_ms, w.incumbent_ms, w.sol_ms) for w in workloads]
    return sol, sum(scores) / len(scores)


__all__ = ["evaluate", "resolve_device", "draw_seeds", "GuardInternalError"]
