"""The backend configuration: files, overrides, environment, problems, and `kernelarc config check`."""

from __future__ import annotations

import sys

import pytest

from kernelarc.agents.config import (
    BackendConfig, BackendKind, ConfigError, api_key, base_url, load_config, problems,
)
from kernelarc.cli.app import run_app
from kernelarc.strategies import get_strategy

TOML = """
backend = "openai"

[openai]
model = "cheap-model"
reasoning_effort = "low"
max_retries = 3

[anthropic]
model = "big-model"
api_key_env = "TEAM_ANTHROPIC_KEY"

[[agents]]
strategy = "tensor_cores"
model = "test-model"

[[agents]]
index = 1
backend = "anthropic"

[[agents]]
agent = "a2"
strategy = "tensor_cores"
max_tokens = 1000

[prices."cheap-model"]
input = 0.1
output = 0.4
"""

YAML = """
backend: cli
cli:
  command: "{python} -c pass --prompt-file {{prompt_file}} --workdir {{workdir}}"
  pass_env: [HOME]
"""


@pytest.fixture
def toml_config(tmp_path):
    path = tmp_path / "backends.toml"
    path.write_text(TOML)
    return load_config(path)


def test_overrides_apply_in_order_over_the_section(toml_config):
    plain = toml_config.settings_for(BackendKind.OPENAI, "a0", "fusion")
    assert (plain.model, plain.reasoning_effort.value, plain.max_retries) == ("cheap-model", "low", 3)
    strong = toml_config.settings_for(BackendKind.OPENAI, "a2", "tensor_cores")
    assert (strong.model, strong.max_tokens, strong.max_retries) == ("test-model", 1000, 3)
    assert toml_config.settings_for(BackendKind.OPENAI, "a3", "tensor_cores").max_tokens == 16384


def test_an_override_can_move_an_agent_to_another_backend(toml_config):
    assert toml_config.backend_for("a1", "fusion", BackendKind.OPENAI) is BackendKind.ANTHROPIC
    assert toml_config.backend_for("a0", "fusion", BackendKind.OPENAI) is BackendKind.OPENAI
    assert toml_config.backends_in_use(None) == (BackendKind.OPENAI, BackendKind.ANTHROPIC)
    assert toml_config.settings_for(BackendKind.ANTHROPIC, "a1", "fusion").model == "big-model"


def test_overrides_match_the_ids_a_campaign_gives_its_agents(toml_config):
    # The campaign names its agents a<index>-<strategy>; `agent = "a2"` and `index = 1` must reach them.
    assert toml_config.settings_for(BackendKind.OPENAI, "a2-tensor_cores", "tensor_cores").max_tokens == 1000
    assert toml_config.settings_for(BackendKind.OPENAI, "a12-tensor_cores", "tensor_cores").max_tokens == 16384
    assert toml_config.backend_for("a1-fusion", "fusion", BackendKind.OPENAI) is BackendKind.ANTHROPIC
    assert toml_config.backend_for("a11-fusion", "fusion", BackendKind.OPENAI) is BackendKind.OPENAI
    assert toml_config.sources(BackendKind.OPENAI, "a2-tensor_cores", "tensor_cores") == \
        "[openai], [[agents]] #1, [[agents]] #3"


def test_yaml_files_load_too(tmp_path):
    path = tmp_path / "backends.yaml"
    path.write_text(YAML.format(python=sys.executable))
    config = load_config(path)
    assert config.backend is BackendKind.CLI and config.cli.pass_env == ("HOME",)
    assert config.cli.timeout_s == 1800.0


def test_keys_and_urls_come_from_the_environment_unless_the_file_says(toml_config):
    env = {"OPENAI_API_KEY": "sk-1", "OPENAI_BASE_URL": "http://vllm:8000/v1", "TEAM_ANTHROPIC_KEY": "ak"}
    assert api_key(BackendKind.OPENAI, toml_config.openai, env) == "sk-1"
    assert base_url(BackendKind.OPENAI, toml_config.openai, env) == "http://vllm:8000/v1"
    assert base_url(BackendKind.ANTHROPIC, toml_config.anthropic, {}) == "https://api.anthropic.com"
    assert api_key(BackendKind.ANTHROPIC, toml_config.anthropic, env) == "ak"
    keyless = toml_config.openai.model_copy(update={"api_key_env": ""})
    assert api_key(BackendKind.OPENAI, keyless, {}) is None
    with pytest.raises(ConfigError, match="^TEAM_ANTHROPIC_KEY is not set"):
        api_key(BackendKind.ANTHROPIC, toml_config.anthropic, {"ANTHROPIC_API_KEY": "not this one"})


