"""The plateau rule: when an agent stops improving, make it change course, then restart it, then retire it.

Only benchmarked non-improvements (REVERT, ACCEPT) move the counter; KEEP resets it; gate and
correctness failures (REJECT) leave it alone. At `limit` consecutive non-improvements:
1st plateau -> the agent must draft (change algorithm, language or data layout);
2nd plateau -> it restarts from another agent's best kernel;
3rd plateau -> it is retired.
A pure function over the stored `AgentState`, so a resumed campaign continues exactly where it was.
"""

from __future__ import annotations

from enum import Enum

from kernelarc.guard.types import Verdict
from kernelarc.memory.records import AgentState


class PlateauAction(str, Enum):
    """What the campaign must do after a verdict."""

    NONE = "none"
    DRAFT = "draft"
    """The agent's next proposal must change algorithm, language or layout."""
    RESTART = "restart"
    """The agent continues from another agent's best kernel."""
    RETIRE = "retire"
    """The agent proposes no more."""


def after_verdict(state: AgentState, verdict: Verdict, limit: int) -> tuple[AgentState, PlateauAction]:
    """The new plateau counters and the action to take after one verdict of the agent's candidate."""
    if verdict is Verdict.KEEP:
        return state.model_copy(update={"plateau": 0}), PlateauAction.NONE
    if verdict is Verdict.REJECT:
        return state, PlateauAction.NONE
    streak = state.plateau + 1
    if streak < limit:
        return state.model_copy(update={"plateau": streak}), PlateauAction.NONE
    plateaus = state.drafts + 1
    action = {1: PlateauAction.DRAFT, 2: PlateauAction.RESTART}.get(plateaus, PlateauAction.RETIRE)
    update = {"plateau": 0, "drafts": plateaus, "must_draft": action is PlateauAction.DRAFT,
              "retired": action is PlateauAction.RETIRE}
    return state.model_copy(update=update), action


__all__ = ["PlateauAction", "after_verdict"]
