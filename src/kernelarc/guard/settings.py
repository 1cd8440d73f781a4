"""Knobs of one evaluation, with the defaults the guard uses. Imports without torch."""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class GuardSettings(BaseModel):
    """How hard and how long the guard looks at a candidate."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    rounds: int | None = Field(default=None, ge=1)
    """Correctness rounds per workload; None = the task's default (KernelBench 5, SOL-ExecBench 10)."""
    atol: float | None = Field(default=None, ge=0)
    """Override every output's absolute tolerance (KernelBench tasks; None = per-dtype default)."""
    rtol: float | None = Field(default=None, ge=0)
    """Override every output's relative tolerance."""
    matched_ratio: float | None = Field(default=None, gt=0, le=1)
    """Override the fraction of elements that must be within tolerance (None: the task's; 1 for KernelBench)."""
    warmup: int = Field(default=10, ge=1)
    """Untimed calls of each side before timing."""
    iterations: int = Field(default=50, ge=3)
    """Timed calls of each side per workload on CUDA at least (medians are taken over these)."""
    min_timed_s: float = Field(default=0.05, ge=0)
    """On CUDA a side's timed calls add up to at least this long: microsecond calls get more of them,
    so the median does not rest on a few milliseconds of a shared machine. Where only two calls fit a block (a
    256 MiB softmax: 160 calls in 80 blocks a side on the H100), capping a side at 20 blocks cut the timing stage
    from 1.6-1.9 s to 1.1 s, but in two softmax campaigns the wall-clock re-timings then spread 12-17% (median)
    against 6.5-6.7% in two without the cap, and no more candidates were judged: withdrawn (docs/benchmarks.md,
    session 40). Samples spread over more of the host's moments agree better across evaluations."""
    max_iterations: int = Field(default=1000, ge=3)
    """Cap on timed calls of each side per workload on CUDA."""
    device_iterations: int = Field(default=50, ge=2)
    """Profiled calls of each side per workload on CUDA for device time (SOL-ExecBench times 50)."""
    reported_iterations: int = Field(default=10, ge=2)
    """On CUDA, calls of each side per workload for the latency that does not decide (device time for a
    KernelBench file, wall time for a SOL-ExecBench task): reported, used by the checks (the kernel floor,
    side streams, bookkeeping), not judged on. The deciding one gets its full count. On the H200 the device
    pass of a KernelBench evaluation took 0.9 s of its 6 s at 50 calls (docs/benchmarks.md session 14)."""
    timing: Literal["auto", "device", "wall"] = "auto"
    """Which latency decides: device time (kernel spans, as SOL-ExecBench measures) or wall time per
    call (host overhead included, as KernelBench measures). `auto`: device for SOL-ExecBench tasks,
    wall for KernelBench files; on the CPU always the wall clock (`cpu_wall`)."""
    audits: int = Field(default=4, ge=1)
    """At least this many of the candidate's calls per workload and timing pass (profiled and wall-timed) have
    their outputs checked on CUDA, drawn after they ran; small calls get more (guard/session.py `audit_count`).
    On the CPU every timed call is checked."""
    clock_ramp_s: float = Field(default=0.2, ge=0)
    """Seconds of busy work on the card before timing, so no sample is taken at idle clocks (no
    clocks are locked: the machine's settings are not ours to change)."""
    block_load_s: float = Field(default=0.005, gt=0)
    """On CUDA, a timed block holds at most this many seconds of calls (guard/session.py MIN_BLOCK_CALLS at
    least), and the card rests `rest_ratio` times as long as it worked in the last timed request before each, so
    that a tensor-core kernel is never timed at the card's power limit.
    On the H100 (700 W) a 4096^3 bf16 GEMM read 0.170 ms for its first 40 ms of calls from idle, then 0.18-0.26 ms
    as the card held its limit (the clock swinging 1215-1980 MHz about once a second); in 5 ms blocks each after
    5-100 ms of rest it read 0.1756-0.1769 ms, back to back 0.190 ms (causal flash attention: 0.999-1.007 ms
    against 1.122 ms; a memory-bound softmax 0.0626 ms either way). Across a campaign the GEMM's eager time had
    spread 6-7% and a flash-attention kernel's 15-18% (docs/benchmarks.md, session 37); with these rests 2.3% / 4.5%
    (median / p90) and 11% p90 (session 38). No clock is locked: the machine's settings are not ours to change."""
    rest_ratio: float = Field(default=1.0, ge=0)
    """Idle time before each timed block on CUDA, as a share of the card's work in the last timed request (before a
    workload's first block: in both sides' warm-up requests; guard/session.py `Session.worked_s`)."""
    cooldown_s: float = Field(default=0.1, ge=0)
    """On CUDA, the longest rest before a timed block. After a second of back-to-back GEMMs at the power limit,
    100 ms of rest brought the next block within 1.2% of its settled time (H100, session 37)."""
    interference: float = Field(default=1.0, ge=0)
    """On CUDA, the incumbent's median beside the candidate may exceed its median before the candidate's
    first timed block by this share (plus the residual floor); beyond it the candidate's work overlapped
    the incumbent's timing (guard/session.py)."""
    residual_floor_ms: float = Field(default=0.02, ge=0)
    residual_ratio: float = Field(default=1.0, ge=0)
    residual_share: float = Field(default=0.1, ge=0)
    """On CUDA, a candidate's bookkeeping per timed call (judge's clock minus its samples) may differ
    from the incumbent's by at most floor + ratio * the incumbent's bookkeeping + share * the longer
    side's median latency; beyond it, time went outside the measured window (guard/session.py). A
    backstop for gross cheats: on the H200 honest sides differed by up to 0.1 ms per call on 0.4-0.9 ms
    of bookkeeping and by 0.3 ms beside a 6.8 ms GEMM, and on 2026-12-01 the reference's own code as a
    candidate by 0.256 ms on 0.416 ms (linear_backward: a false REWARD_HACK at ratio 0.5, hence 1.0;
    docs/benchmarks.md); the finer check of event samples is the kernel floor
    (session._check_kernel_floor), and device time (CUPTI) does not depend on this clock."""
    cpu_iterations: int = Field(default=7, ge=3)
    """Timed calls per side on the CPU, where calls are slow and timings only rank."""
    margin: float = Field(default=0.02, ge=0)
    """KEEP needs speedup > 1 + max(margin, noise)."""
    near_best_window: float = Field(default=0.05, ge=0)
    """ACCEPT when speedup >= 1 / (1 + max(window, noise)); REVERT below."""
    compile_timeout_s: float = Field(default=300.0, gt=0)
    """Import, build and first call of the candidate."""
    run_timeout_s: float = Field(default=300.0, gt=0)
    """Correctness rounds and timing together."""
    reference_timeout_s: float = Field(default=600.0, gt=0)
    """Computing reference outputs before the candidate is imported."""
    seed: int | None = None
    """Seed for the input seeds; None draws them from the OS so the candidate cannot predict them."""
    input_pool_bytes: int = Field(default=2 << 30, gt=0)
    """Device memory for the inputs, kept outputs and kept inputs after the call of one timed block: each call
    gets inputs drawn fresh for it, so a block holds as many calls as fit (at most 50)."""

    @staticmethod
    def deadlines(timeout_s: float | None) -> dict[str, float]:
        """The stage deadlines `--timeout SECONDS` sets: compile and run to it, the reference's to twice it
        (the defaults keep that ratio); nothing when None."""
        if timeout_s is None:
            return {}
        return {"compile_timeout_s": timeout_s, "run_timeout_s": timeout_s, "reference_timeout_s": 2 * timeout_s}

    def timed_iterations(self, on_cuda: bool, call_s: float = 0.0) -> int:
        """Timed calls per side on this kind of device, for calls taking about `call_s` seconds."""
        if not on_cuda:
            return self.cpu_iterations
        wanted = math.ceil(self.min_timed_s / call_s) if call_s > 0 else self.iterations
        return max(self.iterations, min(self.max_iterations, wanted))

    def pass_iterations(self, basis: str, call_s: float) -> tuple[int, int]:
        """On CUDA, (profiled calls, wall-clock calls) per side and workload when `basis` (`device` or
        `wall`) decides: the full count for that clock, `reported_iterations` for the other."""
        wall = self.timed_iterations(True, call_s)
        if basis == "device":
            return self.device_iterations, min(wall, self.reported_iterations)
        return min(self.device_iterations, self.reported_iterations), wall


__all__ = ["GuardSettings"]
