"""Findings as rows: the SQL both the campaign store and the long-term memory use on their `findings` table.

Functions take an open connection inside the caller's transaction and never begin or commit one.
Budget: 80 lines.
"""

from __future__ import annotations

import sqlite3

from kernelarc.memory.findings import Finding, FindingKind, RetentionPolicy

_COLUMNS = ("kind", "kernel_type", "task", "strategy", "reflection", "verdict", "speedup", "reason",
            "candidate_id", "candidate_hash", "created")


def insert(conn: sqlite3.Connection, finding: Finding) -> Finding | None:
    """Store `finding`; return it with its id, or None if one of the same kind and candidate hash exists."""
    row = finding.model_dump(mode="json", include=set(_COLUMNS))
    cur = conn.execute(
        f"INSERT INTO findings ({', '.join(_COLUMNS)}) VALUES ({', '.join('?' * len(_COLUMNS))})"
        " ON CONFLICT (kind, candidate_hash) DO NOTHING",
        [row[c] for c in _COLUMNS],
    )
    return finding.model_copy(update={"id": cur.lastrowid}) if cur.rowcount else None


def select(conn: sqlite3.Connection, kernel_type: str | None = None, kind: FindingKind | None = None) -> list[Finding]:
    """Findings, oldest first, optionally of one kernel type and one kind."""
    rows = conn.execute(
        "SELECT * FROM findings WHERE (?1 IS NULL OR kernel_type = ?1) AND (?2 IS NULL OR kind = ?2) ORDER BY id",
        (kernel_type, kind.value if kind else None),
    )
    return [Finding.model_validate(dict(row)) for row in rows]


def get(conn: sqlite3.Connection, finding_id: int) -> Finding | None:
    """The finding with this id, or None."""
    row = conn.execute("SELECT * FROM findings WHERE id = ?", (finding_id,)).fetchone()
    return None if row is None else Finding.model_validate(dict(row))


def enforce(conn: sqlite3.Connection, policy: RetentionPolicy, kernel_types: set[str]) -> tuple[int, ...]:
    """Delete what `policy` evicts among the findings of `kernel_types`; return the deleted ids."""
    evicted = [f.id for kt in sorted(kernel_types) for f in policy.to_evict(select(conn, kt))]
    conn.executemany("DELETE FROM findings WHERE id = ?", [(i,) for i in evicted])
    return tuple(evicted)


def delete(conn: sqlite3.Connection, kernel_type: str | None = None) -> int:
    """Delete every finding (of one kernel type if given); return how many."""
    return conn.execute("DELETE FROM findings WHERE ?1 IS NULL OR kernel_type = ?1", (kernel_type,)).rowcount


__all__ = ["insert", "select", "get", "enforce", "delete"]
