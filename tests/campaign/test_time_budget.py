"""Under a time limit, a round holds only the candidates that can be judged before the final timings."""

from __future__ import annotations

import asyncio
import time

import pytest

from kernelarc.agents import ScriptedAgent
from kernelarc.campaign import AgentSlot, Campaign
from kernelarc.campaign.executor import LocalExecutor
from kernelarc.campaign.loop import FINALS_CUT_S, FINALS_MARGIN
from kernelarc.campaign.options import StopReason
from kernelarc.guard import GuardSettings
from kernelarc.guard.cutoff import EvaluationCut
from kernelarc.memory import Store
from kernelarc.memory.records import CampaignMeta
from kernelarc.strategies import get_strategy
from kernelarc.task.loader import load_task

from campaign.runs import SLOW_SUM, options
from memory.factories import accept, keep, propose


def _campaign(tmp_path, agents: int) -> Campaign:
    task = load_task(SLOW_SUM)
    store = Store(tmp_path / "c.sqlite")
    store.put_meta(CampaignMeta(task_name=task.name, task_path=str(task.path), kernel_type=task.kernel_type, seed=0))
    slots = []
    for i in range(agents):
        store.register_agent(f"a{i}", "reduction", "scripted")
        slots.append(AgentSlot(id=f"a{i}", index=i, strategy=get_strategy("reduction"), agent=ScriptedAgent()))
    return Campaign(task, options(time_limit_s=100), store, LocalExecutor(task, ["cpu"], GuardSettings()), slots, None)


def _judged(campaign: Campaign, n: int, wall_s: float) -> None:
    cid = propose(campaign.store, n, agent_id="a0", strategy="reduction")
    campaign.store.record_verdict(cid, keep().model_copy(update={"wall_s": wall_s}), against_incumbent_id=None)


def test_a_round_holds_as_many_agents_as_evaluations_fit_in_the_time_left_taking_turns(tmp_path):
    campaign = _campaign(tmp_path, agents=4)
    campaign._limit_at = time.monotonic() + 100  # what run() sets from the time limit
    assert [s.id for s in campaign._round_slots()] == ["a0", "a1", "a2", "a3"]  # nothing measured yet: all
    _judged(campaign, 1, wall_s=30.0)  # about 3 evaluations of 30 s fit in 100 s
    campaign.round = 1
    assert [s.id for s in campaign._round_slots()] == ["a0", "a1", "a2"]
    campaign.round = 2
    assert [s.id for s in campaign._round_slots()] == ["a1", "a2", "a3"]  # the next round starts one further
    assert campaign._stop_reason() is None


def test_no_round_starts_when_not_one_evaluation_fits_before_the_limit(tmp_path):
    campaign = _campaign(tmp_path, agents=2)
    campaign._limit_at = time.monotonic() + 100
    _judged(campaign, 1, wall_s=120.0)
    assert campaign._stop_reason() is StopReason.TIME_LIMIT
    campaign._limit_at = None  # no time limit: every active agent, whatever the evaluations take
    assert len(campaign._round_slots()) == 2 and campaign._stop_reason() is None


def _baseline(campaign: Campaign, n: int, name: str, wall_s: float, reference_s: float) -> int:
    cid = propose(campaign.store, n, agent_id=None, strategy="baseline", claim=f"baseline: {name}")
    timed = accept().model_copy(update={"wall_s": wall_s, "stage_seconds": {"reference": reference_s, "timing": 1.0}})
    campaign.store.record_verdict(cid, timed, against_incumbent_id=None)
    campaign.baselines[name] = cid
    return cid


def test_the_finals_reserve_counts_the_leader_and_each_baseline_it_will_be_timed_against(tmp_path):
    campaign = _campaign(tmp_path, agents=1)
    _baseline(campaign, 1, "eager", wall_s=14.0, reference_s=12.0)  # the reference's set-up is not paid again
    _baseline(campaign, 2, "torch.compile", wall_s=5.0, reference_s=0.0)
    leader = propose(campaign.store, 3, agent_id="a0", strategy="reduction")
    campaign.store.record_verdict(leader, keep(speedup=9.0).model_copy(update={"wall_s": 8.0}), against_incumbent_id=None)
    assert campaign.leader().candidate_id == leader
    assert campaign.finals_reserve_s() == pytest.approx(FINALS_MARGIN * ((8.0 + 2.0) + (8.0 + 5.0)) + FINALS_CUT_S)


