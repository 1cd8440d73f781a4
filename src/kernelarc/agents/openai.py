"""The `openai` backend: any OpenAI-compatible chat-completions server through the official SDK.

OpenAI, vLLM, SGLang, Ollama, llama.cpp's server, OpenRouter and the other providers that speak the
protocol: set `base_url` (or OPENAI_BASE_URL). Retries with backoff on 429, 5xx and dropped
connections are the SDK's own (`max_retries`), as is the per-request timeout. Registers on import.
Budget: 120 lines.
"""

from __future__ import annotations

from pathlib import Path

import openai

from kernelarc.agents.config import (
    NO_KEY, BackendConfig, BackendKind, BackendSettings, ConfigError, api_key, base_url,
)
from kernelarc.agents.llm import Completion, Message, ModelCallError, llm_factory
from kernelarc.agents.protocol import AgentContext, AgentFactory, register_backend
from kernelarc.agents.usage import CallRecorder
from kernelarc.memory.llm_calls import CallKind

PREFLIGHT_TIMEOUT_S = 30.0
"""The preflight's request timeout: a server that cannot list its models this fast is not ready."""
PREFLIGHT_RETRIES = 1
"""The preflight retries once, so an unreachable server fails in seconds, not after the full backoff."""


def _need_model(settings: BackendSettings) -> str:
    if not settings.model:
        raise ConfigError("the openai backend needs a model: set model in [openai] of the config or pass --model")
    return settings.model


class OpenAIChat:
    """A ChatModel over one chat-completions server and model."""

    reply_format = "chat"

    def __init__(self, settings: BackendSettings) -> None:
        """Raises ConfigError when the model is unset or the key variable is missing."""
        self.model = _need_model(settings)
        self.settings = settings
        self.base_url = base_url(BackendKind.OPENAI, settings)
        self._key = api_key(BackendKind.OPENAI, settings) or NO_KEY

    async def complete(self, messages: list[Message], *, kind: CallKind, ctx: AgentContext) -> Completion:
        """One chat completion; the SDK retries rate limits and server errors itself."""
        options: dict[str, object] = {"max_completion_tokens": self.settings.max_tokens}
        if self.settings.reasoning_effort is not None:
            options["reasoning_effort"] = self.settings.reasoning_effort.value
        if self.settings.temperature is not None:
            options["temperature"] = self.settings.temperature
        try:  # a client per call: its connections belong to the event loop that runs the call
            async with openai.AsyncOpenAI(api_key=self._key, base_url=self.base_url, timeout=self.settings.timeout_s,
                                          max_retries=self.settings.max_retries) as client:
                response = await client.chat.completions.create(model=self.model, messages=messages, **options)
        except openai.APIError as e:
            raise ModelCallError(f"{type(e).__name__} from {self.base_url}: {e}") from None
        text = (response.choices[0].message.content or "") if response.choices else ""
        usage = response.usage
        return Completion(text=text, tokens_in=usage.prompt_tokens if usage else None,
                          tokens_out=usage.completion_tokens if usage else None)


def preflight(settings: BackendSettings) -> None:
    """List the server's models: proves the URL answers, the key is accepted and the model is served.

    Raises:
        ConfigError: missing key, unreachable server, refused key, or a model the server does not list.
    """
    model = _need_model(settings)
    key_value = api_key(BackendKind.OPENAI, settings)
    url = base_url(BackendKind.OPENAI, settings)
    client = openai.OpenAI(api_key=key_value or NO_KEY, base_url=url,
                           timeout=min(settings.timeout_s, PREFLIGHT_TIMEOUT_S), max_retries=PREFLIGHT_RETRIES)
    try:
        served = [m.id for m in client.models.list()]
    except openai.AuthenticationError as e:
        raise ConfigError(f"{url} refused the openai API key ({e.status_code}): check "
                          f"{settings.api_key_env or 'OPENAI_API_KEY'}") from None
    except openai.APIConnectionError:
        raise ConfigError(f"cannot reach the openai server at {url} (set base_url in [openai] or "
                          f"OPENAI_BASE_URL)") from None
    except openai.APIStatusError as e:
        raise ConfigError(f"{url} answered {e.status_code} when asked for its models: {e.message}") from None
    finally:
        client.close()
    if served and model not in served:
        raise ConfigError(f"model {model!r} is not served by {url}; it serves: {', '.join(sorted(served)[:10])}")


def chat_maker(workspace: Path | None = None) -> type[OpenAIChat]:
    """What builds this backend's ChatModel from an agent's settings (`workspace` is the cli backend's)."""
    return OpenAIChat


def openai_factory(config: BackendConfig | str | Path | None = None, recorder: CallRecorder | None = None, *,
                   model: str | None = None, device: str = "cuda", check: bool = True,
                   workspace: Path | None = None) -> AgentFactory:
    """The `openai` backend's AgentFactory (see `llm_factory` for the arguments)."""
    return llm_factory(BackendKind.OPENAI, config=config, recorder=recorder, model=model, device=device,
                       check=check, workspace=workspace)


register_backend("openai", openai_factory)

__all__ = ["OpenAIChat", "chat_maker", "openai_factory", "preflight"]
