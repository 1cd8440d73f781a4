"""The backend configuration file: per-backend defaults, per-agent overrides, prices, keys from the environment.

A TOML or YAML file (see docs/backends.md) with one section per backend (`[openai]`, `[anthropic]`,
`[cli]`), `[[agents]]` overrides matched by strategy, agent id or agent index (later matches win),
and `[prices."<model>"]` in US dollars per million tokens. Keys are never written in the file: it
names the environment variable that holds each key (the SDKs' standard ones by default), and
`OPENAI_BASE_URL` / `ANTHROPIC_BASE_URL` apply when the file gives no `base_url`. `problems()` lists
what is wrong or missing, one line each, for `kernelarc config check`. Must not import the SDKs,
campaign or the store. Budget: 250 lines.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import tomllib
from enum import Enum
from pathlib import Path
from typing import Any, Mapping

import yaml
from pydantic import Field, ValidationError, field_validator, model_validator

from kernelarc.errors import UserError
from kernelarc.task.model import Frozen


class ConfigError(UserError):
    """The backend configuration is unreadable or invalid, or a key or server it names is missing."""


class BackendKind(str, Enum):
    """The backends a configuration can set up."""

    OPENAI = "openai"
    """Any OpenAI-compatible chat-completions server, through the `openai` SDK."""
    ANTHROPIC = "anthropic"
    """The Anthropic messages API, through the `anthropic` SDK."""
    CLI = "cli"
    """An external coding-agent command run in a workspace folder."""


class ReasoningEffort(str, Enum):
    """How hard a reasoning model thinks (sent only when set, to models that support it)."""

    MINIMAL = "minimal"
    """Fastest answers."""
    LOW = "low"
    """Little thinking."""
    MEDIUM = "medium"
    """The providers' usual default."""
    HIGH = "high"
    """Most thinking, most tokens."""


KEY_ENV = {BackendKind.OPENAI: "OPENAI_API_KEY", BackendKind.ANTHROPIC: "ANTHROPIC_API_KEY"}
"""The variable holding each SDK's key when the file names none."""
BASE_URL_ENV = {BackendKind.OPENAI: "OPENAI_BASE_URL", BackendKind.ANTHROPIC: "ANTHROPIC_BASE_URL"}
"""The variable giving each SDK's server when the file gives no base_url."""
DEFAULT_URL = {BackendKind.OPENAI: "https://api.openai.com/v1", BackendKind.ANTHROPIC: "https://api.anthropic.com"}
"""Each SDK's own server, used when neither the file nor the environment names one."""
CLI_TIMEOUT_S = 1800.0
"""Default seconds for one cli run: coding agents work for minutes, not seconds."""
NO_KEY = "unused"
"""Sent as the key to servers configured with `api_key_env = ""` (the SDKs insist on one)."""
CLI_PLACEHOLDERS = ("prompt_file", "workdir", "incumbent_file", "candidate_file")
"""Names a cli command template may use in braces, for example `{prompt_file}`."""
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")


class BackendSettings(Frozen):
    """How one agent talks to its model; a section's values, then its matching overrides."""

    model: str | None = None
    """Model name as the provider spells it (openai, anthropic); shown in records for cli."""
    base_url: str | None = None
    """Server URL; None: the SDK's variable (OPENAI_BASE_URL, ANTHROPIC_BASE_URL), else its default."""
    api_key_env: str | None = None
    """Name of the variable holding the API key; None: the SDK's standard one; "": the server needs none."""
    reasoning_effort: ReasoningEffort | None = None
    """Reasoning effort for models that support it (openai); None: not sent."""
    max_tokens: int = Field(default=16384, gt=0)
    """Most tokens a reply may have."""
    temperature: float | None = Field(default=None, ge=0, le=2)
    """Sampling temperature; None: the provider's default."""
    timeout_s: float = Field(default=600.0, gt=0)
    """Seconds one request (or one cli run) may take."""
    max_retries: int = Field(default=4, ge=0)
    """Retries the SDK makes, with backoff, on rate limits (429), server errors (5xx) and dropped connections."""
    command: str | None = None
    """cli: the command line, split like a shell would (no shell runs it), with {prompt_file}, {workdir}, ..."""
    pass_env: tuple[str, ...] = ()
    """cli: environment variables passed through to the command beyond the guard's allow-list."""

    @field_validator("command")
    @classmethod
    def _validate_command(cls, v: str | None) -> str | None:
        if v is None:
            return v
        try:
            args = shlex.split(v)
        except ValueError as e:
            raise ValueError(f"cannot split command {v!r}: {e}") from None
        if not args:
            raise ValueError("command is empty")
        unknown = sorted({name for arg in args for name in _PLACEHOLDER.findall(arg)} - set(CLI_PLACEHOLDERS))
        if unknown:
            raise ValueError(f"unknown placeholder(s) {unknown} in {v!r}; known: {list(CLI_PLACEHOLDERS)}")
        return v


_MATCH_FIELDS = ("strategy", "agent", "index")


