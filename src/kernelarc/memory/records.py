"""The rows of a campaign store as typed, immutable records.

The store returns these and validates through them what it is given (caps on agent-written text
included), so a bad value is refused before it reaches SQL. Imports without torch. Budget: 250 lines.
"""

from __future__ import annotations

from datetime import datetime, timezone
from enum import Enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, field_validator

from kernelarc.guard.types import Evaluation, Verdict
from kernelarc.memory.findings import DEFAULT_RETENTION, Finding, RetentionPolicy
from kernelarc.memory.text import CLAIM_CAP, STRATEGY_CAP, check_cap


def utc_now() -> datetime:
    """The current time in UTC: every `created` stamp."""
    return datetime.now(timezone.utc)


_DATETIME = TypeAdapter(datetime)


def stamp(moment: datetime) -> str:
    """A time as every table stores it: ISO 8601 the way the records serialize it."""
    return _DATETIME.dump_python(moment, mode="json")


class Record(BaseModel):
    """Base for store records: immutable, unknown fields refused, field docstrings kept as descriptions."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)


class CampaignStatus(str, Enum):
    """Where a campaign stands."""

    RUNNING = "running"
    """Started and not finished; a campaign killed mid-run stays here and can be resumed."""
    FINISHED = "finished"
    """Stopped for its `stop_reason`; nothing more will be submitted."""


class CampaignMeta(Record):
    """The campaign this store belongs to: its task, seed, options and state."""

    task_name: str = Field(min_length=1)
    """The task's name."""
    task_path: str = ""
    """The task file or directory, for resuming."""
    kernel_type: str = Field(min_length=1)
    """The task's kernel family: the key its findings are stored and recalled under."""
    seed: int
    """The campaign's random seed."""
    options: dict[str, Any] = Field(default_factory=dict)
    """The run's options as given (JSON-serializable)."""
    retention: RetentionPolicy = DEFAULT_RETENTION
    """How many findings are kept per kernel type; applied on every recorded verdict."""
    status: CampaignStatus = CampaignStatus.RUNNING
    """Running or finished."""
    stop_reason: str | None = None
    """Why the campaign stopped (the campaign's StopReason value), None while running."""
    started: datetime = Field(default_factory=utc_now)
    """When the campaign started (UTC)."""


class AgentState(Record):
    """What the campaign tracks per agent between steps."""

    incumbent_id: int | None = None
    """The candidate the agent builds on and is judged against; None for the reference."""
    plateau: int = Field(default=0, ge=0)
    """Benchmarked non-improvements (REVERT, ACCEPT) since the last KEEP."""
    drafts: int = Field(default=0, ge=0)
    """Plateaus hit so far (1: told to draft, 2: restarted from another agent's best, 3: retired)."""
    must_draft: bool = False
    """The agent's next proposal must change algorithm, language or layout."""
    retired: bool = False
    """True once the agent proposes no more."""
    steps: int = Field(default=0, ge=0)
    """Proposals the agent has made; its next step number (a resumed agent continues from here)."""
    incumbent_speedup: float = Field(default=1.0, gt=0)
    """The incumbent's speedup over the reference (KEEP speedups multiplied along the lineage)."""
    idle: int = Field(default=0, ge=0)
    """Steps in a row that produced nothing to evaluate (a duplicate, a refused draft, an agent error);
    stored so that a resumed agent retires when it would have without the interruption."""


class AgentRecord(Record):
    """One agent of the campaign."""

    id: str = Field(min_length=1)
    """The campaign's id for the agent, for example `a0-tiling`."""
    strategy: str = Field(min_length=1)
    """The strategy it is bound to (a catalogue name)."""
    backend: str = Field(min_length=1)
    """What generates its candidates: builtin, openai, anthropic, cli, ..."""
    state: AgentState = AgentState()
    """Its incumbent, plateau counter, drafts and retirement."""
    created: datetime = Field(default_factory=utc_now)
    """When it was registered (UTC)."""


