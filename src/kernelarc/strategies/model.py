"""What a strategy is: a named direction of optimization an agent is bound to.

A strategy is data, not code: a scope that tells an agent what it may change, a playbook an LLM
agent reads, and the id of the built-in move family an offline agent uses. Imports without torch;
must not import agents or campaign. Budget: under 100 lines.
"""

from __future__ import annotations

import re

from pydantic import field_validator

from kernelarc.task.classify import KernelType
from kernelarc.task.model import Frozen

_NAME = re.compile(r"^[a-z][a-z0-9_-]*$")


class Strategy(Frozen):
    """One strategy family: what it changes, how an LLM agent should go about it, and its built-in moves."""

    name: str
    """Short id (lowercase, digits, `_` or `-`), used on the command line and in findings: `tensor_cores`."""
    title: str
    """Human title for reports: `Tensor cores`."""
    scope: str
    """One paragraph: what this strategy changes and what it leaves alone."""
    playbook: str
    """Markdown for LLM agents: concrete moves in trial order, what to measure, known traps."""
    applies_to: tuple[KernelType, ...] = ()
    """Kernel types (`Task.kernel_type`) it is most relevant to; empty means every type."""
    builtin_moves: str | None = None
    """Id of the built-in move family offline agents use (mapped to code by the built-in agents); None: none."""

    @field_validator("name")
    @classmethod
    def _validate_name(cls, v: str) -> str:
        if not _NAME.match(v):
            raise ValueError(f"strategy name must be lowercase letters, digits, '_' or '-' and start with a letter, "
                             f"got {v!r}")
        return v

    @field_validator("title", "playbook")
    @classmethod
    def _validate_not_blank(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("must not be empty")
        return v

    @field_validator("scope")
    @classmethod
    def _validate_scope(cls, v: str) -> str:
        text = v.strip()
        if not text:
            raise ValueError("scope must not be empty")
        if "\n\n" in text:
            raise ValueError(f"scope must be one paragraph, got a blank line in {text[:60]!r}...")
        return text

    def is_relevant(self, kernel_type: str) -> bool:
        """True when this strategy targets `kernel_type` or every type."""
        return not self.applies_to or kernel_type in self.applies_to


__all__ = ["Strategy"]
