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


def compare_tensor(actual: torch.Tensor, expected: torch.Tensor, tol: Tolerance, index: int = 0) -> OutputCheck:
    """The numerical rule for one output of matching shape and dtype.

    Floats are compared in fp32 (fp64 kept); integers and bools in int64, so values past 2**24 that
    fp32 would round together still differ, with the tolerance bound taken in fp64.
    """
    exact_kind = not (actual.is_floating_point() or actual.is_complex())
    device = actual.device  # compared where the candidate's output lives: on a GPU, gigabytes compare in ms
    if exact_kind:
        a = actual.detach().to(device, torch.int64)
    else:
        a = actual.detach().to(device, torch.float64 if actual.dtype == torch.float64 else torch.float32)
    e = expected.detach().to(device, a.dtype)
    bound_dtype = torch.float64 if exact_kind else a.dtype
    if a.numel() == 0:
        return OutputCheck(None)
    a_bad, e_bad = ~torch.isfinite(a), ~torch.isfinite(e)
    if tol.allow_negative_inf:
        both_neg_inf = (a == float("-inf")) & (e == float("-inf"))
        a_bad, e_bad = a_bad & ~both_neg_inf, e_bad & ~both_neg_inf
    if bool(a_bad.any()):
        n = int(a_bad.sum())
        first = tuple(int(x) for x in a_bad.nonzero()[0].tolist())
        return OutputCheck(Status.INCORRECT_NUMERICAL, f"output {index} has {n} NaN/Inf values (first at {first})")
    if bool(e_bad.any()):  # validated earlier; kept so a bad reference can never pass a candidate
        return OutputCheck(Status.INVALID_REFERENCE, f"reference output {index} has NaN/Inf values")
    if not bool(a.any()) and bool(e.any()):
        return OutputCheck(Status.INCORRECT_NUMERICAL, f"output {index} is all zeros but the reference is not")
    finite = torch.isfinite(e)
    diff = torch.where(finite, (a - e).abs(), torch.zeros_like(a))
    matched = diff.to(bound_dtype) <= tol.atol + tol.rtol * e.abs().to(bound_dtype)
    # Counted, not averaged: a mean of 440 M ones in fp32 on the H200 came out under 1.0, and a correct
    # output "failed" with no element out of tolerance (level2 90, session 16).
    ratio = 1.0 - int((~matched).sum()) / matched.numel()
    max_abs = float(diff.max())
    nonzero = (e != 0) & finite
    rel = diff[nonzero].to(bound_dtype) / e[nonzero].abs().to(bound_dtype)
    max_rel = float(rel.max()) if rel.numel() else 0.0
    if ratio < tol.required_matched_ratio:
        worst = tuple(int(x) for x in torch.nonzero(diff == diff.max())[0].tolist())
        return OutputCheck(
            Status.INCORRECT_NUMERICAL,
            f"output {index}: {100 * (1 - ratio):.3g}% of elements out of tolerance "
            f"(atol={tol.atol:g}, rtol={tol.rtol:g}); max abs error {max_abs:.3g} at {worst}"
            + _near_miss(diff, e, matched, actual.dtype, ratio),
            max_abs, max_rel,
        )
    if tol.max_error_cap is not None and max_abs > tol.max_error_cap:
        return OutputCheck(Status.INCORRECT_NUMERICAL,
                           f"output {index}: max abs error {max_abs:.3g} exceeds the cap {tol.max_error_cap:g}",
                           max_abs, max_rel)
    return OutputCheck(None, "", max_abs, max_rel)


NEAR_MISS_ULPS = 2
"""Failing elements within this many units in the last place of the output's dtype are rounding."""
NEAR_MISS_SHARE = 0.01
"""...when at most this share of the elements fail."""


def _near_miss(diff: torch.Tensor, expected: torch.Tensor, matched: torch.Tensor, dtype: torch.dtype,
               ratio: float) -> str:
    """A sentence saying so when every failing element is off by rounding in the output's own dtype."""
    failing = ~matched
    if not dtype.is_floating_point or 1 - ratio > NEAR_MISS_SHARE or not bool(failing.any()):
        return ""
    info = torch.finfo(dtype)
    ulp = info.eps * expected.abs()[failing].clamp_min(info.tiny)
    ulps = float((diff[failing] / ulp).max())
    if ulps > NEAR_MISS_ULPS:
        return ""
    name = str(dtype).removeprefix("torch.")
    return (f"; a near miss: {int(failing.sum())} element(s) off by at most {ulps:.2g} ulp of {name} (rounding, "
            "not a wrong kernel): a task tolerance or --atol/--rtol can accept it")


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
