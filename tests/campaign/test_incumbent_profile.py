"""What the campaign tells an agent of its incumbent's profile: from the evaluation that judged the
incumbent, or for the reference from the latest evaluation timed against it (issue 16, item 5)."""

from __future__ import annotations

from kernelarc.agents import ScriptedAgent
from kernelarc.campaign import AgentSlot, Campaign
from kernelarc.campaign.executor import LocalExecutor
from kernelarc.guard import GuardSettings
from kernelarc.memory import Store
from kernelarc.memory.records import AgentState, CampaignMeta
from kernelarc.strategies import get_strategy
from kernelarc.task.loader import load_task

from campaign.runs import SLOW_SUM, options
from memory.factories import profiled, propose


def test_an_agent_is_shown_its_incumbents_profile_and_before_any_the_references(tmp_path):
    task = load_task(SLOW_SUM)
    store = Store(tmp_path / "c.sqlite")
    store.put_meta(CampaignMeta(task_name=task.name, task_path=str(task.path), kernel_type=task.kernel_type, seed=0))
    store.register_agent("a0", "reduction", "scripted")
    slot = AgentSlot(id="a0", index=0, strategy=get_strategy("reduction"), agent=ScriptedAgent())
    campaign = Campaign(task, options(), store, LocalExecutor(task, ["cpu"], GuardSettings()), [slot], None)
    assert campaign.context(slot).incumbent_profile is None  # nothing profiled yet (and never on the CPU)

    first = propose(store, 1, agent_id="a0", strategy="reduction")
    store.record_verdict(first, profiled(0.04, 0.13, incumbent_name="reduce_kernel"), against_incumbent_id=None)
    reference = campaign.context(slot).incumbent_profile
    assert reference.kernels[0].name == "reduce_kernel" and reference.device_ms == 0.5

    store.update_agent("a0", AgentState(incumbent_id=first, incumbent_speedup=4.6))
    mine = campaign.context(slot).incumbent_profile
    assert mine.kernels[0].name == "triton_red_fused_mean_pow_0" and mine.host_bound
