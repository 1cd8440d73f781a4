"""What each side's reply must look like, checked before the judge uses any field of it.

A candidate controls everything its side sends: a field of the wrong type, an offset outside its
mailbox or a number that is not one must end the evaluation as a REWARD_HACK, never as an exception
in the judge. Imports without torch.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator


MAX_DIM = 1 << 48
"""No tensor dimension is larger (a byte count stays far inside 64 bits)."""
MAX_DIMS = 64
KERNELS_REPORTED = 5
"""Kernels a side reports of its device pass's profile, costliest first."""
KERNEL_NAME_CHARS = 160


class Reply(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class Described(Reply):
    """An output or input value as a side describes it (wire.describe, Mailbox.write)."""

    kind: Literal["tensor", "subclass", "other"]
    type: str | None = None
    dtype: str | None = None
    shape: Annotated[list[Annotated[int, Field(ge=0, le=MAX_DIM)]], Field(max_length=MAX_DIMS)] | None = None
    """Sizes as the side says them: a negative one (whose product still matched the byte count) crashed the
    judge's view of the mailbox until it was refused here, as did a size past 64 bits beside a zero one
    (fifth red-team pass)."""
    offset: int | None = Field(default=None, ge=0)
    nbytes: int | None = Field(default=None, ge=0)


class CallReply(Reply):
    """One call's outputs (and inputs after it), in the side's mailbox."""

    outputs: list[Described]
    inputs: list[Described] | None = None


class CallsReply(Reply):
    """Several calls' outputs (correctness rounds, audited timed calls), one entry per call asked for."""

    calls: list[CallReply]


class CheckedCall(Reply):
    """The reference side's comparison of one call: `status` None when it passed."""

    status: str | None = None
    message: str | None = None
    max_abs_error: float | None = None
    max_rel_error: float | None = None


class CheckReply(Reply):
    """The reference side's comparisons, in order, up to and including the first call that failed."""

    calls: list[CheckedCall]


class SpecsReply(Reply):
    """The reference side's description of a workload's outputs and tensor inputs."""

    outputs: list[Described]
    inputs: list[Described] = []
    """Each tensor input's dtype and shape, in call order: what a call handed back "after the call" must be."""
    input_bytes: int = Field(ge=0)
    init_on_device: bool | None = None
    """Where the reference drew a KernelBench module's weights (task/runtime.py): the other sides do the same."""


class StageReply(Reply):
    """The reference side's inputs of a timed block: per call, per input, `{"tensor": Described}` in its
    mailbox, `{"value": ...}` or `{"tuple": [...]}`; None where some input cannot travel so."""

    inputs: list[list[dict]] | None


HOST_GAP_MS = 0.005
"""An idle gap between a call's GPU activities longer than this is the host's: the card starts a queued
kernel within 1-2 us of the last one's end, a launch that the host has not made yet waits. Under the
profiler such gaps grow by the profiler's own cost per launch (a 256-step RNN loop of about 1,000 launches
spanned 43.3 ms profiled and took 27.9 ms of wall per call unprofiled on the H200, docs/benchmarks.md
session 20), so a floor under the wall time leaves them out."""


class TimeReply(Reply):
    """A timed block: one sample per call, and on CUDA's device pass what the profiler saw."""

    samples_ms: list[float]
    kernels: list[int] = []
    longest_ms: list[float] = []
    busy_ms: list[float] = []
    """Each call's kernel span less its idle gaps over HOST_GAP_MS (the floor under its wall time)."""
    side_streams: bool = False
    annotated: bool = False
    """The block was profiled with each call marked on the host (the call synchronized the device itself):
    its spans hold the host's tracing too, so they bound nothing (guard/timing.py)."""
    kernel_ms: dict[str, list[float]] = {}
    """The block's costliest kernels: name -> [total ms, launches] (shown to agents, never judged)."""
    calls: list[CallReply] | None = None

    @field_validator("samples_ms", "longest_ms", "busy_ms")
    @classmethod
    def _finite(cls, v: list[float]) -> list[float]:
        if not all(math.isfinite(x) and x >= 0 for x in v):
            raise ValueError("times must be finite and not negative")
        return v

    @field_validator("kernel_ms")
    @classmethod
    def _profile(cls, v: dict[str, list[float]]) -> dict[str, list[float]]:
        if len(v) > KERNELS_REPORTED or any(len(name) > KERNEL_NAME_CHARS for name in v):
            raise ValueError(f"at most {KERNELS_REPORTED} kernels of at most {KERNEL_NAME_CHARS} characters")
        if not all(len(x) == 2 and all(math.isfinite(y) and y >= 0 for y in x) for x in v.values()):
            raise ValueError("each kernel needs [total ms, launches], finite and not negative")
        return v


__all__ = ["HOST_GAP_MS", "Reply", "Described", "CallReply", "CallsReply", "CheckedCall", "CheckReply", "SpecsReply", "StageReply", "TimeReply"]
