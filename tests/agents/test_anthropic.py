"""The anthropic backend through the real SDK against a loopback messages-protocol server."""

from __future__ import annotations

import asyncio

import pytest

from kernelarc.agents import AgentContext
from kernelarc.agents.anthropic import anthropic_factory
from kernelarc.agents.config import BackendConfig, ConfigError
from kernelarc.agents.llm import AgentStepFailed
from kernelarc.agents.usage import Budget, MemoryRecorder
from kernelarc.strategies import get_strategy

from .servers import Failure, Reply, ScriptedServer, anthropic_server, closed_port_url, fenced  # noqa: F401

SOURCE = "import torch\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x.clamp(min=0)\n"


def make_factory(server: ScriptedServer, recorder, **settings):
    config = BackendConfig.model_validate({
        "anthropic": {"base_url": server.url, "model": "test-model", "max_retries": 2, "timeout_s": 10, **settings},
        "prices": {"test-model": {"input": 1.0, "output": 5.0}}})
    return anthropic_factory(config, recorder, device="cpu")


def test_propose_and_reflect_with_the_system_prompt_apart(anthropic_server, task, keep_evaluation):
    recorder = MemoryRecorder()
    agent = make_factory(anthropic_server, recorder)("a0", get_strategy("fusion"), task, 0)
    anthropic_server.enqueue(fenced(SOURCE, "clamp instead of relu"), "x" * 5000)
    ctx = AgentContext(task=task, agent_id="a0", strategy=get_strategy("fusion"))

    async def step():
        proposal = await agent.propose(ctx)
        return proposal, await agent.reflect(ctx, proposal, keep_evaluation)

    proposal, reflection = asyncio.run(step())
    assert proposal.source == SOURCE and proposal.parent_id is None and not proposal.is_draft
    assert len(reflection) == 1200  # clipped to the reflection cap
    first = anthropic_server.posts[1].body  # posts[0] is the one-token preflight
    assert "deterministic" in first["system"] and [m["role"] for m in first["messages"]] == ["user"]
    assert "Operator and epilogue fusion" in first["messages"][0]["content"]  # the strategy's playbook
    assert [c.kind.value for c in recorder.calls] == ["propose", "reflect"]


@pytest.mark.parametrize("status", [429, 500, 529])
def test_the_sdk_retries_rate_limits_server_errors_and_overload(anthropic_server, task, status):
    budget = Budget()
    agent = make_factory(anthropic_server, budget)("a0", get_strategy("fusion"), task, 0)
    anthropic_server.enqueue(Failure(status), Reply(fenced(SOURCE, "clamp"), tokens_in=10_000, tokens_out=1_000))
    proposal = asyncio.run(agent.propose(AgentContext(task=task, agent_id="a0", strategy=get_strategy("fusion"))))
    assert proposal.claim == "clamp"
    assert len(anthropic_server.posts) == 3  # preflight, the failure, the retry
    assert budget.spent_usd == pytest.approx((10_000 * 1.0 + 1_000 * 5.0) / 1e6)


def test_failed_call_is_recorded_and_fails_the_step(anthropic_server, task):
    recorder = MemoryRecorder()
    agent = make_factory(anthropic_server, recorder, max_retries=0)("a0", get_strategy("fusion"), task, 0)
    anthropic_server.enqueue(Failure(400, "prompt is too long"))
    with pytest.raises(AgentStepFailed, match="BadRequestError"):
        asyncio.run(agent.propose(AgentContext(task=task, agent_id="a0", strategy=get_strategy("fusion"))))
    assert "prompt is too long" in recorder.calls[0].error


def test_missing_key_and_unreachable_server_fail_at_start(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    config = BackendConfig.model_validate({"anthropic": {"model": "test-model"}})
    with pytest.raises(ConfigError, match="^ANTHROPIC_API_KEY is not set"):
        anthropic_factory(config)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    url = closed_port_url("anthropic")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", url)
    with pytest.raises(ConfigError, match=f"cannot reach the anthropic server at {url}"):
        anthropic_factory(config)


def test_refused_key_fails_at_start(anthropic_server, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "wrong")
    with pytest.raises(ConfigError, match="refused the anthropic API key \\(401\\)"):
        make_factory(anthropic_server, MemoryRecorder())


def test_missing_model_is_named(anthropic_server):
    config = BackendConfig.model_validate({"anthropic": {"base_url": anthropic_server.url}})
    with pytest.raises(ConfigError, match="needs a model: set model in \\[anthropic\\]"):
        anthropic_factory(config)