class AgentOverride(BackendSettings):
    """Settings for the agents it matches; every match field given must hold."""

    strategy: str | None = None
    """Match agents bound to this strategy."""
    agent: str | None = None
    """Match the agent with this id (for example `a2`, which matches the campaign's `a2-fusion`)."""
    index: int | None = Field(default=None, ge=0)
    """Match the agent with this index (the number in its id: `a2-fusion` is 2)."""
    backend: BackendKind | None = None
    """Run the matched agents on this backend instead of the campaign's."""

    @model_validator(mode="after")
    def _validate_match(self) -> "AgentOverride":
        if all(getattr(self, name) is None for name in _MATCH_FIELDS):
            raise ValueError(f"an [[agents]] entry needs one of {list(_MATCH_FIELDS)} to say which agents it sets")
        return self

    def apply(self, settings: BackendSettings) -> BackendSettings:
        """`settings` with the values this override sets replacing theirs."""
        values = settings.model_dump()
        values.update(self.model_dump(include=self.model_fields_set - {*_MATCH_FIELDS, "backend"}))
        return BackendSettings.model_validate(values)

    def matches(self, agent_id: str, strategy: str) -> bool:
        """True when every match field given holds for this agent."""
        return ((self.strategy is None or self.strategy == strategy)
                and (self.agent is None or self.agent in (agent_id, agent_id.split("-")[0]))
                and (self.index is None or self.index == agent_index(agent_id)))


class Price(Frozen):
    """What one model costs, in US dollars per million tokens."""

    input: float = Field(ge=0)
    """Per million prompt (input) tokens."""
    output: float = Field(ge=0)
    """Per million completion (output) tokens, reasoning tokens included."""


class BackendConfig(Frozen):
    """The whole configuration file."""

    backend: BackendKind | None = None
    """The campaign's backend when `--backend` is not given."""
    openai: BackendSettings = BackendSettings()
    """Defaults of the openai backend."""
    anthropic: BackendSettings = BackendSettings()
    """Defaults of the anthropic backend."""
    cli: BackendSettings = BackendSettings(timeout_s=CLI_TIMEOUT_S)
    """Defaults of the cli backend (a coding agent gets CLI_TIMEOUT_S unless the section says otherwise)."""
    agents: tuple[AgentOverride, ...] = ()
    """Per-agent overrides, applied in order over the backend's section."""
    prices: dict[str, Price] = Field(default_factory=dict)
    """Model name -> price; a model without one costs $0 toward --max-cost (config check warns)."""
    path: Path | None = Field(default=None, exclude=True)
    """The file it was read from; None for the built-in defaults."""

    @model_validator(mode="before")
    @classmethod
    def _cli_timeout(cls, data: Any) -> Any:
        if isinstance(data, dict) and isinstance(data.get("cli"), dict) and "timeout_s" not in data["cli"]:
            return {**data, "cli": {**data["cli"], "timeout_s": CLI_TIMEOUT_S}}
        return data

    def section(self, backend: BackendKind) -> BackendSettings:
        """The backend's defaults, before overrides."""
        return getattr(self, backend.value)

    def backend_for(self, agent_id: str, strategy: str, default: BackendKind) -> BackendKind:
        """The backend an agent runs on: the last matching override's, else `default`."""
        chosen = default
        for override in self.agents:
            if override.backend is not None and override.matches(agent_id, strategy):
                chosen = override.backend
        return chosen

    def settings_for(self, backend: BackendKind, agent_id: str, strategy: str) -> BackendSettings:
        """The settings of one agent on `backend`: the section, then every matching override in order."""
        settings = self.section(backend)
        for override in self.agents:
            if override.matches(agent_id, strategy) and override.backend in (None, backend):
                settings = override.apply(settings)
        return settings

    def backends_in_use(self, default: BackendKind | None) -> tuple[BackendKind, ...]:
        """`default` (else the file's `backend`) and every backend an override switches agents to."""
        first = default or self.backend
        chosen = [first] if first is not None else []
        return tuple(dict.fromkeys(chosen + [o.backend for o in self.agents if o.backend is not None]))

    def variants(self, backend: BackendKind, default: BackendKind | None = None) -> list[tuple[str, BackendSettings]]:
        """Every settings an agent on `backend` can get, each with where it comes from (for messages).

        An override without `backend` counts for the team's `default` backend (else the file's) only:
        paired with the section of a backend some agents are moved to, it would make settings no agent
        need be given (the docs' `model = "gpt-5"` for a strategy, on the anthropic server). The
        settings each agent really gets are checked when it is made (`sources` names them).
        """
        base = self.section(backend)
        team = default or self.backend
        return [(f"[{backend.value}]", base)] + [(f"[[agents]] #{i + 1}", override.apply(base))
                                                for i, override in enumerate(self.agents)
                                                if override.backend == backend
                                                or (override.backend is None and team in (None, backend))]

    def sources(self, backend: BackendKind, agent_id: str, strategy: str) -> str:
        """Where one agent's settings on `backend` come from, for messages: `[openai], [[agents]] #2`."""
        where = [f"[{backend.value}]"] + [f"[[agents]] #{i + 1}" for i, override in enumerate(self.agents)
                                          if override.matches(agent_id, strategy)
                                          and override.backend in (None, backend)]
        return ", ".join(where)

    def with_model(self, backend: BackendKind, model: str | None) -> "BackendConfig":
        """This configuration with `backend`'s default model replaced (the `--model` option); None: unchanged."""
        if model is None:
            return self
        section = self.section(backend).model_copy(update={"model": model})
        return self.model_copy(update={backend.value: section})

    def price(self, model: str) -> Price | None:
        """The price of `model`, or None when the table has none."""
        return self.prices.get(model)


