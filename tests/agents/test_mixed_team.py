"""A mixed team (docs/backends.md: `[[agents]]` with `backend`): agents of one campaign on the openai and
anthropic backends, each through its real SDK to its own loopback server, and errors that name the section."""

from __future__ import annotations

import asyncio

import pytest

from kernelarc.agents import AgentContext, get_backend
from kernelarc.agents.config import ConfigError
from kernelarc.agents.usage import MemoryRecorder
from kernelarc.strategies import get_strategy

from .servers import anthropic_server, fenced, openai_server  # noqa: F401

RELU = "import torch\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n        return x.clamp(min=0)\n"
MAXIMUM = ("import torch\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n"
           "        return torch.maximum(x, torch.zeros_like(x))\n")


def team_config(tmp_path, openai_url: str, anthropic_url: str, extra: str = "") -> str:
    path = tmp_path / "team.toml"
    path.write_text(f'backend = "openai"\n\n[openai]\nbase_url = "{openai_url}"\nmodel = "test-model"\nmax_retries = 0\n\n'
                    f'[anthropic]\nbase_url = "{anthropic_url}"\nmodel = "cheap-model"\nmax_retries = 0\n\n'
                    f'[[agents]]\nindex = 1\nbackend = "anthropic"\n{extra}')
    return str(path)


def propose(agent, task, agent_id: str):
    ctx = AgentContext(task=task, agent_id=agent_id, strategy=get_strategy("fusion"))
    return asyncio.run(agent.propose(ctx))


def test_each_agent_talks_to_its_own_backend(openai_server, anthropic_server, task, tmp_path):
    openai_server.enqueue(fenced(RELU, "clamp instead of relu"))
    anthropic_server.enqueue(f"**Claim:** maximum with zeros\n\n```\n{MAXIMUM}```\n")
    recorder = MemoryRecorder()
    factory = get_backend("openai")(config=team_config(tmp_path, openai_server.url, anthropic_server.url),
                                    recorder=recorder, device="cpu")
    fusion = get_strategy("fusion")
    a0, a1 = factory("a0-fusion", fusion, task, 0), factory("a1-fusion", fusion, task, 1)

    assert (a0.backend, a1.backend) == ("openai", "anthropic")
    first, second = propose(a0, task, "a0-fusion"), propose(a1, task, "a1-fusion")
    assert (first.source, first.claim) == (RELU, "clamp instead of relu")
    assert (second.source, second.claim) == (MAXIMUM, "maximum with zeros")
    # The openai SDK posted chat completions to the openai server only, the anthropic SDK messages to its own.
    assert [(r.path, r.body["model"]) for r in openai_server.posts] == [("/v1/chat/completions", "test-model")]
    asked = [r for r in anthropic_server.posts if r.body.get("max_tokens") != 1]  # not the preflight's ping
    assert [(r.path, r.body["model"]) for r in asked] == [("/v1/messages", "cheap-model")]
    assert asked[0].body["system"] and all(m["role"] != "system" for m in asked[0].body["messages"])
    assert [(c.agent_id, c.model) for c in recorder.calls] == [("a0-fusion", "test-model"), ("a1-fusion", "cheap-model")]


def test_a_moved_agents_missing_key_names_its_section(openai_server, anthropic_server, tmp_path, monkeypatch):
    config = team_config(tmp_path, openai_server.url, anthropic_server.url, 'api_key_env = "TEAM_ANTHROPIC_KEY"\n')
    monkeypatch.delenv("TEAM_ANTHROPIC_KEY", raising=False)
    with pytest.raises(ConfigError, match=r"^with \[\[agents\]\] #1 of the config: TEAM_ANTHROPIC_KEY is not set"):
        get_backend("openai")(config=config, device="cpu")
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(ConfigError, match=r"^ANTHROPIC_API_KEY is not set: .* api_key_env in \[anthropic\]\)$"):
        get_backend("openai")(config=team_config(tmp_path, openai_server.url, anthropic_server.url), device="cpu")


def test_an_agents_own_settings_are_checked_when_it_is_made(openai_server, anthropic_server, task, tmp_path):
    # An override without backend gives a model the anthropic server does not know, to fusion agents only.
    config = team_config(tmp_path, openai_server.url, anthropic_server.url,
                         '\n[[agents]]\nstrategy = "fusion"\nmodel = "test-model"\n')
    factory = get_backend("openai")(config=config, device="cpu")  # the sections alone are fine
    factory("a1-memory", get_strategy("memory"), task, 0)
    anthropic_server.unknown_models = {"test-model"}
    with pytest.raises(ConfigError, match=r"^agent a1-fusion \(anthropic; settings from \[anthropic\], "
                                          r"\[\[agents\]\] #1, \[\[agents\]\] #2\): model 'test-model' is unknown"):
        factory("a1-fusion", get_strategy("fusion"), task, 0)
