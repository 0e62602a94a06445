"""Reach a ledger's tables directly, as an auditor or an attacker would: not through the ledger code.

Every helper takes a `db` that is a SQLite path or a postgresql:// URL, so a test reads and damages
either backend the same way. SQL is written with `?` placeholders; they become `%s` on PostgreSQL.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from ledger.storage.backend import is_pg_url

# the tables whose append-only guard is a trigger of ours, found in the catalogue so that a table
# added with a guard is switched off too
_GUARDED_PG = (
    "SELECT DISTINCT tgrelid::regclass::text FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
    "JOIN pg_namespace n ON n.oid = c.relnamespace WHERE NOT t.tgisinternal AND n.nspname = current_schema()"
)


class Raw:
    """One autocommit connection to a ledger's database (sqlite3 or psycopg)."""

    def __init__(self, db: str | Path) -> None:
        self.db = str(db)
        self.pg = is_pg_url(self.db)
        if self.pg:
            import psycopg

            self.conn: Any = psycopg.connect(self.db, autocommit=True)
        else:
            import sqlite3

            self.conn = sqlite3.connect(self.db, isolation_level=None)

    def execute(self, sql: str, params: Sequence[Any] = ()) -> Any:
        """Run one statement (`?` placeholders on both backends)."""
        if self.pg:
            return self.conn.execute(sql.replace("?", "%s"), tuple(params) or None)
        return self.conn.execute(sql, tuple(params))

    def close(self) -> None:
        """Close the connection."""
        self.conn.close()


@contextmanager
def connect(db: str | Path) -> Iterator[Raw]:
    """A raw connection, closed afterwards."""
    raw = Raw(db)
    try:
        yield raw
    finally:
        raw.close()


def one(db: str | Path, sql: str, params: Sequence[Any] = ()) -> Any:
    """The first column of the first row (None when there is no row)."""
    with connect(db) as raw:
        row = raw.execute(sql, params).fetchone()
        return None if row is None else row[0]


def rows(db: str | Path, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
    """Every row, as tuples."""
    with connect(db) as raw:
        return [tuple(r) for r in raw.execute(sql, params).fetchall()]


def edit(db: str | Path, *statements: str, params: Sequence[Any] = ()) -> None:
    """Change rows as an attacker with write access would: switch the append-only triggers off first."""
    with connect(db) as raw:
        guarded = [t for (t,) in raw.execute(_GUARDED_PG).fetchall()] if raw.pg else []
        if raw.pg:
            for table in guarded:
                raw.execute(f"ALTER TABLE {table} DISABLE TRIGGER USER")
        else:
            names = raw.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall()
            for (name,) in names:
                raw.execute(f"DROP TRIGGER IF EXISTS {name}")
        for sql in statements:
            raw.execute(sql, params if "?" in sql else ())
        if raw.pg:
            for table in guarded:
                names = raw.execute(
                    f"SELECT tgname FROM pg_trigger WHERE tgrelid = '{table}'::regclass AND NOT tgisinternal"
                ).fetchall()
                for (name,) in names:
                    raw.execute(f"ALTER TABLE {table} ENABLE ALWAYS TRIGGER {name}")


def copy_db(db: str | Path, directory: Path, name: str = "copy.db") -> str:
    """A copy of the whole database: the file (SQLite) or CREATE DATABASE ... TEMPLATE (PostgreSQL).

    Close every ledger open on `db` first (PostgreSQL copies only a database nobody is connected to).
    """
    if not is_pg_url(str(db)):
        target = directory / name
        shutil.copy(db, target)
        return str(target)
    import psycopg

    parts = urlsplit(str(db))
    source = parts.path.lstrip("/")
    copy = f"{source}_{directory.name}_{name}".replace(".", "_").replace("-", "_")[:60]
    admin = urlunsplit(parts._replace(path="/postgres"))
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{copy}" TEMPLATE "{source}"')
    return urlunsplit(parts._replace(path="/" + copy))


def stored_checkpoint(db: str) -> str | None:
    """The last signed checkpoint as the ledger stores it: <db>.checkpoint next to a SQLite file, the
    signed_checkpoint row in a PostgreSQL database (not this node's copy in the state dir)."""
    if is_pg_url(db):
        note = one(db, "SELECT note FROM signed_checkpoint WHERE id = 1")
        return None if note is None else str(note)
    path = Path(db + ".checkpoint")
    return path.read_text() if path.exists() else None


def replace_checkpoint(db: str, note: str) -> None:
    """Replace the stored last signed checkpoint behind the ledger's back."""
    if is_pg_url(db):
        edit(db, "UPDATE signed_checkpoint SET note = ? WHERE id = 1", params=(note,))
    else:
        Path(db + ".checkpoint").write_text(note)
    assert stored_checkpoint(db) == note


# every table the projector writes, each in a stable order (the keys' and checks' levels read through
# their views): two ledgers of the same events hold the same rows once projected
PROJECTED_TABLES = {
    "spans": "SELECT * FROM inbound_spans ORDER BY cited, citing, reference_index, observation_id, t_from",
    "counts": "SELECT * FROM inbound_counts WHERE starts <> 0 OR ends <> 0 ORDER BY cited, bucket",
    "keys": "SELECT key, seq FROM event_keys_all ORDER BY key, seq",
    "checks": "SELECT * FROM check_works_all ORDER BY 1, 2, 3, 4, 5",
    "screen_refs": "SELECT * FROM screen_refs ORDER BY 1, 2, 3, 4",
    "screen_notices": "SELECT * FROM screen_notices ORDER BY 1, 2, 3",
}


def projected(db: str) -> dict[str, list[tuple[Any, ...]]]:
    """The rows of every table the projector writes."""
    return {name: rows(db, sql) for name, sql in PROJECTED_TABLES.items()}
