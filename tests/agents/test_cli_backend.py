"""The cli backend with a small Python script standing in for a coding-agent command."""

from __future__ import annotations

import asyncio
import shlex
import sys
from pathlib import Path

import pytest

from kernelarc.agents.cli import cli_factory
from kernelarc.agents.config import BackendConfig, ConfigError
from kernelarc.agents.llm import AgentStepFailed
from kernelarc.agents.usage import MemoryRecorder
from kernelarc.strategies import get_strategy

INCUMBENT = ("import torch\n\nclass ModelNew(torch.nn.Module):\n    def forward(self, x):\n"
             "        return torch.relu(x)\n")

FAKE_AGENT = '''
import argparse, os, pathlib, sys, time

parser = argparse.ArgumentParser()
parser.add_argument("--prompt-file")
parser.add_argument("--workdir")
args = parser.parse_args()
work = pathlib.Path(args.workdir)
prompt = pathlib.Path(args.prompt_file).read_text()
mode = os.environ.get("FAKE_AGENT_MODE", "good")
(work / "env.txt").write_text("\\n".join(sorted(os.environ)))
if "Write the lesson" in prompt:
    (work / "reflection.txt").write_text("clamp reads x once; 1.3x on 4x8")
    sys.exit(0)
if mode == "sleep":
    time.sleep(30)
if mode == "crash":
    print("out of credits")
    sys.exit(3)
if mode == "lazy" and "could not be used" not in prompt:
    print("I looked around and decided to do nothing.")
    sys.exit(0)
source = (work / "incumbent.py").read_text().replace("torch.relu(x)", "x.clamp(min=0)")
(work / "candidate.py").write_text(source)
(work / "claim.txt").write_text("clamp instead of relu\\n")
'''


@pytest.fixture
def make_agent(tmp_path, task, monkeypatch):
    script = tmp_path / "fake_agent.py"
    script.write_text(FAKE_AGENT)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-must-not-leak")

    def make(mode: str = "good", timeout_s: float = 30.0, recorder=None):
        monkeypatch.setenv("FAKE_AGENT_MODE", mode)
        command = f"{shlex.quote(sys.executable)} {shlex.quote(str(script))} --prompt-file {{prompt_file}} " \
                  "--workdir {workdir}"
        config = BackendConfig.model_validate(
            {"cli": {"command": command, "timeout_s": timeout_s, "pass_env": ["FAKE_AGENT_MODE"]}})
        factory = cli_factory(config, recorder or MemoryRecorder(), workspace=tmp_path / "ws", device="cpu")
        return factory("a0", get_strategy("fusion"), task, 0)

    return make


def workdirs(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "ws").iterdir())


def test_the_command_writes_the_candidate_and_the_reflection(make_agent, make_context, keep_evaluation, tmp_path):
    recorder = MemoryRecorder()
    agent = make_agent(recorder=recorder)
    ctx = make_context(incumbent_id=5, incumbent_source=INCUMBENT)

    async def step():
        proposal = await agent.propose(ctx)
        return proposal, await agent.reflect(ctx, proposal, keep_evaluation)

    proposal, reflection = asyncio.run(step())
    assert proposal.source == INCUMBENT.replace("torch.relu(x)", "x.clamp(min=0)")
    assert proposal.claim == "clamp instead of relu" and proposal.parent_id == 5
    assert reflection == "clamp reads x once; 1.3x on 4x8"
    propose_dir, reflect_dir = workdirs(tmp_path)
    assert (propose_dir / "incumbent.py").read_text() == INCUMBENT
    assert "write the complete candidate file to `candidate.py`" in (propose_dir / "prompt.md").read_text().lower()
    assert [c.model for c in recorder.calls] == [Path(sys.executable).name] * 2
    assert "-reflect-" in reflect_dir.name


def test_the_command_gets_the_allow_listed_environment_plus_pass_env(make_agent, make_context, tmp_path):
    asyncio.run(make_agent().propose(make_context()))
    names = (workdirs(tmp_path)[0] / "env.txt").read_text().split()
    assert "FAKE_AGENT_MODE" in names and "PATH" in names
    assert "OPENAI_API_KEY" not in names


def test_no_candidate_is_retried_once_with_what_to_fix(make_agent, make_context, tmp_path):
    recorder = MemoryRecorder()
    proposal = asyncio.run(make_agent("lazy", recorder=recorder).propose(make_context()))
    assert proposal.claim == "clamp instead of relu"
    first, second = recorder.calls
    assert "wrote no candidate.py" in first.response and "decided to do nothing" in first.response
    assert first.error.startswith("unusable reply") and second.error is None
    assert "Your reply could not be used" in (workdirs(tmp_path)[1] / "prompt.md").read_text()


def test_a_failing_command_fails_the_step_with_its_output(make_agent, make_context):
    recorder = MemoryRecorder()
    with pytest.raises(AgentStepFailed, match="exited with code 3 .*out of credits"):
        asyncio.run(make_agent("crash", recorder=recorder).propose(make_context()))
    assert recorder.calls[0].response is None


def test_a_command_past_its_timeout_is_killed(make_agent, make_context):
    with pytest.raises(AgentStepFailed, match="ran past 1 s"):
        asyncio.run(make_agent("sleep", timeout_s=1).propose(make_context()))


def test_a_missing_command_or_program_fails_at_start():
    with pytest.raises(ConfigError, match="needs a command"):
        cli_factory(BackendConfig())
    with pytest.raises(ConfigError, match="'no-such-coding-agent' is not on PATH"):
        cli_factory(BackendConfig.model_validate({"cli": {"command": "no-such-coding-agent {prompt_file}"}}))