def test_a_leading_baseline_counts_as_an_opponent_since_the_round_may_displace_it(tmp_path):
    """torch.compile leads before the round: a candidate of the round that takes the lead faces both baselines
    (session 35, H100: a reserve of one opponent cut cross_entropy_vocab's finals, 17 s left for 35 s of them)."""
    campaign = _campaign(tmp_path, agents=1)
    _baseline(campaign, 1, "eager", wall_s=6.0, reference_s=0.0)
    compiled = propose(campaign.store, 2, agent_id=None, strategy="baseline", claim="baseline: torch.compile")
    campaign.store.record_verdict(compiled, keep(speedup=5.0).model_copy(update={"wall_s": 7.0}), against_incumbent_id=None)
    campaign.baselines["torch.compile"] = compiled
    assert campaign.leader().candidate_id == compiled
    assert campaign.finals_reserve_s() == pytest.approx(FINALS_MARGIN * ((7.0 + 6.0) + (7.0 + 7.0)) + FINALS_CUT_S)


def test_a_round_leaves_room_for_the_last_rounds_proposal_time(tmp_path):
    campaign = _campaign(tmp_path, agents=4)
    campaign._limit_at = time.monotonic() + 100
    _judged(campaign, 1, wall_s=10.0)
    campaign.round = 1
    assert len(campaign._round_slots()) == 4
    campaign._proposing_s = 75.0  # an agent that thinks for 75 s (an LLM): two evaluations fit after it
    assert len(campaign._round_slots()) == 2
    campaign._proposing_s = 95.0
    assert campaign._stop_reason() is StopReason.TIME_LIMIT


def test_a_rounds_evaluations_are_cut_where_the_finals_reserve_begins(tmp_path):
    """One slow candidate in a round sized on the median must not eat the leader's final timings."""
    campaign = _campaign(tmp_path, agents=1)
    assert campaign._round_cutoff() is campaign.cutoff  # no time limit: the campaign's own cutoff
    campaign._limit_at = time.monotonic() + 100
    assert campaign._round_cutoff() is campaign.cutoff  # nothing measured: no reserve yet
    _baseline(campaign, 1, "eager", wall_s=6.0, reference_s=0.0)
    leader = propose(campaign.store, 2, agent_id="a0", strategy="reduction")
    campaign.store.record_verdict(leader, keep(speedup=2.0).model_copy(update={"wall_s": 8.0}), against_incumbent_id=None)
    cutoff = campaign._round_cutoff()
    assert cutoff.at == pytest.approx(campaign._limit_at - FINALS_MARGIN * (8.0 + 6.0) - FINALS_CUT_S)
    assert "the final timings' reserve" in cutoff.why
    campaign.cutoff.now("a second Ctrl-C")  # still cut at once by the campaign's own
    assert cutoff.passed() and cutoff.why == "a second Ctrl-C"


class _CutSecond:
    """An executor whose second final timing is cut by the time limit, as on the H200 (2026-12-04)."""

    def __init__(self, executor):
        self.devices, self.calls, self._executor = executor.devices, [], executor

    async def evaluate(self, candidate, incumbent, **kw):
        self.calls.append(incumbent.name)
        if len(self.calls) > 1:
            raise EvaluationCut("the time limit (130 s) passed")
        return keep(speedup=2.0)


