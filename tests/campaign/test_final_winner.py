"""The campaign's winner after the head-to-head timings against the baselines (campaign/summary.py).

The rule is tested on recorded evaluations: a real guard cannot be made to time a leader slower than
a baseline on demand. The campaigns of this package exercise the measurements themselves.
"""

from __future__ import annotations

from kernelarc.campaign.summary import faster_baseline, tie_goes_to_leader

from memory.factories import accept, keep, reject, revert

BASELINES = {"eager": 1, "compile": 2}


def test_a_leader_that_beats_every_baseline_stays_the_winner():
    assert faster_baseline(7, BASELINES, {"eager": keep(1.4), "compile": accept(1.01)}) is None


def test_a_baseline_faster_head_to_head_takes_over_even_within_noise():
    """swiglu_gate_up on the H200: torch.compile led on a noisy 1.01x, then timed 0.96x eager head to head."""
    assert faster_baseline(2, BASELINES, {"eager": accept(0.96), "compile": accept(1.0)}) == "eager"


def test_the_baseline_that_beat_the_leader_by_most_wins():
    assert faster_baseline(7, BASELINES, {"eager": revert(0.9), "compile": revert(0.7)}) == "compile"


def test_the_leader_against_itself_and_rejected_comparisons_are_ignored():
    assert faster_baseline(1, BASELINES, {"eager": accept(0.99), "compile": reject()}) is None


def test_a_challenge_the_next_comparison_contradicts_leaves_eager_the_winner():
    """An MLP on the H200: torch.compile beat the eager leader once, then timed 0.99x eager."""
    assert tie_goes_to_leader("eager", "torch.compile", {"eager": accept(0.991)})
    assert not tie_goes_to_leader("eager", "torch.compile", {"eager": accept(1.02)})  # confirmed: compile wins
    assert not tie_goes_to_leader("torch.compile", "eager", {"torch.compile": accept(0.99)})  # eager takes the tie


def test_an_agent_leader_beaten_by_a_baseline_is_not_a_tie():
    assert not tie_goes_to_leader(None, "eager", {"torch.compile": accept(0.9)})
    assert not tie_goes_to_leader("eager", "torch.compile", {"eager": reject()})
