"""`kernelarc optimize` with a mixed OpenAI/Anthropic team whose models never send usable code: each agent's
error, with the start of its model's reply, in the terminal and in summary.json, and a non-zero exit
although the eager baseline leads. The real SDKs talk to loopback servers (tests/agents/servers.py)."""

from __future__ import annotations

import json

import pytest

from kernelarc.cli.main import run_app

from agents.servers import anthropic_server, openai_server  # noqa: F401
from campaign.runs import SLOW_SUM

PROSE = "I believe the reference is already optimal, so I would leave it as it is."
"""A reply with no code in it: unusable, twice per step."""


@pytest.mark.slow  # the eager baseline judged and timed against itself on the CPU
def test_a_team_whose_backends_give_nothing_fails_and_says_why(openai_server, anthropic_server, tmp_path, capsys):
    config = tmp_path / "team.toml"
    config.write_text(f'[openai]\nbase_url = "{openai_server.url}"\nmodel = "test-model"\nmax_retries = 0\n\n'
                      f'[anthropic]\nbase_url = "{anthropic_server.url}"\nmodel = "cheap-model"\nmax_retries = 0\n\n'
                      '[[agents]]\nindex = 1\nbackend = "anthropic"\n')
    for server in (openai_server, anthropic_server):
        server.enqueue(*[PROSE] * 10)  # five steps of two replies each, then the agent is retired
    run_dir = tmp_path / "run"
    code = run_app(["optimize", str(SLOW_SUM), "--backend", "openai", "--config", str(config), "--agents", "2",
                    "--strategies", "reduction,memory", "--budget", "4", "--no-compile-baseline", "--rounds", "2",
                    "--device", "cpu", "--fresh-memory", "--out", str(run_dir)])
    shown = " ".join(" ".join(capsys.readouterr()).split())

    assert code == 1
    summary = json.loads((run_dir / "summary.json").read_text())
    assert summary["stop_reason"] == "all_agents_retired" and summary["candidates"] == 0
    assert summary["backend_failed"] is True
    assert [(a["agent"], a["backend"], a["failed_steps"]) for a in summary["agents"]] == [
        ("a0-reduction", "openai", 5), ("a1-memory", "anthropic", 5)]
    excerpt = "it began: 'I believe the reference is already optimal"
    for agent in summary["agents"]:
        assert "no usable reply in 2 tries; the last: it holds no candidate code" in agent["last_error"]
        assert excerpt in agent["last_error"]
        assert f"{agent['agent']} ({agent['backend']}): 5 step(s) gave no candidate; the last:" in shown
    assert excerpt in shown and "no agent produced a candidate" in shown
    # The eager baseline leads: said to be the baseline, not timed against itself, no gain claimed.
    best = summary["best"]
    assert best["baseline"] == "eager" and best["head_to_head"] == {} and best["speedup_vs_eager"] is None
    assert "best: the eager baseline (no agent candidate beat it" in shown and "x vs eager" not in shown
    assert len([r for r in anthropic_server.posts if r.body.get("max_tokens") != 1]) == 10
    assert len(openai_server.posts) == 10
