"""Caps on the free text agents write into the store, and the one way to fit text under a cap.

Caps keep shared memory to conclusions, never transcripts: a finding's strategy and a candidate's
claim fit in one line, a reflection in a paragraph. Records refuse over-cap text (`check_cap`);
callers holding an agent's raw words clip them first (`clip_text`). Imports nothing of kernelarc.
Budget: 80 lines.
"""

from __future__ import annotations

import re

STRATEGY_CAP = 160
"""Characters in a strategy (a candidate's or a finding's)."""
CLAIM_CAP = 160
"""Characters in a candidate's claim: what the agent says the change does."""
REFLECTION_CAP = 1200
"""Characters in a finding's reflection: what changed, on which shapes, the measured effect, why."""
REASON_CAP = 400
"""Characters of the guard's reason kept on a trap (a reason can carry a compiler message)."""

ELLIPSIS = "…"
_WORD_BACKOFF = 0.8  # cut at the last space if it lies in the last fifth of the allowed text
_SPACES = re.compile(r"\s+")


def clip_text(text: str, cap: int, *, one_line: bool = False) -> str:
    """Fit agent-written text under `cap` characters, cutting at a word boundary with an ellipsis.

    Args:
        text: the raw text.
        cap: the most characters the result may have (at least 1).
        one_line: collapse every run of whitespace, newlines included, to one space.

    Returns:
        `text` stripped (and collapsed) if it fits, else a prefix ending in "…" of at most `cap` characters.
    """
    if cap < 1:
        raise ValueError(f"cap must be at least 1, got {cap}")
    text = _SPACES.sub(" ", text).strip() if one_line else text.strip()
    if len(text) <= cap:
        return text
    cut = text[: cap - len(ELLIPSIS)]
    space = max(cut.rfind(" "), cut.rfind("\n"))
    if space >= len(cut) * _WORD_BACKOFF:
        cut = cut[:space]
    return cut.rstrip(" \t\n,;:-") + ELLIPSIS


def check_cap(field: str, value: str, cap: int) -> str:
    """Return `value` if it has at most `cap` characters; otherwise raise ValueError quoting its length."""
    if len(value) > cap:
        raise ValueError(f"{field} has {len(value)} characters, over the cap of {cap}: {value[:60]!r}…")
    return value


__all__ = ["STRATEGY_CAP", "CLAIM_CAP", "REFLECTION_CAP", "REASON_CAP", "clip_text", "check_cap"]
