"""Schema migrations, recorded in PRAGMA user_version.

An empty database gets today's layout (ledger/storage/schema.py) in one step; a ledger made by an
earlier layout is brought to it in one step too (ledger/storage/upgrade.py), both stamped at the latest
version. tests/contract/test_schema.py checks that both paths end in the same catalogue.
"""

from __future__ import annotations

import sqlite3

from ledger.storage.schema import create_statements
from ledger.storage.sql import SQLITE
from ledger.storage.upgrade import LATEST, upgrade

VERSION = LATEST[SQLITE.name]


def migrate(conn: sqlite3.Connection) -> int:
    """Bring the schema up to date; returns the schema version."""
    if conn.execute("PRAGMA user_version").fetchone()[0] >= VERSION:
        return VERSION
    conn.execute("BEGIN IMMEDIATE")
    try:
        # re-read under the write lock: another process may have migrated meanwhile
        applied = conn.execute("PRAGMA user_version").fetchone()[0]
        if applied == 0:
            for statement in create_statements(SQLITE):
                conn.execute(statement)
        elif applied < VERSION:
            upgrade(conn, SQLITE, applied)
        conn.execute(f"PRAGMA user_version = {max(applied, VERSION)}")
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return VERSION
