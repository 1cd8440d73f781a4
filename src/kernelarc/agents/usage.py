"""Token and cost accounting for LLM agents, and where their calls are recorded.

Every call an agent makes, failed ones included, goes to a `CallRecorder` (the campaign store's in a
campaign, a list in tests) and its usage to the campaign's `Budget`, which `--max-cost` queries.
Cost = tokens x the config's price per million; a model with no price costs 0 and is counted as
unpriced. Must not import campaign or the SDKs. Budget: 130 lines.
"""

from __future__ import annotations

import threading
from typing import Iterable, Protocol

from kernelarc.agents.config import Price
from kernelarc.memory.llm_calls import LLMCall, log_call
from kernelarc.memory.store import Store

TOKENS_PER_PRICE_UNIT = 1_000_000
"""Prices are quoted per million tokens."""


def cost_usd(price: Price | None, tokens_in: int | None, tokens_out: int | None) -> float | None:
    """What a call cost in US dollars; None when the model has no price."""
    if price is None:
        return None
    return ((tokens_in or 0) * price.input + (tokens_out or 0) * price.output) / TOKENS_PER_PRICE_UNIT


class CallRecorder(Protocol):
    """Where an agent's LLM calls go, each as it completes or fails."""

    def record(self, call: LLMCall) -> None:
        """Keep `call` (prompt, response or error, tokens, cost, latency)."""
        ...


class MemoryRecorder:
    """Keeps calls in a list: for tests and for runs without a store."""

    def __init__(self) -> None:
        self.calls: list[LLMCall] = []
        """Every call recorded, in order."""
        self._lock = threading.Lock()

    def record(self, call: LLMCall) -> None:
        """Append `call`."""
        with self._lock:
            self.calls.append(call)


class StoreRecorder:
    """Writes calls to the campaign store's `llm_calls`, where audit and `--replay` read them."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def record(self, call: LLMCall) -> None:
        """Store `call` with its kind and latency."""
        log_call(self.store, call)


class AgentUsage:
    """Mutable totals of one agent (or of the campaign)."""

    def __init__(self) -> None:
        self.calls = 0
        """Calls made, failed ones included."""
        self.failed = 0
        """Calls that returned no response."""
        self.tokens_in = 0
        """Prompt tokens reported by the providers."""
        self.tokens_out = 0
        """Completion tokens reported by the providers."""
        self.cost_usd = 0.0
        """Dollars spent on priced models."""
        self.unpriced = 0
        """Calls to models with no price (their cost is not counted)."""

    def add(self, call: LLMCall) -> None:
        self.calls += 1
        self.failed += call.response is None
        self.tokens_in += call.tokens_in or 0
        self.tokens_out += call.tokens_out or 0
        if call.cost_usd is not None:
            self.cost_usd += call.cost_usd
        elif call.tokens_in or call.tokens_out:
            self.unpriced += 1

    def as_dict(self) -> dict[str, float | int]:
        """The totals as summary.json reports them."""
        return dict(calls=self.calls, failed=self.failed, tokens_in=self.tokens_in, tokens_out=self.tokens_out,
                    cost_usd=round(self.cost_usd, 6), unpriced_calls=self.unpriced)


class Budget:
    """Per-agent and total usage of one campaign; also a CallRecorder, so it can count what it is given.

    Thread-safe: agents of one campaign share it.
    """

    def __init__(self, calls: Iterable[LLMCall] = ()) -> None:
        """Start empty, or from the calls already recorded (a resumed campaign)."""
        self._lock = threading.Lock()
        self.total = AgentUsage()
        """The campaign's totals."""
        self._agents: dict[str, AgentUsage] = {}
        for call in calls:
            self.record(call)

    def record(self, call: LLMCall) -> None:
        """Count `call` for its agent and the total."""
        with self._lock:
            self.total.add(call)
            self._agents.setdefault(call.agent_id, AgentUsage()).add(call)

    @property
    def spent_usd(self) -> float:
        """Dollars spent so far on priced models."""
        return self.total.cost_usd

    def exceeded(self, max_cost_usd: float | None) -> bool:
        """True when a cost cap is set and spending has reached it."""
        return max_cost_usd is not None and self.spent_usd >= max_cost_usd

    def per_agent(self) -> dict[str, dict[str, float | int]]:
        """Each agent's totals, by agent id."""
        with self._lock:
            return {agent_id: usage.as_dict() for agent_id, usage in sorted(self._agents.items())}

    def summary(self) -> dict[str, object]:
        """`{"total": {...}, "agents": {id: {...}}}` for summary.json."""
        with self._lock:
            total = self.total.as_dict()
        return {"total": total, "agents": self.per_agent()}


class Recorders:
    """Sends each call to several recorders (typically the store's and the budget)."""

    def __init__(self, *recorders: CallRecorder) -> None:
        self.recorders = recorders

    def record(self, call: LLMCall) -> None:
        """Give `call` to each recorder in order."""
        for recorder in self.recorders:
            recorder.record(call)


__all__ = [
    "AgentUsage", "Budget", "CallRecorder", "MemoryRecorder", "Recorders", "StoreRecorder", "TOKENS_PER_PRICE_UNIT",
    "cost_usd",
]
