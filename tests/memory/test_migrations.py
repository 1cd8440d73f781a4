import sqlite3

import pytest

from kernelarc.memory import Store, StoreError
from kernelarc.memory.longterm import LONGTERM
from kernelarc.memory.migrations import CAMPAIGN, Migrations, migrate

CAMPAIGN_TABLES = {"_migrations", "campaign", "agents", "candidates", "evaluations", "findings", "events", "llm_calls",
                   "llm_call_details"}


def _tables(conn: sqlite3.Connection) -> set[str]:
    return {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}


def test_migrate_from_blank_creates_every_table_and_records_the_migrations():
    conn = sqlite3.connect(":memory:", isolation_level=None)
    assert migrate(conn) == CAMPAIGN.names == ["m001_initial", "m002_llm_call_details"]
    assert _tables(conn) == CAMPAIGN_TABLES
    assert [r[0] for r in conn.execute("SELECT name FROM _migrations")] == ["m001_initial", "m002_llm_call_details"]


def test_migrate_again_applies_nothing_and_keeps_data():
    conn = sqlite3.connect(":memory:", isolation_level=None)
    migrate(conn)
    conn.execute("INSERT INTO events (kind, agent_id, payload, created) VALUES ('x', NULL, '{}', 'now')")
    assert migrate(conn) == []
    assert conn.execute("SELECT COUNT(*) FROM events").fetchone()[0] == 1


def test_longterm_schema_holds_only_findings():
    conn = sqlite3.connect(":memory:", isolation_level=None)
    LONGTERM.apply(conn)
    assert _tables(conn) == {"_migrations", "findings"}


def test_registration_refuses_misnamed_or_misnumbered_migrations():
    steps = Migrations("test database", application_id=1)

    def m002_skips_one(conn):
        pass

    def add_index(conn):
        pass

    with pytest.raises(ValueError, match="must be named m001_<what>"):
        steps.register(m002_skips_one)
    with pytest.raises(ValueError, match="'add_index'"):
        steps.register(add_index)


def test_a_failing_migration_leaves_nothing_behind():
    steps = Migrations("test database", application_id=1)

    @steps.register
    def m001_half(conn):
        conn.execute("CREATE TABLE t (x)")
        raise RuntimeError("boom")

    conn = sqlite3.connect(":memory:", isolation_level=None)
    with pytest.raises(RuntimeError, match="boom"):
        steps.apply(conn)
    assert _tables(conn) == set()


def test_database_from_a_newer_kernelarc_is_refused(tmp_path):
    path = tmp_path / "c.sqlite"
    Store(path).close()
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO _migrations VALUES ('m999_future', 'now')")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="newer kernelarc.*m999_future"):
        Store(path)


def test_another_programs_database_is_left_alone(tmp_path):
    path = tmp_path / "other.sqlite"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE notes (text)")
    conn.commit()
    conn.close()
    with pytest.raises(StoreError, match="other.sqlite: not a kernelarc campaign store"):
        Store(path)
    assert _tables(sqlite3.connect(path)) == {"notes"}


def test_a_file_that_is_not_sqlite_is_refused_in_one_line(tmp_path):
    path = tmp_path / "notes.txt"
    path.write_text("not a database, just some text that is long enough to have a header " * 20)
    with pytest.raises(StoreError, match="cannot open database .*notes.txt"):
        Store(path)


def test_store_opens_in_wal_mode_with_foreign_keys(tmp_path):
    path = tmp_path / "sub" / "c.sqlite"
    with Store(path) as store:
        with pytest.raises(sqlite3.IntegrityError, match="FOREIGN KEY"):
            store.add_candidate(hash="h", source="s", agent_id="nobody", strategy="tiling", claim="",
                                language="pytorch", kind="module")
    assert sqlite3.connect(path).execute("PRAGMA journal_mode").fetchone()[0] == "wal"
