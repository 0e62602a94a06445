"""PostgreSQL schema migrations, applied in order under an advisory lock and recorded in ledger_schema.

A fresh ledger is made in one step from the description of today's layout (ledger/storage/schema.py)
and stamped at the latest version. The steps in steps/NN-name.sql are frozen history: they upgrade a
ledger made by an earlier layout, step by step, exactly as they did when released, and are data files
so that the product code holds each table once. tests/contract/test_schema.py checks that both paths
end in the same catalogue, and that it matches SQLite's once the types are mapped back.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from ledger.storage.derived.backfill import fill_work_keys
from ledger.storage.schema import create_statements, frozen_steps
from ledger.storage.sql import POSTGRESQL

# pg_advisory_xact_lock key held while migrating, so nodes starting together migrate once
MIGRATE_LOCK = 0x6C6564676572  # "ledger"

# Each step is applied once, in its own transaction; never edit a released step, add one (and update
# ledger/storage/schema.py, which makes fresh ledgers).
MIGRATIONS: list[str] = frozen_steps(Path(__file__).with_name("steps"))
# Python a step runs after its SQL, in the same transaction: what SQL alone cannot derive
AFTER: dict[int, Callable[[Any], object]] = {6: lambda conn: fill_work_keys(conn, POSTGRESQL)}


def migrate(conn: Any) -> int:
    """Bring the schema up to date in one transaction per step; returns the schema version."""
    if _version(conn) >= len(MIGRATIONS):
        return len(MIGRATIONS)  # the usual case: no DDL, no lock (a role without CREATE can open it)
    for number, script in enumerate(MIGRATIONS, start=1):
        conn.execute("BEGIN")
        try:
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (MIGRATE_LOCK,))
            conn.execute("CREATE TABLE IF NOT EXISTS ledger_schema (version integer NOT NULL)")
            applied = conn.execute("SELECT max(version) FROM ledger_schema").fetchone()[0] or 0
            if applied >= number:
                conn.execute("COMMIT")
                continue
            if applied == 0:
                # an empty database: today's layout in one step
                conn.execute(";\n".join(create_statements(POSTGRESQL)))
                conn.execute("INSERT INTO ledger_schema (version) VALUES (%s)", (len(MIGRATIONS),))
                conn.execute("COMMIT")
                break
            conn.execute(script)
            if number in AFTER:
                AFTER[number](conn)
            conn.execute("INSERT INTO ledger_schema (version) VALUES (%s)", (number,))
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise
    return len(MIGRATIONS)


def _version(conn: Any) -> int:
    """The applied version, 0 on an empty database."""
    if conn.execute("SELECT to_regclass('ledger_schema')").fetchone()[0] is None:
        return 0
    return int(conn.execute("SELECT coalesce(max(version), 0) FROM ledger_schema").fetchone()[0])