class CandidateRecord(Record):
    """One distinct kernel proposed in the campaign."""

    id: int | None = None
    """Row id; None until stored."""
    hash: str = Field(min_length=1)
    """SHA-256 of the normalized source (`Candidate.hash`): identical kernels share one row."""
    source: str = Field(min_length=1)
    """The module source or solution.json text."""
    parent_id: int | None = None
    """The candidate it was derived from; None for a first draft."""
    agent_id: str | None = None
    """The first agent that proposed it; None when the user gave it."""
    strategy: str
    """The proposing agent's strategy (at most 160 characters)."""
    claim: str
    """What the agent says the change does (at most 160 characters)."""
    language: str
    """pytorch, triton, cuda_cpp, ..."""
    kind: str
    """module or solution (`CandidateKind` value)."""
    created: datetime = Field(default_factory=utc_now)
    """When it was first proposed (UTC)."""

    @field_validator("strategy")
    @classmethod
    def _validate_strategy(cls, v: str) -> str:
        return check_cap("strategy", v, STRATEGY_CAP)

    @field_validator("claim")
    @classmethod
    def _validate_claim(cls, v: str) -> str:
        return check_cap("claim", v, CLAIM_CAP)


class EvaluationRecord(Record):
    """The guard's evaluation of one candidate, as stored."""

    id: int
    """Row id."""
    candidate_id: int
    """The candidate judged."""
    agent_id: str | None
    """The candidate's agent (None when the user gave it)."""
    against_incumbent_id: int | None
    """The incumbent it was judged against; None for the reference."""
    evaluation: Evaluation
    """The full evaluation: verdict, status, numbers, per-workload results."""
    created: datetime
    """When it was recorded (UTC)."""

    @property
    def verdict(self) -> Verdict:
        """The guard's verdict."""
        return self.evaluation.verdict


class VerdictOutcome(Record):
    """What `Store.record_verdict` wrote."""

    evaluation: EvaluationRecord
    """The stored evaluation."""
    finding: Finding | None
    """The finding the verdict taught, with its id; None if it taught none or was a duplicate."""
    evicted: tuple[int, ...] = ()
    """Ids of findings the retention policy dropped (may include the new one's)."""


class EventRecord(Record):
    """One entry of the campaign's event log."""

    id: int
    """Row id: events are ordered by it."""
    kind: str
    """What happened, for example `submitted`, `plateau`, `draft`, `stop`."""
    agent_id: str | None
    """The agent concerned, if any."""
    payload: dict[str, Any]
    """Details (JSON object)."""
    created: datetime
    """When it was logged (UTC)."""


class LlmCallRecord(Record):
    """One prompt sent to an LLM backend and what came back, kept for audit and replay."""

    id: int | None = None
    """Row id; None until stored."""
    agent_id: str = Field(min_length=1)
    """The campaign's id for the agent that asked."""
    step: int = Field(ge=0)
    """The agent's step number."""
    model: str
    """The model name as sent to the provider."""
    prompt: str
    """The exact prompt text sent (all messages, rendered)."""
    response: str | None = None
    """The response text; None when the call failed."""
    tokens_in: int | None = Field(default=None, ge=0)
    """Prompt tokens the provider reported."""
    tokens_out: int | None = Field(default=None, ge=0)
    """Completion tokens the provider reported."""
    cost_usd: float | None = Field(default=None, ge=0)
    """Cost in US dollars, when known."""
    error: str | None = None
    """The backend's error, when the call failed."""
    created: datetime = Field(default_factory=utc_now)
    """When the call was made (UTC)."""


class Counts(Record):
    """Campaign counters, for progress lines and the budget."""

    candidates: int
    """Distinct candidates proposed."""
    evaluated: int
    """Candidates with an evaluation."""
    pending: int
    """Candidates proposed but not yet evaluated."""
    verdicts: dict[str, dict[Verdict, int]]
    """Per agent id: how many of its candidates got each verdict (verdicts it never got are absent)."""


__all__ = [
    "utc_now", "stamp", "CampaignStatus", "CampaignMeta", "AgentState", "AgentRecord", "CandidateRecord",
    "EvaluationRecord", "VerdictOutcome", "EventRecord", "LlmCallRecord", "Counts",
]
