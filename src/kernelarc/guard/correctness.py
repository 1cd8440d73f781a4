"""Output and input checks, run inside the worker (needs torch).

One compare function for every task format: exact `torch.Tensor` type, count, shape, dtype, NaN/Inf,
all-zero against a non-zero reference, then the elementwise tolerance rule
|x - y| <= atol + rtol * |y| with a required matched ratio and an optional error cap (SOL-ExecBench's).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from kernelarc.guard.types import Status
from kernelarc.task.model import Tolerance


@dataclass(frozen=True)
class OutputCheck:
    """The outcome of comparing one call's outputs with the reference's."""

    status: Status | None
    """None when every output matched; else the failure's status."""
    message: str = ""
    max_abs_error: float = 0.0
    max_rel_error: float = 0.0

    @property
    def ok(self) -> bool:
        return self.status is None


def check_outputs(actual: list, expected: list[torch.Tensor], tolerances: list[Tolerance]) -> OutputCheck:
    """Compare a candidate's outputs with the reference's, output by output.

    Args:
        actual: what the candidate returned (or wrote, for destination-passing calls), as a list.
        expected: the reference's outputs (any device), same order.
        tolerances: one per expected output.
    """
    if len(actual) != len(expected):
        return OutputCheck(Status.INCORRECT_SHAPE, f"returned {len(actual)} outputs, expected {len(expected)}")
    worst_abs = worst_rel = 0.0
    for i, (a, e, tol) in enumerate(zip(actual, expected, tolerances)):
        if type(a) is not torch.Tensor:
            if isinstance(a, torch.Tensor):
                return OutputCheck(Status.REWARD_HACK, f"output {i} is a tensor subclass {type(a).__name__}, not torch.Tensor")
            return OutputCheck(Status.INCORRECT_SHAPE, f"output {i} is {type(a).__name__}, expected torch.Tensor")
        if tuple(a.shape) != tuple(e.shape):
            return OutputCheck(Status.INCORRECT_SHAPE, f"output {i} has shape {tuple(a.shape)}, expected {tuple(e.shape)}")
        if a.dtype != e.dtype:
            return OutputCheck(Status.INCORRECT_DTYPE, f"output {i} has dtype {a.dtype}, expected {e.dtype}")
        check = compare_tensor(a, e, tol, index=i)
        if not check.ok:
            return check
        worst_abs = max(worst_abs, check.max_abs_error)
        worst_rel = max(worst_rel, check.max_rel_error)
    return OutputCheck(None, "", worst_abs, worst_rel)


COMPARE_CHUNK = 1 << 26
"""Elements compared at a time. Every temporary of the rule is this long (256 MiB in fp32), not the
output's length: a whole-output comparison of KernelBench level1 23's 4096 x 393216 softmax asked for
24 GiB more on the H200 (boolean indexing's int64 indices) and ended the evaluation in an internal error."""
NEAR_MISS_ULPS = 2
"""Failing elements within this many units in the last place of the output's dtype are rounding."""
NEAR_MISS_SHARE = 0.01
"""...when at most this share of the elements fail."""


