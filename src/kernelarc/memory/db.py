"""One SQLite file opened the way every kernelarc database is: WAL, foreign keys, busy timeout, migrated.

One connection per object, guarded by a lock, so several threads and asyncio tasks of one process
can share it; other processes open their own (WAL lets readers run beside the one writer). Every
write is one transaction (`BEGIN IMMEDIATE` ... `COMMIT`, rolled back on any exception) or part of an
enclosing `transaction()`, so a killed process leaves the file as of its last commit. Budget: 100 lines.
"""

from __future__ import annotations

import sqlite3
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, Self

from kernelarc.memory.errors import StoreError
from kernelarc.memory.migrations import Migrations

BUSY_TIMEOUT_S = 30.0
"""How long a write waits for another process's transaction before failing."""


class Database:
    """Base of the campaign store and the long-term memory: the connection, its lock, transactions."""

    def __init__(self, path: str | Path, migrations: Migrations) -> None:
        """Open (creating it and its directory if needed) and migrate the database at `path`.

        Raises:
            StoreError: the file cannot be opened, is not SQLite, or was written by a newer kernelarc.
        """
        self.path = Path(path)
        self._lock = threading.RLock()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None,
                                         check_same_thread=False)
            mode = self._conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
        except (OSError, sqlite3.DatabaseError) as e:
            raise StoreError(f"cannot open database {self.path}: {e}") from None
        if mode != "wal":
            self._conn.close()
            raise StoreError(f"cannot use write-ahead logging on {self.path} (journal mode stays {mode!r})")
        self._conn.row_factory = sqlite3.Row
        self._conn.execute("PRAGMA foreign_keys = ON")
        self._conn.execute("PRAGMA synchronous = NORMAL")  # WAL + NORMAL: commits survive a killed process
        try:
            migrations.apply(self._conn)
        except StoreError as e:
            self._conn.close()
            raise StoreError(f"{self.path}: {e}") from None

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Make every read and write inside one transaction: a process killed within keeps none of them."""
        with self._write():
            yield

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, holding the database's write lock from its start; rolled back on error."""
        with self._lock:
            if self._conn.in_transaction:  # inside `transaction()`: its commit or rollback covers this write
                yield self._conn
                return
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            self._conn.execute("COMMIT")

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """One read transaction: every query inside sees the same snapshot."""
        with self._lock:
            if self._conn.in_transaction:  # inside `transaction()`: read what it wrote so far
                yield self._conn
                return
            self._conn.execute("BEGIN")
            try:
                yield self._conn
            finally:
                self._conn.execute("COMMIT")

    def close(self) -> None:
        """Close the connection; the object is unusable afterwards."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["Database", "BUSY_TIMEOUT_S"]
