"""When the caller needs evaluations to end, whatever stage they are in: a campaign's time limit, a
second Ctrl-C. Imports without torch.

A `Cutoff` is a deadline on time.monotonic() that can be moved to now from another thread. The judge
passes it down to every wait (the device lock, each side's reply): once it passes, the sides of the
evaluation are killed and `EvaluationCut` is raised instead of a verdict. A cut evaluation says
nothing about the candidate: the caller records it as pending and judges it again later.
"""

from __future__ import annotations

import time


class EvaluationCut(Exception):
    """The evaluation was ended by its caller's cutoff before it reached a verdict."""


class Cutoff:
    """A moveable deadline: `at` (time.monotonic()) or never, and why it was set; with a `parent`, the
    earlier of its own and the parent's (a campaign's round cut before the final timings' reserve, still
    cut at once by a second Ctrl-C that moves the campaign's)."""

    def __init__(self, at: float | None = None, why: str = "the time limit passed", parent: Cutoff | None = None):
        self._at, self._why, self.parent = at, why, parent

    @property
    def at(self) -> float | None:
        """The monotonic time past which evaluations are cut; None: never."""
        return min((t for t in (self._at, self.parent and self.parent.at) if t is not None), default=None)

    @at.setter
    def at(self, value: float | None) -> None:
        self._at = value

    @property
    def why(self) -> str:
        """Words for the user: what cut the evaluations (the parent's words when the parent's comes first)."""
        if self.parent is not None and self.parent.at is not None and self.parent.at == self.at:
            return self.parent.why
        return self._why

    @why.setter
    def why(self, value: str) -> None:
        self._why = value

    def before(self, at: float, why: str) -> Cutoff:
        """A cutoff at `at`, or at this one's when that comes first."""
        return Cutoff(at, why, parent=self)

    def now(self, why: str) -> None:
        """Cut from now on (float assignments: safe from a signal handler or another thread)."""
        self._why = why
        self._at = time.monotonic()

    def passed(self) -> bool:
        at = self.at
        return at is not None and time.monotonic() >= at

    def bound(self, deadline: float) -> float:
        """The earlier of `deadline` and the cutoff."""
        at = self.at
        return deadline if at is None else min(deadline, at)

    def check(self) -> None:
        """Raise EvaluationCut when the cutoff has passed."""
        if self.passed():
            raise EvaluationCut(self.why)


__all__ = ["Cutoff", "EvaluationCut"]
