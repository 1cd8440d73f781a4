"""The openai backend through the real SDK against a loopback chat-completions server, judged by the real guard."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from kernelarc.agents import AgentContext, Proposal
from kernelarc.agents.config import BackendConfig, ConfigError
from kernelarc.agents.llm import AgentStepFailed, LLMAgent
from kernelarc.agents.openai import openai_factory
from kernelarc.agents.usage import Budget, MemoryRecorder, Recorders
from kernelarc.guard import Evaluation, GuardSettings, Status, Verdict, candidate_from_source, evaluate
from kernelarc.memory.llm_calls import CallKind
from kernelarc.strategies import get_strategy
from kernelarc.task import load_task
from kernelarc.task.model import Task

from .servers import Failure, Reply, ScriptedServer, closed_port_url, fenced, openai_server  # noqa: F401

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "kernelbench"
FASTER = (EXAMPLES / "slow_sum_torch.py").read_text()
BROKEN = FASTER.replace("return x.sum(dim=1, keepdim=True)", "return x.sum(dim=1, keepdim=True) + bias_never_defined")
HACK = "import torch\nimport torch.nn as nn\n\ntorch.zeros = torch.empty\n\n\nclass ModelNew(nn.Module):\n" \
       "    def forward(self, x):\n        return x.sum(dim=1, keepdim=True)\n"
GUARD = GuardSettings(rounds=2, cpu_iterations=3, warmup=1)
PRICES = {"test-model": {"input": 3.0, "output": 15.0}}


@pytest.fixture(scope="module")
def slow_sum() -> Task:
    return load_task(EXAMPLES / "slow_sum.py")


def make_agent(server: ScriptedServer, recorder, task: Task, **settings) -> LLMAgent:
    config = BackendConfig.model_validate({"openai": {"base_url": server.url, "model": "test-model", "max_retries": 2,
                                                      "timeout_s": 10, **settings}, "prices": PRICES})
    return openai_factory(config, recorder, device="cpu")("a0", get_strategy("reduction"), task, 0)


def context(task: Task, step: int = 0) -> AgentContext:
    return AgentContext(task=task, agent_id="a0", strategy=get_strategy("reduction"), step=step)


def propose(agent: LLMAgent, ctx: AgentContext) -> Proposal:
    return asyncio.run(agent.propose(ctx))


@pytest.mark.slow  # one guard evaluation each, a few seconds on 2 cores
@pytest.mark.parametrize("source, verdicts, statuses", [
    (FASTER, {Verdict.KEEP, Verdict.ACCEPT}, {Status.PASSED}),  # which of the two is a CPU timing: not asserted
    (BROKEN, {Verdict.REJECT}, {Status.COMPILE_ERROR, Status.RUNTIME_ERROR}),
    (HACK, {Verdict.REJECT}, {Status.STATIC_REJECT, Status.REWARD_HACK}),
], ids=["faster", "broken", "reward-hack"])
def test_proposals_from_the_model_are_judged_by_the_guard(openai_server, slow_sum, source, verdicts, statuses):
    recorder = MemoryRecorder()
    agent = make_agent(openai_server, recorder, slow_sum)
    openai_server.enqueue(fenced(source, "one reduction call instead of a loop"),
                          "The kernel summed each row at once; 1 workload, 16x256.")
    ctx = context(slow_sum)
    proposal = propose(agent, ctx)
    assert proposal.source == source and proposal.claim == "one reduction call instead of a loop"
    result = evaluate(slow_sum, candidate_from_source(proposal.source, slow_sum), device="cpu", settings=GUARD)
    assert result.verdict in verdicts and result.status in statuses, result.reason
    reflection = asyncio.run(agent.reflect(ctx, proposal, result))
    assert reflection.startswith("The kernel summed")
    assert [c.kind for c in recorder.calls] == [CallKind.PROPOSE, CallKind.REFLECT]
    reflect_prompt = openai_server.posts[-1].body["messages"][-1]["content"]
    assert f"{result.verdict.value} ({result.status.value})" in reflect_prompt


def test_garbage_twice_is_a_failed_step_with_both_replies_recorded(openai_server, slow_sum):
    recorder = MemoryRecorder()
    agent = make_agent(openai_server, recorder, slow_sum)
    openai_server.enqueue("I would love to help with that!", "Sure. Use a faster algorithm.")
    with pytest.raises(AgentStepFailed, match="no usable reply in 2 tries.*no candidate code"):
        propose(agent, context(slow_sum))
    assert [c.response for c in recorder.calls] == ["I would love to help with that!", "Sure. Use a faster algorithm."]
    assert all(c.error.startswith("unusable reply") for c in recorder.calls)
    retry = openai_server.posts[1].body["messages"]
    assert [m["role"] for m in retry] == ["system", "user", "assistant", "user"]
    assert retry[3]["content"].startswith("Your reply could not be used: it holds no candidate code")


@pytest.mark.parametrize("status", [429, 500])
def test_the_sdk_retries_rate_limits_and_server_errors(openai_server, slow_sum, status):
    recorder = MemoryRecorder()
    agent = make_agent(openai_server, recorder, slow_sum)
    openai_server.enqueue(Failure(status), fenced(FASTER, "sum"))
    assert propose(agent, context(slow_sum)).claim == "sum"
    assert len(openai_server.posts) == 2
    assert [c.error for c in recorder.calls] == [None]


def test_a_call_failing_past_its_retries_is_recorded_and_fails_the_step(openai_server, slow_sum):
    recorder = MemoryRecorder()
    agent = make_agent(openai_server, recorder, slow_sum, max_retries=1)
    openai_server.enqueue(Failure(500, "overloaded"), Failure(500, "overloaded"))
    with pytest.raises(AgentStepFailed, match="propose call to test-model failed: InternalServerError"):
        propose(agent, context(slow_sum))
    (call,) = recorder.calls
    assert call.response is None and "overloaded" in call.error and call.cost_usd is None


def test_cost_per_agent_and_in_total_from_usage_fields_and_prices(openai_server, slow_sum):
    budget, recorder = Budget(), MemoryRecorder()
    agent = make_agent(openai_server, Recorders(recorder, budget), slow_sum)
    openai_server.enqueue(Reply(fenced(FASTER, "sum"), tokens_in=1_000_000, tokens_out=100_000),
                          Reply("lesson", tokens_in=2000, tokens_out=10))
    ctx = context(slow_sum)
    proposal = propose(agent, ctx)
    assert recorder.calls[0].cost_usd == pytest.approx(3.0 + 1.5)
    asyncio.run(agent.reflect(ctx, proposal, _rejected()))
    assert budget.spent_usd == pytest.approx(4.5 + (2000 * 3.0 + 10 * 15.0) / 1e6)
    assert budget.per_agent()["a0"]["tokens_in"] == 1_002_000
    assert budget.summary()["total"]["calls"] == 2
    assert budget.exceeded(4.5) and not budget.exceeded(5.0) and not budget.exceeded(None)
    assert Budget(recorder.calls).spent_usd == pytest.approx(budget.spent_usd)


def _rejected() -> Evaluation:
    return Evaluation(verdict=Verdict.REJECT, status=Status.RUNTIME_ERROR, reason="NameError: bias", correct=False,
                      device="cpu")


def test_reasoning_effort_and_token_cap_are_sent(openai_server, slow_sum):
    agent = make_agent(openai_server, MemoryRecorder(), slow_sum, reasoning_effort="high", max_tokens=777)
    openai_server.enqueue(fenced(FASTER, "sum"))
    propose(agent, context(slow_sum))
    body = openai_server.posts[0].body
    assert body["reasoning_effort"] == "high" and body["max_completion_tokens"] == 777
    assert body["model"] == "test-model" and "temperature" not in body


def test_missing_key_fails_at_start_naming_the_variable(openai_server, slow_sum, monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY")
    config = BackendConfig.model_validate({"openai": {"base_url": openai_server.url, "model": "test-model"}})
    with pytest.raises(ConfigError, match="^OPENAI_API_KEY is not set"):
        openai_factory(config)
    assert openai_server.requests == []


def test_unreachable_server_fails_at_start_naming_the_url(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    url = closed_port_url("openai")
    monkeypatch.setenv("OPENAI_BASE_URL", url)  # honoured when the config gives no base_url
    with pytest.raises(ConfigError, match=f"cannot reach the openai server at {url}"):
        openai_factory(BackendConfig.model_validate({"openai": {"model": "test-model"}}))


def test_refused_key_and_unknown_model_fail_at_start(openai_server, monkeypatch):
    config = BackendConfig.model_validate({"openai": {"base_url": openai_server.url, "model": "no-such-model"}})
    with pytest.raises(ConfigError, match="'no-such-model' is not served by .*test-model"):
        openai_factory(config)
    monkeypatch.setenv("OPENAI_API_KEY", "wrong")
    with pytest.raises(ConfigError, match="refused the openai API key \\(401\\): check OPENAI_API_KEY"):
        openai_factory(config, model="test-model")
    assert [r.method for r in openai_server.requests] == ["GET", "GET"]
