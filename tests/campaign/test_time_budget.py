"""Under a time limit, a round holds only the candidates that can be judged before the final timings."""

from __future__ import annotations

import time

from kernelarc.agents import ScriptedAgent
from kernelarc.campaign import AgentSlot, Campaign
from kernelarc.campaign.executor import LocalExecutor
from kernelarc.campaign.options import StopReason
from kernelarc.guard import GuardSettings
from kernelarc.memory import Store
from kernelarc.memory.records import CampaignMeta
from kernelarc.strategies import get_strategy
from kernelarc.task.loader import load_task

from campaign.runs import SLOW_SUM, options
from memory.factories import keep, propose


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
