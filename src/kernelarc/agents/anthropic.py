"""The `anthropic` backend: the Anthropic messages API through the official SDK.

The system prompt travels in the request's `system` field; retries with backoff on 429, 5xx and
overload are the SDK's own (`max_retries`), as is the timeout. Registers on import. Budget: 110 lines.
"""

from __future__ import annotations

from pathlib import Path

import anthropic

from kernelarc.agents.config import (
    NO_KEY, BackendConfig, BackendKind, BackendSettings, ConfigError, api_key, base_url,
)
from kernelarc.agents.llm import Completion, Message, ModelCallError, llm_factory
from kernelarc.agents.protocol import AgentContext, AgentFactory, register_backend
from kernelarc.agents.usage import CallRecorder
from kernelarc.memory.llm_calls import CallKind

PREFLIGHT_TIMEOUT_S = 30.0
"""The preflight's request timeout."""
PREFLIGHT_RETRIES = 1
"""The preflight retries once, so an unreachable server fails in seconds, not after the full backoff."""


def _need_model(settings: BackendSettings) -> str:
    if not settings.model:
        raise ConfigError("the anthropic backend needs a model: set model in [anthropic] of the config "
                          "or pass --model")
    return settings.model


def _split_system(messages: list[Message]) -> tuple[str, list[Message]]:
    system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
    return system, [m for m in messages if m["role"] != "system"]


class AnthropicChat:
    """A ChatModel over the messages API and one model."""

    reply_format = "chat"

    def __init__(self, settings: BackendSettings) -> None:
        """Raises ConfigError when the model is unset or the key variable is missing."""
        self.model = _need_model(settings)
        self.settings = settings
        self.base_url = base_url(BackendKind.ANTHROPIC, settings)
        self._key = api_key(BackendKind.ANTHROPIC, settings) or NO_KEY

    async def complete(self, messages: list[Message], *, kind: CallKind, ctx: AgentContext) -> Completion:
        """One message; the SDK retries rate limits, overload and server errors itself."""
        system, turns = _split_system(messages)
        options: dict[str, object] = {"system": system} if system else {}
        if self.settings.temperature is not None:
            options["temperature"] = min(self.settings.temperature, 1.0)  # the API's range is [0, 1]
        try:  # a client per call: its connections belong to the event loop that runs the call
            async with anthropic.AsyncAnthropic(api_key=self._key, base_url=self.base_url,
                                                timeout=self.settings.timeout_s,
                                                max_retries=self.settings.max_retries) as client:
                response = await client.messages.create(model=self.model, max_tokens=self.settings.max_tokens,
                                                        messages=turns, **options)
        except anthropic.APIError as e:
            raise ModelCallError(f"{type(e).__name__} from {self.base_url}: {e}") from None
        text = "".join(block.text for block in response.content if block.type == "text")
        return Completion(text=text, tokens_in=response.usage.input_tokens, tokens_out=response.usage.output_tokens)


def preflight(settings: BackendSettings) -> None:
    """Send a one-token message: proves the URL answers, the key is accepted and the model exists.

    Raises:
        ConfigError: missing key, unreachable server, refused key, or an unknown model.
    """
    model = _need_model(settings)
    url = base_url(BackendKind.ANTHROPIC, settings)
    client = anthropic.Anthropic(api_key=api_key(BackendKind.ANTHROPIC, settings) or NO_KEY, base_url=url,
                                 timeout=min(settings.timeout_s, PREFLIGHT_TIMEOUT_S), max_retries=PREFLIGHT_RETRIES)
    try:
        client.messages.create(model=model, max_tokens=1, messages=[{"role": "user", "content": "ping"}])
    except anthropic.AuthenticationError as e:
        raise ConfigError(f"{url} refused the anthropic API key ({e.status_code}): check "
                          f"{settings.api_key_env or 'ANTHROPIC_API_KEY'}") from None
    except anthropic.NotFoundError:
        raise ConfigError(f"model {model!r} is unknown to {url}") from None
    except anthropic.APIConnectionError:
        raise ConfigError(f"cannot reach the anthropic server at {url} (set base_url in [anthropic] or "
                          f"ANTHROPIC_BASE_URL)") from None
    except anthropic.APIStatusError as e:
        raise ConfigError(f"{url} answered {e.status_code} to a one-token message: {e.message}") from None
    finally:
        client.close()


def chat_maker(workspace: Path | None = None) -> type[AnthropicChat]:
    """What builds this backend's ChatModel from an agent's settings (`workspace` is the cli backend's)."""
    return AnthropicChat


def anthropic_factory(config: BackendConfig | str | Path | None = None, recorder: CallRecorder | None = None, *,
                      model: str | None = None, device: str = "cuda", check: bool = True,
                      workspace: Path | None = None) -> AgentFactory:
    """The `anthropic` backend's AgentFactory (see `llm_factory` for the arguments)."""
    return llm_factory(BackendKind.ANTHROPIC, config=config, recorder=recorder, model=model, device=device,
                       check=check, workspace=workspace)


register_backend("anthropic", anthropic_factory)

__all__ = ["AnthropicChat", "chat_maker", "anthropic_factory", "preflight"]
