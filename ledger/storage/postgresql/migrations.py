"""PostgreSQL schema migrations, applied under an advisory lock and recorded in ledger_schema.

An empty database gets today's layout (ledger/storage/schema.py) in one step; a ledger made by an
earlier layout is brought to it in one step too (ledger/storage/upgrade.py), both stamped at the latest
version. tests/contract/test_schema.py checks that both paths end in the same catalogue, and that it
matches SQLite's once the types are mapped back.
"""

from __future__ import annotations

from typing import LiteralString

import psycopg
from psycopg.rows import TupleRow

from ledger.storage.schema import create_statements
from ledger.storage.sql import POSTGRESQL
from ledger.storage.upgrade import LATEST, upgrade

# pg_advisory_xact_lock key held while migrating, so nodes starting together migrate once
MIGRATE_LOCK = 0x6C6564676572  # "ledger"
VERSION = LATEST[POSTGRESQL.name]


def migrate(conn: psycopg.Connection[TupleRow]) -> int:
    """Bring the schema up to date in one transaction; returns the schema version."""
    if _version(conn) >= VERSION:
        return VERSION  # the usual case: no DDL, no lock (a role without CREATE can open it)
    conn.execute("BEGIN")
    try:
        conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATE_LOCK,))
        conn.execute("CREATE TABLE IF NOT EXISTS ledger_schema (version integer NOT NULL)")
        applied = int(_scalar(conn, "SELECT max(version) FROM ledger_schema") or 0)
        if applied == 0:
            conn.execute(";\n".join(create_statements(POSTGRESQL)))
        elif applied < VERSION:
            upgrade(conn, POSTGRESQL, applied)
        if applied < VERSION:
            conn.execute("INSERT INTO ledger_schema (version) VALUES (%s)", (VERSION,))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return VERSION


def _version(conn: psycopg.Connection[TupleRow]) -> int:
    """The applied version, 0 on an empty database."""
    if _scalar(conn, "SELECT to_regclass('ledger_schema')") is None:
        return 0
    return int(_scalar(conn, "SELECT coalesce(max(version), 0) FROM ledger_schema") or 0)


def _scalar(conn: psycopg.Connection[TupleRow], sql: LiteralString) -> int | str | None:
    """The one value of a statement that returns one row (an aggregate's, a function's)."""
    row = conn.execute(sql).fetchone()
    assert row is not None  # such a statement always returns its row
    return row[0]
