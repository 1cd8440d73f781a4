"""A cutoff derived from another ends at the earlier of the two, and says why in the words of the one that came first."""

from __future__ import annotations

import time

import pytest

from kernelarc.guard.cutoff import Cutoff, EvaluationCut


def test_a_derived_cutoff_ends_at_its_own_time_when_that_comes_first():
    now = time.monotonic()
    campaign = Cutoff(now + 100, why="the time limit passed")
    round_cut = campaign.before(now - 1, "the reserve began")
    assert round_cut.at == now - 1 and round_cut.passed() and round_cut.why == "the reserve began"
    assert not campaign.passed()  # the campaign goes on: only the round's evaluations end
    with pytest.raises(EvaluationCut, match="the reserve began"):
        round_cut.check()
    assert round_cut.bound(now + 50) == now - 1


def test_the_parent_moved_to_now_cuts_the_derived_one_with_the_parents_words():
    now = time.monotonic()
    campaign = Cutoff(now + 100, why="the time limit passed")
    round_cut = campaign.before(now + 50, "the reserve began")
    assert not round_cut.passed() and round_cut.at == now + 50
    campaign.now("a second Ctrl-C")
    assert round_cut.passed() and round_cut.why == "a second Ctrl-C" and round_cut.at <= time.monotonic()


def test_a_cutoff_without_a_time_never_passes_and_a_derived_one_keeps_its_own():
    never = Cutoff()
    assert not never.passed() and never.bound(5.0) == 5.0
    later = never.before(time.monotonic() + 100, "the reserve began")
    assert not later.passed() and later.why == "the reserve began"
