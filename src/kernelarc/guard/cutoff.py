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
    """A moveable deadline: `at` (time.monotonic()) or never, and why it was set."""

    def __init__(self, at: float | None = None, why: str = "the time limit passed"):
        self.at = at
        """The monotonic time past which evaluations are cut; None: never."""
        self.why = why
        """Words for the user: what cut the evaluations."""

    def now(self, why: str) -> None:
        """Cut from now on (a float assignment: safe from a signal handler or another thread)."""
        self.why = why
        self.at = time.monotonic()

    def passed(self) -> bool:
        return self.at is not None and time.monotonic() >= self.at

    def bound(self, deadline: float) -> float:
        """The earlier of `deadline` and the cutoff."""
        return deadline if self.at is None else min(deadline, self.at)

    def check(self) -> None:
        """Raise EvaluationCut when the cutoff has passed."""
        if self.passed():
            raise EvaluationCut(self.why)


__all__ = ["Cutoff", "EvaluationCut"]
