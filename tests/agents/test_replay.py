"""Replay: a campaign's recorded calls, served again from its database with no model access."""

from __future__ import annotations

import asyncio

import pytest

from kernelarc.agents import get_backend
from kernelarc.agents.config import BackendConfig
from kernelarc.agents.llm import AgentStepFailed
from kernelarc.agents.openai import openai_factory
from kernelarc.agents.protocol import AgentExhausted
from kernelarc.agents.replay import RecordingEnded, ReplayExhausted, replay_factory
from kernelarc.agents.usage import Budget, MemoryRecorder, Recorders, StoreRecorder
from kernelarc.memory import Store
from kernelarc.memory.llm_calls import CallKind, calls
from kernelarc.strategies import get_strategy

from .servers import Failure, ScriptedServer, fenced, openai_server  # noqa: F401

SOURCE = "import torch\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x.clamp(min=0)\n"


def run_steps(agent, make_context, evaluation):
    """Step 0: garbage then a kernel, then a reflection. Step 1: a failed call."""

    async def steps():
        ctx = make_context(step=0)
        proposal = await agent.propose(ctx)
        reflection = await agent.reflect(ctx, proposal, evaluation)
        try:
            await agent.propose(make_context(step=1))
        except AgentStepFailed as e:
            return proposal, reflection, e.reason
        raise AssertionError("step 1 should fail")

    return asyncio.run(steps())


@pytest.fixture
def recorded(openai_server: ScriptedServer, make_context, keep_evaluation, tmp_path):
    """A campaign store holding a recorded run, and what that run produced."""
    store = Store(tmp_path / "campaign.sqlite")
    budget = Budget()
    config = BackendConfig.model_validate({"openai": {"base_url": openai_server.url, "model": "test-model",
                                                      "max_retries": 0},
                                           "prices": {"test-model": {"input": 2.0, "output": 8.0}}})
    agent = openai_factory(config, Recorders(StoreRecorder(store), budget), device="cpu")(
        "a0", get_strategy("fusion"), make_context().task, 0)
    openai_server.enqueue("no code here", fenced(SOURCE, "clamp"), "clamp is one pass", Failure(503, "down"))
    outcome = run_steps(agent, make_context, keep_evaluation)
    yield store, outcome, budget
    store.close()


def test_the_store_keeps_every_call_with_kind_latency_and_cost(recorded):
    store, _, budget = recorded
    stored = calls(store)
    assert [(c.step, c.kind) for c in stored] == [(0, CallKind.PROPOSE), (0, CallKind.PROPOSE), (0, CallKind.REFLECT),
                                                  (1, CallKind.PROPOSE)]
    assert stored[0].error.startswith("unusable reply") and stored[3].response is None and "down" in stored[3].error
    assert all(c.latency_s is not None and c.latency_s >= 0 for c in stored)
    assert [m["role"] for m in stored[1].messages] == ["system", "user", "assistant", "user"]
    assert Budget(stored).summary() == budget.summary()  # a resumed campaign's budget starts where it stopped


def test_replay_reproduces_the_run_without_a_server(recorded, make_context, keep_evaluation, openai_server):
    store, outcome, _ = recorded
    served_before = len(openai_server.requests)
    recorder = MemoryRecorder()
    agent = replay_factory(store.path, recorder, device="cpu")("a0", get_strategy("fusion"), make_context().task, 0)
    proposal, reflection, failure = run_steps(agent, make_context, keep_evaluation)
    assert (proposal, reflection) == outcome[:2]
    assert failure == "propose call to replay:campaign.sqlite failed: (replayed) " + outcome[2].split("failed: ")[1]
    assert len(openai_server.requests) == served_before
    assert [c.response for c in recorder.calls] == [c.response for c in calls(store)]
    assert all(c.cost_usd is None for c in recorder.calls)


def test_replay_says_when_the_recording_runs_out(recorded, make_context):
    store, _, _ = recorded
    agent = get_backend("replay")(store)("a0", get_strategy("fusion"), make_context().task, 0)
    # past the agent's last recorded step: the agent is done (the campaign retires it), not an error
    with pytest.raises(RecordingEnded, match="ends for agent 'a0' before step 2"):
        asyncio.run(agent.propose(make_context(step=2)))
    assert issubclass(RecordingEnded, AgentExhausted) and not issubclass(RecordingEnded, ReplayExhausted)
    # an agent the recorded run never had: the replay diverged, which the user must hear about
    other = replay_factory(store)("a9", get_strategy("fusion"), make_context().task, 0)
    with pytest.raises(ReplayExhausted, match="agent 'a9' at step 0"):
        asyncio.run(other.propose(make_context(agent_id="a9")))


def test_a_database_without_calls_cannot_be_replayed(tmp_path):
    with pytest.raises(ReplayExhausted, match="recorded no LLM calls"):
        replay_factory(tmp_path / "empty.sqlite")
