"""The scripted test agent plays its script in order, records what it saw, and reflects deterministically."""

from __future__ import annotations

import asyncio

from kernelarc.agents import AgentContext, LeaderboardEntry, Proposal, ScriptedAgent, get_backend
from kernelarc.strategies import get_strategy

SOURCE = "import torch\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x.clamp(min=0)\n"


def proposal(claim: str) -> Proposal:
    return Proposal(source=SOURCE, claim=claim)


def propose_all(agent: ScriptedAgent, contexts: list[AgentContext]) -> list[Proposal | None]:
    async def run():
        return [await agent.propose(ctx) for ctx in contexts]

    return asyncio.run(run())


def test_steps_play_in_order_then_none(make_context):
    agent = ScriptedAgent([proposal("first"), proposal("second")])
    got = propose_all(agent, [make_context(step=i) for i in range(3)])
    assert [p.claim if p else None for p in got] == ["first", "second", None]


def test_enqueue_extends_an_exhausted_script(make_context):
    agent = ScriptedAgent()
    assert propose_all(agent, [make_context()]) == [None]
    agent.enqueue(proposal("late"))
    assert propose_all(agent, [make_context(step=1)])[0].claim == "late"


def test_callable_steps_see_the_context_and_may_stop(make_context):
    def react(ctx: AgentContext) -> Proposal:
        return Proposal(source=SOURCE, claim=f"draft={ctx.must_draft}", is_draft=ctx.must_draft)

    agent = ScriptedAgent([react, lambda ctx: None, proposal("never reached this turn")])
    got = propose_all(agent, [make_context(must_draft=True, draft_instruction="start over"), make_context(step=1)])
    assert got[0].claim == "draft=True" and got[0].is_draft
    assert got[1] is None


def test_every_context_is_recorded(make_context):
    entry = LeaderboardEntry(agent_id="a1", strategy="memory", candidate_id=9, speedup=2.0, latency_ms=0.5,
                             source=SOURCE)
    contexts = [make_context(), make_context(step=1, must_draft=True, draft_instruction="new", leaderboard=(entry,))]
    agent = ScriptedAgent([proposal("one")])
    propose_all(agent, contexts)
    assert agent.contexts == contexts
    assert [c.must_draft for c in agent.contexts] == [False, True]
    assert agent.contexts[1].leaderboard[0].agent_id == "a1"


def test_reflection_summarizes_the_verdict(make_context, keep_evaluation, reject_evaluation):
    agent = ScriptedAgent()
    ctx = make_context()
    kept = asyncio.run(agent.reflect(ctx, proposal("fused relu"), keep_evaluation))
    rejected = asyncio.run(agent.reflect(ctx, proposal("tf32 dot"), reject_evaluation))
    assert kept == "KEEP 1.5x for: fused relu"
    assert rejected == f"REJECT {reject_evaluation.reason} for: tf32 dot"


def test_reflection_is_capped(make_context, reject_evaluation):
    long_reason = reject_evaluation.model_copy(update={"reason": "compiler said " * 200})
    text = asyncio.run(ScriptedAgent().reflect(make_context(), proposal("big"), long_reason))
    assert len(text) <= 1200 and text.startswith("REJECT compiler said")


def test_scripted_backend_gives_each_agent_its_own_script(task, make_context):
    factory = get_backend("scripted")(steps=[proposal("only")])
    agents = [factory(f"a{i}", get_strategy("fusion"), task, i) for i in range(2)]
    assert [a.name for a in agents] == ["a0", "a1"]
    for agent in agents:
        assert [p.claim if p else None for p in propose_all(agent, [make_context(), make_context(step=1)])] == [
            "only", None]