@dataclass
class _Tally:
    """What the rule needs of one output, gathered chunk by chunk (every field combines across chunks)."""

    bad: int = 0
    """Candidate elements that are NaN or Inf (where the reference's are not the allowed -inf)."""
    first_bad: int | None = None
    reference_bad: bool = False
    any_actual: bool = False
    any_expected: bool = False
    failing: int = 0
    """Elements outside |x - y| <= atol + rtol * |y|."""
    max_abs: float = 0.0
    worst: int = 0
    """Flat index of the first element with the largest absolute error."""
    max_rel: float = 0.0
    failing_ulps: float = 0.0
    """The largest error of a failing element in units in the last place of the output's dtype."""

    def add(self, at: int, a: torch.Tensor, e: torch.Tensor, tol: Tolerance, bound_dtype: torch.dtype,
            dtype: torch.dtype) -> None:
        a_bad, e_bad = ~torch.isfinite(a), ~torch.isfinite(e)
        if tol.allow_negative_inf:
            both_neg_inf = (a == float("-inf")) & (e == float("-inf"))
            a_bad, e_bad = a_bad & ~both_neg_inf, e_bad & ~both_neg_inf
        bad = int(a_bad.sum())
        if bad and self.first_bad is None:
            self.first_bad = at + int(a_bad.nonzero()[0, 0])
        self.bad += bad
        self.reference_bad |= bool(e_bad.any())
        self.any_actual |= bool(a.any())
        self.any_expected |= bool(e.any())
        if self.bad or self.reference_bad:
            return  # the verdict is a NaN/Inf one: errors are not needed
        finite = torch.isfinite(e)
        diff = torch.where(finite, (a - e).abs(), torch.zeros_like(a))
        # |y| only where y is finite: an allowed -inf against -inf has no error, and rtol * inf is NaN at rtol 0
        bounded, scale = diff.to(bound_dtype), torch.where(finite, e.abs(), torch.zeros_like(e)).to(bound_dtype)
        failing = ~(bounded <= tol.atol + tol.rtol * scale)
        # Counted, not averaged: a mean of 440 M ones in fp32 on the H200 came out under 1.0, and a correct
        # output "failed" with no element out of tolerance (level2 90, session 16).
        n_failing = int(failing.sum())
        self.failing += n_failing
        chunk_max = float(diff.max())
        if chunk_max > self.max_abs:
            self.max_abs, self.worst = chunk_max, at + int(diff.argmax())  # argmax: the first of equal maxima
        nonzero = (e != 0) & finite
        rel = torch.where(nonzero, bounded / torch.where(nonzero, scale, 1), 0)
        self.max_rel = max(self.max_rel, float(rel.max()))
        if n_failing and dtype.is_floating_point:
            info = torch.finfo(dtype)
            ulp = info.eps * scale[failing].clamp_min(info.tiny)
            self.failing_ulps = max(self.failing_ulps, float((diff[failing] / ulp).max()))


def compare_tensor(actual: torch.Tensor, expected: torch.Tensor, tol: Tolerance, index: int = 0) -> OutputCheck:
    """The numerical rule for one output of matching shape and dtype, `COMPARE_CHUNK` elements at a time.

    Floats are compared in fp32 (fp64 kept); integers and bools in int64, so values past 2**24 that
    fp32 would round together still differ, with the tolerance bound taken in fp64.
    """
    if actual.numel() == 0:
        return OutputCheck(None)
    exact_kind = not (actual.is_floating_point() or actual.is_complex())
    device = actual.device  # compared where the candidate's output lives: on a GPU, gigabytes compare in ms
    work = torch.int64 if exact_kind else torch.float64 if actual.dtype == torch.float64 else torch.float32
    bound_dtype = torch.float64 if exact_kind else work
    flat_a, flat_e = actual.detach().reshape(-1), expected.detach().reshape(-1)
    tally = _Tally()
    for at in range(0, flat_a.numel(), COMPARE_CHUNK):
        tally.add(at, flat_a[at:at + COMPARE_CHUNK].to(device, work), flat_e[at:at + COMPARE_CHUNK].to(device, work),
                  tol, bound_dtype, actual.dtype)
    shape = tuple(actual.shape)
    if tally.bad:
        return OutputCheck(Status.INCORRECT_NUMERICAL, f"output {index} has {tally.bad} NaN/Inf values "
                                                       f"(first at {_position(tally.first_bad, shape)})")
    if tally.reference_bad:  # validated earlier; kept so a bad reference can never pass a candidate
        return OutputCheck(Status.INVALID_REFERENCE, f"reference output {index} has NaN/Inf values")
    if not tally.any_actual and tally.any_expected:
        return OutputCheck(Status.INCORRECT_NUMERICAL, f"output {index} is all zeros but the reference is not")
    ratio = 1.0 - tally.failing / actual.numel()
    max_abs, max_rel = tally.max_abs, tally.max_rel
    if ratio < tol.required_matched_ratio:
        return OutputCheck(
            Status.INCORRECT_NUMERICAL,
            f"output {index}: {100 * (1 - ratio):.3g}% of elements out of tolerance "
            f"(atol={tol.atol:g}, rtol={tol.rtol:g}); max abs error {max_abs:.3g} at {_position(tally.worst, shape)}"
            + _near_miss(tally, actual.dtype, actual.numel()),
            max_abs, max_rel,
        )
    if tol.max_error_cap is not None and max_abs > tol.max_error_cap:
        return OutputCheck(Status.INCORRECT_NUMERICAL,
                           f"output {index}: max abs error {max_abs:.3g} exceeds the cap {tol.max_error_cap:g}",
                           max_abs, max_rel)
    return OutputCheck(None, "", max_abs, max_rel)


