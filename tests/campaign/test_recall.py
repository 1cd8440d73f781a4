"""A later campaign recalls what earlier ones taught (the long-term memory), and nothing of it when fresh."""

from __future__ import annotations

import shutil

from kernelarc.agents import ScriptedAgent
from kernelarc.campaign import AgentSlot, Campaign
from kernelarc.campaign.executor import LocalExecutor
from kernelarc.guard import GuardSettings
from kernelarc.memory import LongTermMemory, Store
from kernelarc.memory.records import CampaignMeta
from kernelarc.strategies import get_strategy
from kernelarc.task.loader import load_task

from campaign.runs import SLOW_SUM, options


def test_a_later_campaign_recalls_the_long_term_memory_unless_fresh(tmp_path, monkeypatch, mixed):
    home = tmp_path / "home"
    shutil.copytree(mixed.home, home)
    monkeypatch.setenv("KERNELARC_HOME", str(home))
    task = load_task(SLOW_SUM)
    store = Store(tmp_path / "later.sqlite")
    store.put_meta(CampaignMeta(task_name=task.name, task_path=str(task.path), kernel_type=task.kernel_type, seed=0))
    store.register_agent("a0-reduction", "reduction", "scripted")
    slot = AgentSlot(id="a0-reduction", index=0, strategy=get_strategy("reduction"), agent=ScriptedAgent())
    executor = LocalExecutor(task, ["cpu"], GuardSettings())
    with LongTermMemory() as memory:
        learned = {(f.kind, f.candidate_hash) for f in memory.findings()}
        recalled = Campaign(task, options(), store, executor, [slot], memory).context(slot).findings
    assert learned and {(f.kind, f.candidate_hash) for f in recalled} == learned
    assert Campaign(task, options(), store, executor, [slot], None).context(slot).findings == ()
