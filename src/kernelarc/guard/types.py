"""What the guard says about a candidate: statuses, verdicts and the evaluation record.

Imports without torch. Impossible results cannot be built: a REJECT carries no timing, and a
PASSED evaluation always carries one.
"""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, ConfigDict, Field, model_validator


class Status(str, Enum):
    """How evaluation of a candidate ended (a superset of SOL-ExecBench's statuses)."""

    PASSED = "PASSED"
    """Correct on every workload and round, and timed."""
    STATIC_REJECT = "STATIC_REJECT"
    """Refused by the static gate before anything ran."""
    COMPILE_ERROR = "COMPILE_ERROR"
    """Import, build (Triton, load_inline, C++ extension) or construction failed, or timed out."""
    RUNTIME_ERROR = "RUNTIME_ERROR"
    """Raised or crashed (segfault, illegal memory access, out of memory) while running."""
    TIMEOUT = "TIMEOUT"
    """Ran past the run-stage time limit."""
    INCORRECT_SHAPE = "INCORRECT_SHAPE"
    """An output had the wrong shape, count or type (not exactly `torch.Tensor`)."""
    INCORRECT_DTYPE = "INCORRECT_DTYPE"
    """An output had the wrong dtype."""
    INCORRECT_NUMERICAL = "INCORRECT_NUMERICAL"
    """An output was out of tolerance, NaN/Inf, or all zero against a non-zero reference."""
    REWARD_HACK = "REWARD_HACK"
    """Caught gaming the measurement: mutated inputs, no GPU work, harness tampering, forged results."""
    INVALID_REFERENCE = "INVALID_REFERENCE"
    """The reference itself failed or produced NaN/Inf; no candidate can be judged against it."""
    INCUMBENT_FAILED = "INCUMBENT_FAILED"
    """The incumbent (code judged correct before) failed beside this candidate: nothing is known of the
    candidate. A campaign judges the incumbent again without it to tell whose failure it was (campaign/disqualify.py)."""


class Verdict(str, Enum):
    """The decision against the incumbent (the reference at first)."""

    KEEP = "KEEP"
    """Correct and faster than the incumbent by more than the margin and the measured noise."""
    ACCEPT = "ACCEPT"
    """Correct and within the near-best window, but not faster by the margin: a backup."""
    REVERT = "REVERT"
    """Correct but slower than the near-best window: go back to the incumbent."""
    REJECT = "REJECT"
    """Not correct, not built, not safe, or not measurable."""


class TimingMethod(str, Enum):
    """How the latency that decided was measured."""

    CUDA_EVENTS = "cuda_events"
    """Wall time per call: CUDA events around one call from an idle card, host overhead included (as
    KernelBench measures); a call whose work leaves the launching stream is synchronized before the
    end event."""
    CUPTI = "cupti"
    """Device time per call: kernel spans over all streams from the CUDA profiler (CUPTI), first
    kernel start to last kernel end, gaps included (as SOL-ExecBench measures)."""
    CPU_WALL = "cpu_wall"
    """Host wall clock on the CPU, on the judge's side: right for tests and ranking there, never a GPU speed claim."""


class Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class KernelShare(Frozen):
    """One GPU kernel (or copy, or memset) of a side's calls, as the device pass's profiler saw it."""

    name: str
    """The kernel's name as the profiler reports it (clipped; the side's own word, shown, never trusted)."""
    ms_per_call: float
    """Its device time per call, summed over its launches."""
    launches_per_call: float
    share: float
    """Its part of the reported kernels' time (each block reports its costliest few, not all)."""


class WorkloadResult(Frozen):
    """What happened on one workload."""

    uuid: str
    """The workload's id."""
    status: Status
    """PASSED, or the first failure on this workload."""
    latency_ms: float | None = None
    """Median candidate latency (p50)."""
    incumbent_ms: float | None = None
    """Median incumbent latency, timed interleaved with the candidate."""
    spread: float | None = None
    """Relative spread of the candidate's timings, (p80 - p20) / p50."""
    incumbent_spread: float | None = None
    """Relative spread of the incumbent's timings."""
    paired_speedup: float | None = None
    """Median over the wall pass's ABBA pairs of blocks of incumbent / candidate, where the wall time decided
    and there were enough pairs (guard/verdict.py `MIN_PAIRS`): the speedup with the host's drift cancelled."""
    paired_spread: float | None = None
    """Relative spread (p80 - p20) / p50 of those per-pair ratios: the noise a paired speedup must beat."""
    paired_low: float | None = None
    """The 20th percentile of those per-pair ratios: a KEEP needs it above 1, four pairs in five in the
    candidate's favour (guard/verdict.py)."""
    pairs: int | None = None
    """How many pairs of blocks the paired figures rest on."""
    wall_ms: float | None = None
    """Median wall time per call of the candidate (CUDA events, or the judge's clock on the CPU)."""
    incumbent_wall_ms: float | None = None
    device_ms: float | None = None
    """Median device time per call of the candidate (kernel spans), on CUDA."""
    incumbent_device_ms: float | None = None
    iterations: int | None = None
    """Timed calls of each side for the latency that decided (wall time: more for short calls on CUDA;
    guard/settings.py, `pass_iterations`)."""
    sol_ms: float | None = None
    """Speed-of-light time of this workload on this device, when known."""
    max_abs_error: float | None = None
    """Largest |candidate - reference| over all rounds and outputs."""
    max_rel_error: float | None = None
    """Largest |candidate - reference| / |reference| over all rounds and outputs (elements with reference 0 skipped)."""
    kernels: tuple[KernelShare, ...] = ()
    """The candidate's costliest kernels per call, from the device pass (CUDA only): what the agents are
    told of an incumbent's profile (issue 16)."""
    incumbent_kernels: tuple[KernelShare, ...] = ()
    message: str = ""
    """One line on what went wrong, empty when PASSED."""