def test_a_final_timing_cut_by_the_limit_keeps_the_ones_already_timed(tmp_path):
    from kernelarc.campaign.summary import final_measurements
    from kernelarc.cli.progress import winner_lines

    campaign = _campaign(tmp_path, agents=1)
    _baseline(campaign, 1, "eager", wall_s=6.0, reference_s=0.0)
    _baseline(campaign, 2, "torch.compile", wall_s=5.0, reference_s=0.0)
    leader = propose(campaign.store, 3, agent_id="a0", strategy="reduction")
    campaign.store.record_verdict(leader, keep(speedup=2.5), against_incumbent_id=None)
    campaign.executor = _CutSecond(campaign.executor)
    campaign._limit_at = time.monotonic() + 20
    finals = asyncio.run(final_measurements(campaign))
    assert finals.seconds is not None and 0 < finals.left_s <= 20  # how the reserve held, in summary.json
    assert finals.reserve_s == pytest.approx(FINALS_MARGIN * ((6.0 + 6.0) + (6.0 + 5.0)) + FINALS_CUT_S, abs=1e-3)
    assert len(campaign.executor.calls) == 2 and finals.winner.candidate_id == leader
    assert list(finals.against) == ["eager"] and finals.against["eager"].speedup == 2.0
    assert finals.timed == "cut before the one against torch.compile: the time limit (130 s) passed"
    best = {"candidate_id": leader, "agent": "a0", "strategy": "reduction", "baseline": None, "final_timing": finals.timed,
            "speedup_vs_reference_chained": 2.5, "head_to_head": {"eager": {
                "speedup": 2.0, "candidate_ms": 0.5, "baseline_ms": 1.0, "verdict": "KEEP", "timing": "cpu_wall",
                "basis": "wall"}}}
    lines = winner_lines(best)
    assert any(line.startswith("2.000x vs eager") for line in lines)
    assert any("the other final timings: cut before the one against torch.compile" in line for line in lines)


class _Overlapping:
    """An executor whose evaluations take a while, recording when each began and ended."""

    def __init__(self, executor):
        self.devices, self.events = executor.devices, []

    async def evaluate(self, candidate, incumbent, **kw):
        self.events.append(("began", incumbent.name))
        await asyncio.sleep(0.05)
        self.events.append(("ended", incumbent.name))
        return keep(speedup=2.0)


def test_the_next_final_is_submitted_before_the_one_before_it_ends(tmp_path):
    """Its build and its sides' start-up (7.7-12.2 s on an H100) then run while the one before it is timed; the
    device lock still times one at a time (LocalExecutor)."""
    from kernelarc.campaign.summary import final_measurements

    campaign = _campaign(tmp_path, agents=1)
    _baseline(campaign, 1, "eager", wall_s=6.0, reference_s=0.0)
    _baseline(campaign, 2, "torch.compile", wall_s=5.0, reference_s=0.0)
    leader = propose(campaign.store, 3, agent_id="a0", strategy="reduction")
    campaign.store.record_verdict(leader, keep(speedup=2.5), against_incumbent_id=None)
    campaign.executor = _Overlapping(campaign.executor)
    finals = asyncio.run(final_measurements(campaign))
    assert finals.timed == "measured" and list(finals.against) == ["eager", "torch.compile"]
    assert [kind for kind, _ in campaign.executor.events] == ["began", "began", "ended", "ended"]


class _BeatenThenCut:
    """Eager beats the leader head to head; the time limit then cuts eager's own confirming head-to-heads."""

    def __init__(self, executor):
        self.devices, self.calls = executor.devices, []

    async def evaluate(self, candidate, incumbent, **kw):
        self.calls.append((candidate.name, incumbent.name))
        if len(self.calls) > 2:
            raise EvaluationCut("the time limit (130 s) passed")
        return keep(speedup=0.8 if len(self.calls) == 1 else 1.3)


def test_a_cut_while_confirming_a_baseline_that_beat_the_leader_keeps_the_leader_and_what_it_lost(tmp_path):
    from kernelarc.campaign.summary import final_measurements

    campaign = _campaign(tmp_path, agents=1)
    _baseline(campaign, 1, "eager", wall_s=6.0, reference_s=0.0)
    _baseline(campaign, 2, "torch.compile", wall_s=5.0, reference_s=0.0)
    leader = propose(campaign.store, 3, agent_id="a0", strategy="reduction")
    campaign.store.record_verdict(leader, keep(speedup=2.5), against_incumbent_id=None)
    campaign.executor = _BeatenThenCut(campaign.executor)
    finals = asyncio.run(final_measurements(campaign))
    assert len(campaign.executor.calls) == 3 and finals.winner.candidate_id == leader and finals.displaced is None
    assert list(finals.against) == ["eager", "torch.compile"] and finals.against["eager"].speedup == 0.8
    assert finals.timed == "cut: the time limit (130 s) passed (while timing the eager baseline that beat it)"
