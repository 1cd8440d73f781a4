"""Findings: the verified conclusions agents share, how many are kept, and which an agent is shown.

A finding is made only from a guard verdict, by `finding_from_verdict`: a KEEP teaches a win, a
REJECT (or a REVERT with its reason) a trap, an ACCEPT nothing. Agent-written text is clipped to the
caps there; a `Finding` built by hand with over-cap text is refused. `RetentionPolicy` picks what a
full memory drops; `recall` ranks what an agent sees. Pure data and functions; the SQL is in
`finding_rows.py`. Imports without torch. Budget: 250 lines.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import dataclass
from datetime import datetime, timezone
from enum import Enum
from typing import Iterable

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from kernelarc.guard.types import Evaluation, Verdict
from kernelarc.memory.errors import RetentionSpecError
from kernelarc.memory.text import REASON_CAP, REFLECTION_CAP, STRATEGY_CAP, check_cap, clip_text


class FindingKind(str, Enum):
    """What a finding teaches."""

    WIN = "win"
    """A KEEP: a change that made the kernel measurably faster than its incumbent."""
    TRAP = "trap"
    """A REJECT or a REVERT: a change that broke the kernel or made it slower."""


_KIND_OF_VERDICT = {Verdict.KEEP: FindingKind.WIN, Verdict.REJECT: FindingKind.TRAP, Verdict.REVERT: FindingKind.TRAP}


class Finding(BaseModel):
    """One conclusion, resting on one guard verdict."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    id: int | None = None
    """Row id in the database it was read from; None before it is stored."""
    kind: FindingKind
    """win (from a KEEP) or trap (from a REJECT or REVERT)."""
    kernel_type: str = Field(min_length=1)
    """Coarse kernel family it applies to (gemm, attention, norm, reduction, elementwise, ...)."""
    task: str
    """Name of the task it was learned on."""
    strategy: str
    """The strategy of the candidate it rests on (at most 160 characters)."""
    reflection: str
    """What changed, on which shapes, the measured effect, why (at most 1,200 characters)."""
    verdict: Verdict
    """The guard's verdict it rests on: KEEP for a win, REJECT or REVERT for a trap."""
    speedup: float | None = Field(default=None, gt=0)
    """Incumbent time / candidate time as the guard measured it; required for a win, None for a REJECT."""
    reason: str = ""
    """The guard's one-line reason (at most 400 characters); required for a trap."""
    candidate_id: int
    """The candidate's id in the campaign that produced it."""
    candidate_hash: str = Field(min_length=1)
    """Hash of the candidate's normalized source: the same kernel is one finding of each kind."""
    created: datetime = Field(default_factory=lambda: datetime.now(timezone.utc))
    """When the verdict was recorded (UTC)."""

    @field_validator("strategy")
    @classmethod
    def _validate_strategy(cls, v: str) -> str:
        return check_cap("strategy", v, STRATEGY_CAP)

    @field_validator("reflection")
    @classmethod
    def _validate_reflection(cls, v: str) -> str:
        return check_cap("reflection", v, REFLECTION_CAP)

    @field_validator("reason")
    @classmethod
    def _validate_reason(cls, v: str) -> str:
        return check_cap("reason", v, REASON_CAP)

    @model_validator(mode="after")
    def _validate_evidence(self) -> "Finding":
        if _KIND_OF_VERDICT.get(self.verdict) is not self.kind:
            raise ValueError(f"a {self.kind.value} cannot rest on verdict {self.verdict.value}")
        if self.kind is FindingKind.WIN and self.speedup is None:
            raise ValueError("a win needs the measured speedup, got None")
        if self.kind is FindingKind.TRAP and not self.reason.strip():
            raise ValueError(f"a trap needs the guard's reason, got {self.reason!r}")
        return self


def finding_from_verdict(
    evaluation: Evaluation, *, kernel_type: str, task: str, strategy: str, reflection: str,
    candidate_id: int, candidate_hash: str,
) -> Finding | None:
    """The finding a guard verdict teaches, or None: the only way the campaign makes findings.

    Args:
        evaluation: the guard's evaluation; its verdict, speedup and reason are the evidence.
        kernel_type: the task's kernel family, the key findings are shared under.
        task: the task's name.
        strategy: the candidate's strategy, clipped to 160 characters.
        reflection: the agent's reflection, clipped to 1,200 characters; empty means the guard's reason.
        candidate_id: the candidate's id in the campaign store.
        candidate_hash: the candidate's content hash.

    Returns:
        A win for KEEP; a trap for REJECT, and for REVERT when the guard gave a reason; None for
        ACCEPT (a stepping stone teaches nothing yet) and for a REVERT without a reason.
    """
    kind = _KIND_OF_VERDICT.get(evaluation.verdict)
    reason = clip_text(evaluation.reason, REASON_CAP, one_line=True)
    if kind is None or (evaluation.verdict is Verdict.REVERT and not reason):
        return None
    return Finding(
        kind=kind, kernel_type=kernel_type, task=task,
        strategy=clip_text(strategy, STRATEGY_CAP, one_line=True),
        reflection=clip_text(reflection, REFLECTION_CAP) or clip_text(evaluation.reason, REFLECTION_CAP),
        verdict=evaluation.verdict, speedup=evaluation.speedup, reason=reason,
        candidate_id=candidate_id, candidate_hash=candidate_hash,
    )


