"""Forward-only schema migrations, and the campaign store's list of them.

A migration is a function `m<NNN>_<what>(conn)` registered in order on a `Migrations` list; the names
applied to a database are kept in its `_migrations` table, so `migrate(conn)` applies only what is
missing and is idempotent. A released migration is never edited: a change is a new migration. The
long-term memory keeps its own list in `longterm.py`. Budget: 200 lines.
"""

from __future__ import annotations

import re
import sqlite3
from datetime import datetime, timezone
from typing import Callable

from kernelarc.memory.errors import StoreError

Migration = Callable[[sqlite3.Connection], None]
_NAME = re.compile(r"m(\d{3})_[a-z0-9_]+")


class Migrations:
    """An ordered list of forward-only migrations for one kind of database.

    The kind is stamped in the file header (`PRAGMA application_id`), so a database of another kind,
    or another program's, is refused instead of being migrated into something neither.
    """

    def __init__(self, kind: str, application_id: int) -> None:
        self.kind = kind
        """What the database is, in words, for error messages."""
        self.application_id = application_id
        """The file-header stamp of this kind of database."""
        self.steps: list[Migration] = []

    def register(self, fn: Migration) -> Migration:
        """Decorator: append `fn`, whose name must be `m<NNN>_<what>` numbered one past the last."""
        match = _NAME.fullmatch(fn.__name__)
        if match is None or int(match.group(1)) != len(self.steps) + 1:
            raise ValueError(f"migration {fn.__name__!r} must be named m{len(self.steps) + 1:03d}_<what>")
        self.steps.append(fn)
        return fn

    @property
    def names(self) -> list[str]:
        """Names of the registered migrations, in order."""
        return [fn.__name__ for fn in self.steps]

    def apply(self, conn: sqlite3.Connection) -> list[str]:
        """Apply the missing migrations in one transaction; return the names applied (none if up to date).

        Raises:
            StoreError: the database is of another kind, or has migrations this kernelarc does not know.
        """
        conn.execute("BEGIN IMMEDIATE")
        try:
            self._claim(conn)
            conn.execute("CREATE TABLE IF NOT EXISTS _migrations (name TEXT PRIMARY KEY, applied TEXT NOT NULL)")
            done = {row[0] for row in conn.execute("SELECT name FROM _migrations")}
            unknown = sorted(done - set(self.names))
            if unknown:
                raise StoreError(f"database was written by a newer kernelarc (unknown migrations {unknown})")
            applied = []
            for fn in self.steps:
                if fn.__name__ not in done:
                    fn(conn)
                    conn.execute("INSERT INTO _migrations (name, applied) VALUES (?, ?)",
                                 (fn.__name__, datetime.now(timezone.utc).isoformat()))
                    applied.append(fn.__name__)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
        return applied

    def _claim(self, conn: sqlite3.Connection) -> None:
        """Stamp an empty database as this kind; refuse one stamped otherwise or holding foreign tables."""
        stamp = conn.execute("PRAGMA application_id").fetchone()[0]
        if stamp == 0 and conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()[0] == 0:
            conn.execute(f"PRAGMA application_id = {self.application_id}")
        elif stamp != self.application_id:
            raise StoreError(f"not a kernelarc {self.kind} (application id {stamp:#x}, expected {self.application_id:#x})")


# The findings table as first released, shared by the campaign store and the long-term memory.
# Frozen: the CHECK limits are text.py's caps at release; a new cap is a new migration in both lists.
FINDINGS_TABLE_V1 = (
    """CREATE TABLE findings (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL CHECK (kind IN ('win', 'trap')),
    kernel_type TEXT NOT NULL,
    task TEXT NOT NULL,
    strategy TEXT NOT NULL CHECK (length(strategy) <= 160),
    reflection TEXT NOT NULL CHECK (length(reflection) <= 1200),
    verdict TEXT NOT NULL CHECK ((kind = 'win') = (verdict = 'KEEP') AND verdict IN ('KEEP', 'REVERT', 'REJECT')),
    speedup REAL,
    reason TEXT NOT NULL CHECK (length(reason) <= 400),
    candidate_id INTEGER NOT NULL, -- the candidate's id in the campaign that produced the finding
    candidate_hash TEXT NOT NULL,
    created TEXT NOT NULL,
    UNIQUE (kind, candidate_hash)
)""",
    "CREATE INDEX findings_by_kernel_type ON findings (kernel_type, kind)",
)

CAMPAIGN = Migrations("campaign store", application_id=0x4B41_4331)  # "KAC1"
"""The campaign store's migrations."""


