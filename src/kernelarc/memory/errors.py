"""Errors a user can cause through the memory: a bad store file, an unknown finding, a bad retention spec.

Each is a `kernelarc.errors.UserError`, printed by the CLI as one line (exit code 2). Budget: 30 lines.
"""

from __future__ import annotations

from kernelarc.errors import UserError


class StoreError(UserError):
    """A database file cannot be opened, is not a kernelarc store, or was written by a newer kernelarc."""


class UnknownFindingError(UserError):
    """No finding has the id the user gave."""


class RetentionSpecError(UserError):
    """A retention policy string is not `unbounded`, `N` or `WINS/TRAPS`."""


__all__ = ["StoreError", "UnknownFindingError", "RetentionSpecError"]
