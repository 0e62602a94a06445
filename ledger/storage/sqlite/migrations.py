"""Schema migrations, applied in order and recorded in PRAGMA user_version.

A fresh ledger is made in one step from the description of today's layout (ledger/storage/schema.py)
and stamped at the latest version. The steps in steps/NN-name.sql are frozen history: they upgrade a
ledger made by an earlier layout, step by step, exactly as they did when released, and are data files
so that the product code holds each table once. tests/contract/test_schema.py checks that both paths
end in the same catalogue.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path

from ledger.storage.derived.backfill import fill_work_keys
from ledger.storage.schema import create_statements, frozen_steps
from ledger.storage.sql import SQLITE

# Each step is applied once, in its own transaction; never edit a released step, add one (and update
# ledger/storage/schema.py, which makes fresh ledgers).
MIGRATIONS: list[str] = frozen_steps(Path(__file__).with_name("steps"))
# Python a step runs after its SQL, in the same transaction: what SQL alone cannot derive
AFTER: dict[int, Callable[[sqlite3.Connection], object]] = {7: lambda conn: fill_work_keys(conn, SQLITE)}


def migrate(conn: sqlite3.Connection) -> int:
    """Bring the schema up to date; returns the schema version."""
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    for number, script in enumerate(MIGRATIONS[version:], start=version + 1):
        conn.execute("BEGIN IMMEDIATE")
        try:
            # re-read under the write lock: another process may have migrated meanwhile
            applied = conn.execute("PRAGMA user_version").fetchone()[0]
            if applied >= number:
                conn.execute("COMMIT")
                continue
            if applied == 0:
                # an empty database: today's layout in one step
                for statement in create_statements(SQLITE):
                    conn.execute(statement)
                conn.execute(f"PRAGMA user_version = {len(MIGRATIONS)}")
                conn.execute("COMMIT")
                break
            for statement in _split(script):
                conn.execute(statement)
            if number in AFTER:
                AFTER[number](conn)
            conn.execute(f"PRAGMA user_version = {number}")
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return len(MIGRATIONS)


def _split(script: str) -> list[str]:
    """Split a script into statements, keeping trigger bodies whole."""
    out, buf = [], ""
    for line in script.splitlines():
        if line.strip().startswith("--"):
            continue
        buf += line + "\n"
        if sqlite3.complete_statement(buf):
            out.append(buf.strip())
            buf = ""
    if buf.strip():
        out.append(buf.strip())
    return out