@CAMPAIGN.register
def m001_initial(conn: sqlite3.Connection) -> None:
    """One campaign: its task and options, agents, candidates, evaluations, findings, events, LLM calls."""
    conn.execute("""CREATE TABLE campaign (
    id INTEGER PRIMARY KEY CHECK (id = 1), -- one campaign per database
    task_name TEXT NOT NULL,
    task_path TEXT NOT NULL,
    kernel_type TEXT NOT NULL,
    seed INTEGER NOT NULL,
    options TEXT NOT NULL, -- JSON object
    retention TEXT NOT NULL, -- RetentionPolicy.spec, e.g. 'unbounded' or '16/8'
    status TEXT NOT NULL CHECK (status IN ('running', 'finished')),
    stop_reason TEXT,
    started TEXT NOT NULL
)""")
    conn.execute("""CREATE TABLE agents (
    id TEXT PRIMARY KEY,
    strategy TEXT NOT NULL,
    backend TEXT NOT NULL,
    incumbent_id INTEGER REFERENCES candidates (id), -- NULL: the reference
    plateau INTEGER NOT NULL CHECK (plateau >= 0),
    drafts INTEGER NOT NULL CHECK (drafts >= 0),
    must_draft INTEGER NOT NULL CHECK (must_draft IN (0, 1)),
    retired INTEGER NOT NULL CHECK (retired IN (0, 1)),
    steps INTEGER NOT NULL CHECK (steps >= 0), -- proposals made: the agent's next step number on resume
    incumbent_speedup REAL NOT NULL CHECK (incumbent_speedup > 0), -- the incumbent's speedup over the reference
    idle INTEGER NOT NULL DEFAULT 0 CHECK (idle >= 0), -- steps in a row with nothing to evaluate
    created TEXT NOT NULL
)""")
    conn.execute("""CREATE TABLE candidates (
    id INTEGER PRIMARY KEY,
    hash TEXT NOT NULL UNIQUE, -- SHA-256 of the normalized source: one row per distinct kernel
    source TEXT NOT NULL,
    parent_id INTEGER REFERENCES candidates (id),
    agent_id TEXT REFERENCES agents (id), -- the first agent to propose it; NULL: given by the user
    strategy TEXT NOT NULL CHECK (length(strategy) <= 160),
    claim TEXT NOT NULL CHECK (length(claim) <= 160),
    language TEXT NOT NULL,
    kind TEXT NOT NULL,
    created TEXT NOT NULL
)""")
    conn.execute("""CREATE TABLE evaluations (
    id INTEGER PRIMARY KEY,
    candidate_id INTEGER NOT NULL UNIQUE REFERENCES candidates (id), -- a candidate is evaluated once
    against_incumbent_id INTEGER REFERENCES candidates (id), -- NULL: judged against the reference
    verdict TEXT NOT NULL CHECK (verdict IN ('KEEP', 'ACCEPT', 'REVERT', 'REJECT')),
    status TEXT NOT NULL,
    latency_ms REAL,
    speedup REAL,
    evaluation TEXT NOT NULL, -- the guard's Evaluation as JSON, per-workload numbers included
    created TEXT NOT NULL
)""")
    conn.execute("CREATE INDEX evaluations_by_verdict ON evaluations (verdict, latency_ms)")
    for statement in FINDINGS_TABLE_V1:
        conn.execute(statement)
    conn.execute("""CREATE TABLE events (
    id INTEGER PRIMARY KEY,
    kind TEXT NOT NULL,
    agent_id TEXT,
    payload TEXT NOT NULL, -- JSON object
    created TEXT NOT NULL
)""")
    conn.execute("""CREATE TABLE llm_calls (
    id INTEGER PRIMARY KEY,
    agent_id TEXT NOT NULL,
    step INTEGER NOT NULL,
    model TEXT NOT NULL,
    prompt TEXT NOT NULL,
    response TEXT,
    tokens_in INTEGER,
    tokens_out INTEGER,
    cost_usd REAL,
    error TEXT,
    created TEXT NOT NULL
)""")


@CAMPAIGN.register
def m002_llm_call_details(conn: sqlite3.Connection) -> None:
    """What kind of call each LLM call was and how long it took: the keys replay serves responses by."""
    conn.execute("""CREATE TABLE llm_call_details (
    call_id INTEGER PRIMARY KEY REFERENCES llm_calls (id),
    kind TEXT NOT NULL CHECK (kind IN ('propose', 'reflect')),
    latency_s REAL CHECK (latency_s >= 0) -- wall seconds of the call, SDK retries included
)""")


def migrate(conn: sqlite3.Connection) -> list[str]:
    """Bring a campaign store's schema up to date; return the migrations applied."""
    return CAMPAIGN.apply(conn)


__all__ = ["Migration", "Migrations", "CAMPAIGN", "FINDINGS_TABLE_V1", "migrate"]
