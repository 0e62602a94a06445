"""ledger/storage/upgrade.py: a ledger of an earlier layout is brought to the described one, whatever
else differs in it, and the step leaves nothing of its scratch copy behind."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest

from ledger.storage.backend import is_pg_url
from service.ledger import Ledger
from tests.catalogue import catalogue
from tests.conftest import NewDb
from tests.old_layout import build_old_ledger, version_before

FIXTURE = "tests/data/2509.02480.record.json"


def _execute(db: str, *statements: str) -> list[Any]:
    """Run `statements` on the database at `db` outside any ledger; the last one's rows."""
    rows: list[Any] = []
    if is_pg_url(db):
        import psycopg

        with psycopg.connect(db, autocommit=True) as conn:
            for s in statements:
                cur = conn.execute(s)
                rows = cur.fetchall() if cur.description else []
        return rows
    lite = sqlite3.connect(db, isolation_level=None)
    try:
        for s in statements:
            rows = lite.execute(s).fetchall()
    finally:
        lite.close()
    return rows


@pytest.fixture
def source(new_db: NewDb) -> Ledger:
    ledger = Ledger(new_db("source.db"))
    with open(FIXTURE, "rb") as f:
        ledger.import_bytes(f.read())
    return ledger


@pytest.mark.parametrize("change", ["event_keys", "four_levels", "search", "watch_owners", "secret_rotation"])
def test_an_index_and_a_trigger_that_differ_are_made_again(
    source: Ledger, new_db: NewDb, change: str
) -> None:
    fresh = new_db("fresh.db")
    Ledger(fresh).close()
    old = new_db("old.db")
    build_old_ledger(old, version_before(old, change), source)
    # what an operator's hand may have left: an index of its own, a guard dropped, one redefined
    on = "" if not is_pg_url(old) else " ON merkle_nodes"
    _execute(
        old,
        "CREATE INDEX by_hand ON merkle_fill (leaves)",
        f"DROP TRIGGER {'merkle_nodes_no_update' if not is_pg_url(old) else 'merkle_nodes_append_only'}{on}",
        "DROP INDEX scrub_passes_finished",
        "CREATE INDEX scrub_passes_finished ON scrub_passes (started_us)",
    )
    Ledger(old).close()
    got, want = catalogue(old), catalogue(fresh)
    for part in want:
        assert got[part] == want[part], part


def test_rows_a_reshaped_table_held_are_kept(source: Ledger, new_db: NewDb) -> None:
    old = new_db("old.db")
    build_old_ledger(old, version_before(old, "watch_owners"), source)
    _execute(
        old,
        "INSERT INTO watches (id, kind, target, created_at, created_seq) "
        "VALUES ('w1', 'paper', '2509.02480', '2026-08-08T00:00:00Z', 3)",
    )
    upgraded = Ledger(old)
    try:
        assert upgraded.store.read_log() == source.store.read_log()
        assert upgraded.verify().ok
    finally:
        upgraded.close()
    assert _execute(old, "SELECT id, target, created_seq, owner FROM watches") == [
        ("w1", "2509.02480", 3, None)
    ]


def test_the_scratch_copy_is_gone_and_the_search_path_kept_when_the_upgrade_ends(
    source: Ledger, new_db: NewDb
) -> None:
    old = new_db("old.db")
    build_old_ledger(old, version_before(old, "alerts"), source)
    if not is_pg_url(old):
        # SQLite's scratch copy is a database of its own in memory
        pytest.skip("PostgreSQL's scratch copy lives in the migrating session's temporary schema")
    import psycopg

    from ledger.storage.postgresql import migrations

    with psycopg.connect(old, autocommit=True) as conn:
        path = conn.execute("SHOW search_path").fetchone()
        assert migrations.migrate(conn) == migrations.VERSION
        # the same session: a connection the store goes on using
        assert conn.execute("SHOW search_path").fetchone() == path
        temp = "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
        assert conn.execute(temp + "WHERE n.nspname LIKE 'pg_temp%'").fetchone() == (0,)
        assert conn.execute(temp + "WHERE n.nspname = 'public' AND c.relname = 'alerts'").fetchone() == (1,)