def agent_index(agent_id: str) -> int | None:
    """The agent's number (`a2` and the campaign's `a2-fusion` -> 2), which `index` overrides match; None if
    the id has none."""
    match = re.match(r"[A-Za-z_]*(\d+)(?:-|$)", agent_id)
    return int(match.group(1)) if match else None


def api_key(backend: BackendKind, settings: BackendSettings, env: Mapping[str, str] = os.environ) -> str | None:
    """The API key for `backend`; None when `api_key_env` is "" (a server that needs none).

    Raises:
        ConfigError: the variable it names is unset or empty.
    """
    name = KEY_ENV[backend] if settings.api_key_env is None else settings.api_key_env
    if not name:
        return None
    value = env.get(name, "")
    if not value:
        raise ConfigError(f"{name} is not set: the {backend.value} backend needs an API key "
                          f"(set {name}, or name another variable with api_key_env in [{backend.value}])")
    return value


def base_url(backend: BackendKind, settings: BackendSettings, env: Mapping[str, str] = os.environ) -> str:
    """The server URL: the settings', else the SDK's variable, else the SDK's default."""
    return settings.base_url or env.get(BASE_URL_ENV[backend]) or DEFAULT_URL[backend]


def load_config(path: str | Path | None) -> BackendConfig:
    """Read and validate the configuration at `path` (.toml, .yaml or .yml); None: the defaults.

    Raises:
        ConfigError: the file is missing, unreadable or invalid (every problem on its own line).
    """
    if path is None:
        return BackendConfig()
    path = Path(path)
    data = _read(path)
    try:
        return BackendConfig.model_validate({**data, "path": path})
    except ValidationError as e:
        raise ConfigError("\n".join(f"{path}: {line}" for line in _validation_lines(e))) from None


def _read(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text()
    except OSError as e:
        raise ConfigError(f"cannot read config {path}: {e.strerror or e}") from None
    try:
        if path.suffix == ".toml":
            data = tomllib.loads(text)
        elif path.suffix in (".yaml", ".yml"):
            data = yaml.safe_load(text) or {}
        else:
            raise ConfigError(f"config {path} must end in .toml, .yaml or .yml")
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as e:
        raise ConfigError(f"{path}: not valid {path.suffix[1:].upper()}: {str(e).splitlines()[0]}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a table of settings, got {type(data).__name__}")
    return data


def _validation_lines(error: ValidationError) -> list[str]:
    return [f"{'.'.join(str(part) for part in item['loc']) or '(top level)'}: {item['msg']}"
            for item in error.errors()]


def problems(config: BackendConfig, backends: tuple[BackendKind, ...],
             env: Mapping[str, str] = os.environ) -> list[str]:
    """What would stop `backends` from starting, one line each; lines starting `warning:` do not.

    Checks every agent setting the file can produce for each backend (`variants`; the first of
    `backends` is the team's).
    """
    lines: list[str] = []
    for backend in backends:
        for where, settings in config.variants(backend, backends[0]):
            lines += _settings_problems(config, backend, where, settings, env)
    return list(dict.fromkeys(lines))


def _settings_problems(config: BackendConfig, backend: BackendKind, where: str, settings: BackendSettings,
                       env: Mapping[str, str]) -> list[str]:
    if backend is BackendKind.CLI:
        if settings.command is None:
            return [f"{where}: command is not set (the cli backend needs the command line to run)"]
        program = shlex.split(settings.command)[0]
        return [] if shutil.which(program) else [f"{where}: program {program!r} is not on PATH"]
    lines = []
    if backend is BackendKind.ANTHROPIC and settings.reasoning_effort is not None:
        lines.append(f"warning: {where}: reasoning_effort is not sent by the anthropic backend")
    if not settings.model:
        lines.append(f"{where}: model is not set (the {backend.value} backend needs a model name)")
    elif config.price(settings.model) is None:
        lines.append(f"warning: {where}: no [prices] entry for model {settings.model!r}: "
                     f"its calls count $0 toward --max-cost")
    try:
        api_key(backend, settings, env)
    except ConfigError as e:
        lines.append(str(e))
    return lines


__all__ = [
    "AgentOverride", "BASE_URL_ENV", "BackendConfig", "BackendKind", "BackendSettings", "CLI_PLACEHOLDERS",
    "CLI_TIMEOUT_S",
    "ConfigError", "DEFAULT_URL", "KEY_ENV", "NO_KEY", "Price", "ReasoningEffort", "agent_index", "api_key", "base_url",
    "load_config", "problems",
]
