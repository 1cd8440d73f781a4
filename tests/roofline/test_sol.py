"""The SOL score: SOL-ExecBench's formula, never above 1.0 where a kernel meets a measured ceiling."""

from __future__ import annotations

import pytest

from kernelarc.roofline.sol import sol_score


@pytest.mark.parametrize(("kernel_ms", "baseline_ms", "expected"), [
    (0.2, 0.2, 0.5),        # the baseline's own time
    (0.1, 0.2, 1.0),        # at the speed of light
    (0.15, 0.2, 2 / 3),
    (0.4, 0.2, 0.25),       # slower than the baseline
])
def test_the_official_formula_wherever_the_kernel_is_slower_than_sol(kernel_ms, baseline_ms, expected):
    assert sol_score(kernel_ms, baseline_ms, 0.1) == pytest.approx(expected)


def test_a_kernel_under_a_measured_ceiling_scores_one_not_more():
    """Session 35 (H100, softmax_fp32): the winner 0.1793 ms, SOL 0.1796 ms, the baseline 0.1803 ms: the raw
    formula gives 2.0 there, and more the nearer the baseline comes to the ceiling."""
    assert sol_score(0.17928, 0.18029, 0.179616) == 1.0
    assert sol_score(0.17928, 0.17962, 0.179616) == 1.0


def test_a_baseline_at_or_under_sol_leaves_one_or_zero():
    assert sol_score(0.1, 0.09, 0.1) == 1.0
    assert sol_score(0.11, 0.09, 0.1) == 0.0
