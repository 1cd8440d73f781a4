"""The campaign's repeat consistency (campaign/summary.py `timing_consistency`), on recorded evaluations: the
same code timed in several evaluations, its wall time moved by the host and its device time not, as host-bound
calls read on the card (docs/benchmarks.md, session 11)."""

from __future__ import annotations

import pytest

from kernelarc.campaign.summary import Finals, timing_consistency
from kernelarc.guard.types import Evaluation, Status, TimingMethod, Verdict

from memory.factories import open_campaign, propose, reject


def timed(wall_ms: float, device_ms: float, incumbent_wall_ms: float, incumbent_device_ms: float) -> Evaluation:
    """An ACCEPT on the card whose wall time decided."""
    return Evaluation(verdict=Verdict.ACCEPT, status=Status.PASSED, reason="within noise", correct=True,
                      latency_ms=wall_ms, incumbent_ms=incumbent_wall_ms, speedup=incumbent_wall_ms / wall_ms,
                      timing=TimingMethod.CUDA_EVENTS, basis="wall", device="cuda:0", wall_ms=wall_ms,
                      device_ms=device_ms, incumbent_wall_ms=incumbent_wall_ms, incumbent_device_ms=incumbent_device_ms)


def test_each_clock_has_its_own_spread_and_the_deciding_one_is_the_headline(tmp_path):
    store = open_campaign(tmp_path / "campaign.db")
    eager = propose(store, 0, agent_id=None, strategy="baseline", claim="baseline: eager")
    store.record_verdict(eager, timed(0.100, 0.050, 0.100, 0.050), against_incumbent_id=None)  # the reference's times count as eager's
    first = propose(store, 1)
    store.record_verdict(first, timed(0.090, 0.040, 0.140, 0.051), against_incumbent_id=eager)  # eager's wall moved
    store.record_verdict(propose(store, 2), reject(), against_incumbent_id=eager)  # a failed evaluation times nobody
    small = propose(store, 3)
    store.record_verdict(small, timed(0.030, 0.010, 0.100, 0.050), against_incumbent_id=None)  # eager's again
    store.record_verdict(propose(store, 4), timed(0.5, 0.5, 0.100, 0.041), against_incumbent_id=first)
    store.record_verdict(propose(store, 5), timed(0.5, 0.5, 0.033, 0.015), against_incumbent_id=small)

    got = timing_consistency(store, Finals(), {"eager": eager})

    eager_wall, first_wall, small_wall = 0.040 / 0.100, 0.010 / 0.095, 0.003 / 0.0315
    assert got["by_clock"]["wall"] == {"candidates": 3, "median_spread": pytest.approx(first_wall),
                                       "p90_spread": pytest.approx(eager_wall), "min_ms": 0.02}
    assert small_wall < first_wall
    # small's device times (10 and 15 µs) are under the 20 µs floor: only eager and first count there
    eager_device, first_device = 0.001 / 0.050, 0.001 / 0.0405
    assert got["by_clock"]["device"] == {"candidates": 2, "median_spread": pytest.approx((eager_device + first_device) / 2),
                                         "p90_spread": pytest.approx(first_device), "min_ms": 0.02}
    # the headline is the latency that decided: the wall time here
    assert {k: got[k] for k in ("candidates", "median_spread", "p90_spread", "min_ms")} == got["by_clock"]["wall"]


def test_a_campaign_without_repeats_reports_none(tmp_path):
    """Without an eager baseline the reference's times count for nobody: one candidate timed once."""
    store = open_campaign(tmp_path / "campaign.db")
    store.record_verdict(propose(store, 0), timed(0.100, 0.050, 0.100, 0.050), against_incumbent_id=None)
    got = timing_consistency(store, Finals(), {})
    assert got["candidates"] == 0 and got["median_spread"] is None
    assert got["by_clock"]["device"]["candidates"] == got["by_clock"]["wall"]["candidates"] == 0
