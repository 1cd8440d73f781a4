"""The plateau rule: when an agent stops improving, make it change course, then restart it, then retire it.

Only benchmarked non-improvements (REVERT, ACCEPT) move the counter; KEEP resets it; gate and
correctness failures (REJECT) leave it alone. At `limit` consecutive non-improvements:
1st plateau -> the agent must draft (change algorithm, language or data layout);
2nd plateau -> it restarts from another agent's best kernel;
3rd plateau -> it is retired.
Pure data and a pure function, so the campaign loop and its tests share one definition.
"""

from __future__ import annotations

from enum import Enum

from pydantic import BaseModel, ConfigDict

from kernelarc.guard.types import Verdict


class PlateauAction(str, Enum):
    """What the campaign must do after a verdict."""

    NONE = "none"
    DRAFT = "draft"
    """The agent's next proposal must change algorithm, language or layout."""
    RESTART = "restart"
    """The agent continues from another agent's best kernel."""
    RETIRE = "retire"
    """The agent proposes no more."""


class PlateauState(BaseModel):
    """Per-agent plateau bookkeeping, stored with the agent so a resumed campaign continues it."""

    model_config = ConfigDict(frozen=True)

    streak: int = 0
    """Consecutive benchmarked non-improvements."""
    plateaus: int = 0
    """Plateaus hit so far (0, 1 = drafted, 2 = restarted)."""
    must_draft: bool = False
    """The next proposal must be a draft."""


def after_verdict(state: PlateauState, verdict: Verdict, limit: int) -> tuple[PlateauState, PlateauAction]:
    """The new state and the action to take after one verdict of the agent's candidate."""
    if verdict is Verdict.KEEP:
        return state.model_copy(update={"streak": 0}), PlateauAction.NONE
    if verdict is Verdict.REJECT:
        return state, PlateauAction.NONE
    streak = state.streak + 1
    if streak < limit:
        return state.model_copy(update={"streak": streak}), PlateauAction.NONE
    plateaus = state.plateaus + 1
    action = {1: PlateauAction.DRAFT, 2: PlateauAction.RESTART}.get(plateaus, PlateauAction.RETIRE)
    return PlateauState(streak=0, plateaus=plateaus, must_draft=action is PlateauAction.DRAFT), action


def draft_done(state: PlateauState) -> PlateauState:
    """A draft reached the guard: the obligation is met."""
    return state.model_copy(update={"must_draft": False})


__all__ = ["PlateauAction", "PlateauState", "after_verdict", "draft_done"]
