"""Every LLM call of a campaign with its kind and latency: what audit and replay read back.

`llm_calls` holds the call (prompt, response, tokens, cost, error); `llm_call_details` (migration
m002) adds what kind of call it was and how long it took. Both rows are written in one transaction.
The prompt is stored as the JSON list of chat messages sent. Must not import agents or campaign.
Budget: 100 lines.
"""

from __future__ import annotations

import json
from enum import Enum

from pydantic import Field

from kernelarc.memory.records import LlmCallRecord
from kernelarc.memory.store import Store


class CallKind(str, Enum):
    """Why an agent called its model."""

    PROPOSE = "propose"
    """Asked for a candidate (a first try or the retry after an unusable reply)."""
    REFLECT = "reflect"
    """Asked what a verdict teaches."""


class LLMCall(LlmCallRecord):
    """One call to a model: the campaign store's `llm_calls` row plus its kind and latency."""

    kind: CallKind
    """propose or reflect: with agent id and step, the key replay serves responses by."""
    latency_s: float | None = Field(default=None, ge=0)
    """Wall seconds the call took, the SDK's retries included; None when not measured."""

    @property
    def messages(self) -> list[dict[str, str]]:
        """The chat messages sent (`prompt` holds them as JSON: role and content each)."""
        return json.loads(self.prompt)


_SELECT = ("SELECT c.*, d.kind, d.latency_s FROM llm_calls c JOIN llm_call_details d ON d.call_id = c.id"
           " WHERE ?1 IS NULL OR c.agent_id = ?1 ORDER BY c.id")


def log_call(store: Store, call: LLMCall) -> int:
    """Store one call and its details in one transaction; return its id."""
    row = call.model_dump(mode="json", exclude={"id", "kind", "latency_s"})
    with store._write() as conn:
        call_id = conn.execute(
            "INSERT INTO llm_calls (agent_id, step, model, prompt, response, tokens_in, tokens_out, cost_usd,"
            " error, created) VALUES (:agent_id, :step, :model, :prompt, :response, :tokens_in, :tokens_out,"
            " :cost_usd, :error, :created)", row).lastrowid
        conn.execute("INSERT INTO llm_call_details (call_id, kind, latency_s) VALUES (?, ?, ?)",
                     (call_id, call.kind.value, call.latency_s))
    return call_id


def calls(store: Store, agent_id: str | None = None) -> list[LLMCall]:
    """Calls logged by `log_call` (of one agent if given), in the order they were made."""
    with store._read() as conn:
        return [LLMCall.model_validate(dict(row)) for row in conn.execute(_SELECT, (agent_id,))]


__all__ = ["CallKind", "LLMCall", "calls", "log_call"]