def _newest_first(f: Finding) -> tuple:
    return (-f.created.timestamp(), f.candidate_hash)


def _value_order(f: Finding) -> tuple:
    """Most valuable first: wins by measured speedup, traps by recency; ties by the newer, then the hash."""
    if f.kind is FindingKind.WIN:
        return (-(f.speedup or 0.0), *_newest_first(f))
    return _newest_first(f)


_SPEC = re.compile(r"(\d+|unbounded)(?:/(\d+|unbounded))?")


class RetentionPolicy(BaseModel):
    """How many findings of each kind are kept per kernel type; None keeps every one."""

    model_config = ConfigDict(frozen=True, extra="forbid", use_attribute_docstrings=True)

    wins: int | None = Field(default=None, ge=0)
    """Most wins kept per kernel type; those with the smallest speedup go first."""
    traps: int | None = Field(default=None, ge=0)
    """Most traps kept per kernel type; the oldest go first."""

    @classmethod
    def parse(cls, spec: str) -> "RetentionPolicy":
        """`unbounded`, `N` (N of each kind) or `WINS/TRAPS` (each a number or `unbounded`).

        Raises:
            RetentionSpecError: the spec has another form.
        """
        match = _SPEC.fullmatch(spec.strip().lower())
        if match is None:
            raise RetentionSpecError(f"retention must be 'unbounded', N or WINS/TRAPS (e.g. 16/8), got {spec!r}")
        wins, traps = match.group(1), match.group(2) or match.group(1)
        return cls(wins=None if wins == "unbounded" else int(wins), traps=None if traps == "unbounded" else int(traps))

    @property
    def spec(self) -> str:
        """The string `parse` reads back into this policy."""
        wins, traps = ("unbounded" if n is None else str(n) for n in (self.wins, self.traps))
        return wins if wins == traps else f"{wins}/{traps}"

    def cap(self, kind: FindingKind) -> int | None:
        """Most findings of `kind` kept per kernel type, None for no limit."""
        return self.wins if kind is FindingKind.WIN else self.traps

    def to_evict(self, findings: Iterable[Finding]) -> list[Finding]:
        """The findings to drop so that no (kernel type, kind) exceeds its cap: the least valuable of each."""
        groups: dict[tuple[str, FindingKind], list[Finding]] = defaultdict(list)
        for f in findings:
            groups[(f.kernel_type, f.kind)].append(f)
        evicted = []
        for (_, kind), group in sorted(groups.items()):
            cap = self.cap(kind)
            if cap is not None:
                evicted += sorted(group, key=_value_order)[cap:]
        return evicted


UNBOUNDED = RetentionPolicy()
"""Keep every finding."""
DEFAULT_RETENTION = RetentionPolicy(wins=16, traps=16)
"""The campaign's default: 16 wins and 16 traps per kernel type."""


@dataclass(frozen=True)
class Recall:
    """What an agent is shown from memory, most relevant first."""

    wins: tuple[Finding, ...]
    """Wins: the asking strategy's first, then by measured speedup."""
    traps: tuple[Finding, ...]
    """Traps: the asking strategy's first, then newest first."""

    @property
    def all(self) -> tuple[Finding, ...]:
        """Wins then traps, each in rank order: what an agent's context lists."""
        return self.wins + self.traps


def _same_strategy(a: str, b: str) -> bool:
    return a.strip().casefold() == b.strip().casefold()


def recall(findings: Iterable[Finding], *, kernel_type: str, strategy: str, limit: int) -> Recall:
    """Rank findings of `kernel_type` for an agent following `strategy`; keep `limit` of each kind.

    Findings of the same kind and candidate hash count once (the first given wins), so a caller merging
    sources passes the freshest first. Ranking is deterministic: same strategy first, then wins by
    measured speedup and traps by recency, ties by the newer, then the candidate hash.
    """
    if limit < 0:
        raise ValueError(f"limit must be >= 0, got {limit}")
    seen: set[tuple[FindingKind, str]] = set()
    ranked: dict[FindingKind, list[Finding]] = {FindingKind.WIN: [], FindingKind.TRAP: []}
    for f in findings:
        if f.kernel_type == kernel_type and (f.kind, f.candidate_hash) not in seen:
            seen.add((f.kind, f.candidate_hash))
            ranked[f.kind].append(f)
    for group in ranked.values():
        group.sort(key=lambda f: (not _same_strategy(f.strategy, strategy), *_value_order(f)))
    return Recall(wins=tuple(ranked[FindingKind.WIN][:limit]), traps=tuple(ranked[FindingKind.TRAP][:limit]))


__all__ = [
    "FindingKind", "Finding", "finding_from_verdict", "RetentionPolicy", "UNBOUNDED", "DEFAULT_RETENTION",
    "Recall", "recall",
]