def _position(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    """The multi-dimensional index of flat index `flat` in a contiguous tensor of `shape`."""
    return tuple(int(i) for i in torch.unravel_index(torch.tensor(flat), shape))


def _near_miss(tally: _Tally, dtype: torch.dtype, numel: int) -> str:
    """A sentence saying so when every failing element is off by rounding in the output's own dtype."""
    if not dtype.is_floating_point or not tally.failing or tally.failing > NEAR_MISS_SHARE * numel:
        return ""
    if tally.failing_ulps > NEAR_MISS_ULPS:
        return ""
    name = str(dtype).removeprefix("torch.")
    return (f"; a near miss: {tally.failing} element(s) off by at most {tally.failing_ulps:.2g} ulp of {name} "
            "(rounding, not a wrong kernel): a task tolerance or --atol/--rtol can accept it")


def snapshot(values: list) -> list:
    """Copies of the tensor arguments, to prove afterwards that the candidate left its inputs alone."""
    return [v.detach().clone() if isinstance(v, torch.Tensor) else v for v in values]


def inputs_unchanged(before: list, after: list) -> str | None:
    """None if every input tensor still equals its snapshot (NaN where NaN was); else which one changed."""
    for i, (b, a) in enumerate(zip(before, after)):
        if isinstance(b, torch.Tensor) and not _same_tensor(b, a.detach()):
            return f"input {i} was modified by the candidate"
    return None


def _same_tensor(before: torch.Tensor, after: torch.Tensor) -> bool:
    if before.shape != after.shape or before.dtype != after.dtype:
        return False
    if before.is_floating_point() or before.is_complex():
        return bool(((before == after) | (before.isnan() & after.isnan())).all())
    return torch.equal(before, after)


def poison_value(dtype: torch.dtype) -> float | int | bool:
    """What an unwritten output must read as: NaN for floats, the max value for integers."""
    if dtype.is_floating_point or dtype.is_complex:
        return float("nan")
    if dtype == torch.bool:
        return True
    return torch.iinfo(dtype).max


def poisoned_like(shape: tuple[int, ...], dtype: torch.dtype, device: torch.device) -> torch.Tensor:
    """A new tensor filled with the poison value: destination outputs start like this."""
    return torch.full(shape, poison_value(dtype), dtype=dtype, device=device)


def poison_allocator(specs: list[tuple[tuple[int, ...], torch.dtype]], device: torch.device, copies: int = 2) -> None:
    """Leave poisoned blocks of each output's size (`(shape, dtype)` per output) in the allocator's free pool.

    A candidate that returns `torch.empty(...)` hoping to find a stale result there (its own earlier
    output for other inputs) finds NaN instead: the caching allocator hands the most recently freed
    block of that size out first.
    """
    blocks = [poisoned_like(shape, dtype, device) for shape, dtype in specs for _ in range(copies)]
    del blocks


__all__ = ["OutputCheck", "check_outputs", "compare_tensor", "snapshot", "inputs_unchanged",
           "poison_value", "poisoned_like", "poison_allocator"]