class Evaluation(Frozen):
    """The guard's full answer for one candidate against one incumbent."""

    verdict: Verdict
    status: Status
    reason: str
    """One line a person understands: why this verdict."""
    correct: bool
    latency_ms: float | None = None
    """Geometric mean of per-workload candidate medians."""
    incumbent_ms: float | None = None
    """Geometric mean of per-workload incumbent medians."""
    speedup: float | None = None
    """The geometric mean of per-workload speedups (each the paired one where there is one, else
    incumbent / candidate medians); without paired figures, incumbent_ms / latency_ms."""
    noise: float | None = None
    """Largest relative spread seen on either side; KEEP needs a speedup beyond it."""
    sol_ms: float | None = None
    """Geometric mean of per-workload SOL times, when known."""
    sol_score: float | None = None
    """Mean SOL score over workloads (SOL-ExecBench's formula, baseline = the reference), when known."""
    timing: TimingMethod | None = None
    """How the deciding latency was measured."""
    basis: str | None = None
    """Which latency decided: `device` (kernel spans) or `wall` (per call, host overhead included)."""
    device_ms: float | None = None
    """Geometric mean over workloads of the candidate's device time, on CUDA."""
    incumbent_device_ms: float | None = None
    wall_ms: float | None = None
    """Geometric mean over workloads of the candidate's wall time per call."""
    incumbent_wall_ms: float | None = None
    device: str
    """Device name, for example `NVIDIA H200` or `cpu`."""
    workloads: tuple[WorkloadResult, ...] = ()
    compile_s: float | None = None
    """Seconds spent importing and building the candidate."""
    builds_restored: tuple[str, ...] = ()
    """Extension builds the candidate loaded from the build cache instead of building them in this
    evaluation (made ahead by `Judge.prebuild`, or kept from an earlier evaluation of the same code)."""
    compiled_restored: int = 0
    """Files of compiler caches (Triton's, Inductor's) copied into the candidate's side before it ran: its
    kernels compiled ahead (`Judge.prebuild`) or kept from an earlier evaluation of the same code."""
    wall_s: float | None = None
    """Seconds the whole evaluation took."""
    stage_seconds: dict[str, float] = Field(default_factory=dict)
    """Seconds the worker spent per stage (reference, compile, correctness, timing)."""
    request_seconds: dict[str, tuple[int, float]] = Field(default_factory=dict)
    """Requests and seconds per side and kind of request (`candidate time/device`), judge-clocked: where the
    stages' time went."""
    log_tail: str = ""
    """The end of the worker's stdout/stderr (compiler errors, tracebacks), trimmed."""
    static_rule: str | None = None
    """For STATIC_REJECT: the gate rule that fired."""
    static_line: int | None = None
    """For STATIC_REJECT: the source line."""
    node: str | None = None
    """Where a cluster ran it (`--executor ray`): `<Ray node id>/gpu<N>` or `<Ray node id>/cpu`; None
    when this machine judged it."""

    @model_validator(mode="after")
    def _validate_consistency(self) -> "Evaluation":
        if self.verdict is Verdict.REJECT:
            if self.status is Status.PASSED:
                raise ValueError("a REJECT cannot have status PASSED")
            if self.speedup is not None:
                raise ValueError(f"a REJECT carries no timing, got speedup={self.speedup}")
        else:
            if self.status is not Status.PASSED:
                raise ValueError(f"verdict {self.verdict.value} needs status PASSED, got {self.status.value}")
            if self.latency_ms is None or self.speedup is None or self.timing is None:
                raise ValueError("a benchmarked verdict needs latency_ms, speedup and timing")
        if self.correct != (self.status is Status.PASSED):
            raise ValueError(f"correct={self.correct} contradicts status {self.status.value}")
        return self

    def to_json_dict(self) -> dict:
        """The `kernelarc eval --json` object."""
        return self.model_dump(mode="json")


__all__ = ["Status", "Verdict", "TimingMethod", "KernelShare", "WorkloadResult", "Evaluation"]
