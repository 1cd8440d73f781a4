"""The user's long-term memory: findings kept across campaigns, recalled by later ones.

It lives at `user_data_dir()/memory.sqlite` (under $KERNELARC_HOME when set) with the same findings
schema as a campaign store. A campaign `absorb`s its findings at the end (a kernel already known as a
win or a trap is not added twice); `recall` merges them with the running campaign's. Starting clean
is the campaign's choice: it simply does not open this. Budget: 150 lines.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from kernelarc.memory import finding_rows
from kernelarc.memory.db import Database
from kernelarc.memory.errors import UnknownFindingError
from kernelarc.memory.findings import UNBOUNDED, Finding, FindingKind, Recall, RetentionPolicy, recall
from kernelarc.memory.migrations import FINDINGS_TABLE_V1, Migrations
from kernelarc.paths import user_data_dir
from kernelarc.memory.store import Store

LONGTERM_FILE = "memory.sqlite"

LONGTERM = Migrations("long-term memory", application_id=0x4B41_4C31)  # "KAL1"
"""The long-term memory's migrations."""


@LONGTERM.register
def m001_initial(conn: sqlite3.Connection) -> None:
    """The findings table, as in the campaign store."""
    for statement in FINDINGS_TABLE_V1:
        conn.execute(statement)


def longterm_path() -> Path:
    """Where the user's long-term memory lives."""
    return user_data_dir() / LONGTERM_FILE


class LongTermMemory(Database):
    """Findings from every finished campaign of this user. Safe to share between threads of one process."""

    def __init__(self, path: str | Path | None = None) -> None:
        """Open the memory at `path` (default: `longterm_path()`), creating it if needed.

        Raises:
            StoreError: the file cannot be opened, is not SQLite, or was written by a newer kernelarc.
        """
        super().__init__(longterm_path() if path is None else path, LONGTERM)

    def absorb(self, store: Store, policy: RetentionPolicy = UNBOUNDED, leave_out: frozenset[int] = frozenset()) -> int:
        """Copy a campaign's findings in (skipping kernels already known, and those of the candidates in
        `leave_out`: kernels the campaign disqualified, whose first verdict later runs contradicted), then
        apply `policy`.

        Returns:
            How many findings were added (before any eviction).
        """
        incoming = [f for f in store.findings() if f.candidate_id not in leave_out]
        with self._write() as conn:
            added = [f for f in incoming if finding_rows.insert(conn, f.model_copy(update={"id": None}))]
            finding_rows.enforce(conn, policy, {f.kernel_type for f in incoming})
        return len(added)

    def findings(self, kernel_type: str | None = None, kind: FindingKind | None = None) -> list[Finding]:
        """Stored findings (of one kernel type and kind if given), in the order they were absorbed."""
        with self._read() as conn:
            return finding_rows.select(conn, kernel_type, kind)

    def finding(self, finding_id: int) -> Finding:
        """The finding with this id.

        Raises:
            UnknownFindingError: there is none.
        """
        with self._read() as conn:
            found = finding_rows.get(conn, finding_id)
        if found is None:
            raise UnknownFindingError(f"no finding #{finding_id} in the long-term memory at {self.path}")
        return found

    def recall(self, kernel_type: str, strategy: str, limit: int, campaign: Store | None = None) -> Recall:
        """Findings for an agent following `strategy`: the campaign's (if given) merged with these, ranked.

        A kernel known to both counts once, as the campaign recorded it (see `findings.recall`).
        """
        ours = campaign.findings(kernel_type) if campaign is not None else []
        return recall(ours + self.findings(kernel_type), kernel_type=kernel_type, strategy=strategy, limit=limit)

    def clear(self, kernel_type: str | None = None) -> int:
        """Delete every finding (of one kernel type if given); return how many."""
        with self._write() as conn:
            return finding_rows.delete(conn, kernel_type)


__all__ = ["LongTermMemory", "longterm_path", "LONGTERM", "LONGTERM_FILE"]