@pytest.mark.parametrize("text, message", [
    ("[openai]\nmodle = 'x'\n", "openai.modle: Extra inputs are not permitted"),
    ("[openai]\nmax_retries = -1\n", "openai.max_retries: Input should be greater than or equal to 0"),
    ("[[agents]]\nmodel = 'x'\n", "needs one of \\['strategy', 'agent', 'index'\\]"),
    ("[cli]\ncommand = 'tool {prompt}'\n", "unknown placeholder\\(s\\) \\['prompt'\\]"),
    ("backend = 'gemini'\n", "backend: Input should be 'openai', 'anthropic' or 'cli'"),
    ("[openai\n", "not valid TOML"),
])
def test_invalid_files_say_what_is_wrong_one_line_each(tmp_path, text, message):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message):
        load_config(path)


def test_a_backend_takes_the_config_file_path_as_the_campaign_passes_it(tmp_path, task):
    from kernelarc.agents.cli import cli_factory

    path = tmp_path / "backends.toml"
    path.write_text(f"[cli]\ncommand = '{sys.executable} -c pass'\nmodel = 'stand-in'\n")
    agent = cli_factory(str(path))("a0", get_strategy("fusion"), task, 0)
    assert agent.chat.model == "stand-in"


def test_missing_file_and_unknown_suffix(tmp_path):
    with pytest.raises(ConfigError, match="cannot read config"):
        load_config(tmp_path / "absent.toml")
    (tmp_path / "c.json").write_text("{}")
    with pytest.raises(ConfigError, match="must end in .toml, .yaml or .yml"):
        load_config(tmp_path / "c.json")


def test_problems_name_missing_keys_models_prices_and_programs(toml_config):
    lines = problems(toml_config, toml_config.backends_in_use(None), env={"OPENAI_API_KEY": "k"})
    assert "warning: [[agents]] #1: no [prices] entry for model 'test-model': its calls count $0 toward --max-cost" \
        in lines
    assert any(line.startswith("TEAM_ANTHROPIC_KEY is not set") for line in lines)
    assert not any("cheap-model" in line for line in lines)
    cli = BackendConfig.model_validate({"cli": {"command": "no-such-coding-agent {prompt_file}"}})
    assert problems(cli, (BackendKind.CLI,)) == ["[cli]: program 'no-such-coding-agent' is not on PATH"]
    assert problems(BackendConfig(), (BackendKind.OPENAI,), env={})[0] == \
        "[openai]: model is not set (the openai backend needs a model name)"


def test_config_check_prints_one_line_per_problem_and_exits_2(tmp_path, capsys, monkeypatch):
    from kernelarc.cli import config_cmd  # noqa: F401  (registers `config`)

    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.delenv("TEAM_ANTHROPIC_KEY", raising=False)
    path = tmp_path / "backends.toml"
    path.write_text(TOML)
    assert run_app(["config", "check", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert "TEAM_ANTHROPIC_KEY is not set" in err and "warning: [[agents]] #1" in err
    monkeypatch.setenv("TEAM_ANTHROPIC_KEY", "ak")
    assert run_app(["config", "check", "--config", str(path), "--backend", "openai"]) == 0
    assert "config ok" in capsys.readouterr().err
    path.write_text("[openai]\nmodle = 'x'\nmax_tokens = 0\n")
    assert run_app(["config", "check", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert "openai.modle: Extra inputs" in err and "openai.max_tokens: Input should be greater than 0" in err
    assert run_app(["config", "check"]) == 2
    assert "no backend chosen" in capsys.readouterr().err


def test_config_check_online_reaches_the_server(tmp_path, capsys, monkeypatch):
    from kernelarc.cli import config_cmd  # noqa: F401

    from .servers import closed_port_url

    monkeypatch.setenv("OPENAI_API_KEY", "k")
    path = tmp_path / "backends.toml"
    path.write_text(f"[openai]\nmodel = 'm'\nbase_url = '{closed_port_url('openai')}'\n")
    assert run_app(["config", "check", "--config", str(path), "--backend", "openai", "--online"]) == 2
    assert "cannot reach the openai server" in capsys.readouterr().err
