"""The SQLite store: connections and transactions of one SQLite file; the statements are shared
(sql_store.py, tables/)."""

from __future__ import annotations

import contextlib
import os
import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import cast

from ledger.storage.conns import ThreadConnections
from ledger.storage.sql import SQLITE, Connection, SqlParams
from ledger.storage.sql_store import SqlStore
from ledger.storage.sqlite.migrations import migrate
from ledger.storage.sqlite.tables import SQLiteScrub, SQLiteTree

MMAP_BYTES = 1 << 31


class SQLiteStore(SqlStore):
    """An event store in one SQLite file (WAL; synchronous=FULL unless chosen otherwise)."""

    kind = "sqlite"
    local = True
    dialect = SQLITE
    # a WAL read transaction sees the state as of its first read until it ends
    read_begin = "BEGIN"
    # one filler or indexer at a time: BEGIN IMMEDIATE takes the file's write lock
    fill_begin = ("BEGIN IMMEDIATE",)
    search_begin = ("BEGIN IMMEDIATE",)
    # a read-only file or directory surfaces as any of several sqlite3 errors
    readonly_errors = (sqlite3.Error,)

    def __init__(
        self, path: str | os.PathLike[str], *, synchronous: str = "FULL", mapped: bool = False
    ) -> None:
        self.path = self.db = str(path)
        self.synchronous = synchronous
        self.mapped = mapped
        # one connection per thread, closed when its thread ends (see conns.py)
        self._conns: ThreadConnections[sqlite3.Connection] = ThreadConnections(sqlite3.Connection.close)
        if not Path(self.path).exists():
            # created 0600 before SQLite opens it: no window in which others can read it
            with contextlib.suppress(FileExistsError):
                os.close(os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        migrate(self._conn())
        self.spans.fill_spans()

    def _conn(self) -> sqlite3.Connection:
        conn = self._conns.get()
        if conn is None:
            conn = sqlite3.connect(self.path, isolation_level=None, timeout=60, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(f"PRAGMA synchronous={self.synchronous}")
            conn.execute("PRAGMA busy_timeout=60000")
            if self.mapped:
                # pages read through a map of the file, not a read() each: a search of a large catalogue
                # touches thousands of pages, and the processes share the OS's copy (SQLite caps it at
                # 2 GB). Only when asked: every page read then counts in the process's resident memory
                # (shared and reclaimable, but what monitoring and a memory bound see)
                conn.execute(f"PRAGMA mmap_size={MMAP_BYTES}")
            self._conns.put(conn)
        return conn

    def write_begin(self) -> tuple[str, ...]:
        """BEGIN IMMEDIATE: the file's write lock at once, so appends are serialised from their first read."""
        return ("BEGIN IMMEDIATE",)

    def connection(self) -> sqlite3.Connection:
        """This thread's connection (opened on first use)."""
        return self._conn()

    def close(self) -> None:
        """Close this thread's connection."""
        self._conns.close()

    def _execute(self, conn: Connection, sql: str, params: SqlParams) -> sqlite3.Cursor:
        return _sqlite(conn).execute(sql, params)

    def _execute_many(self, conn: Connection, sql: str, rows: Sequence[SqlParams]) -> None:
        _sqlite(conn).executemany(sql, rows)

    def in_transaction(self, conn: Connection) -> bool:
        """Whether `conn` is inside a transaction already."""
        return _sqlite(conn).in_transaction

    def _new_tree(self) -> SQLiteTree:
        return SQLiteTree(self)

    def _new_scrub(self) -> SQLiteScrub:
        return SQLiteScrub(self)

    def stats(self) -> dict[str, int]:
        """Rows per table, by name (sqlite-utils' introspection): the ledger's tables, not those SQLite
        keeps for a full-text index (PostgreSQL's is an index of its table), so both list the same."""
        # sqlite-utils and what it loads cost every command's start-up more than the rest of the store
        import sqlite_utils

        # left to itself sqlite-utils turns recursive_triggers on for this shared connection, which changes
        # the triggers a REPLACE fires
        db = sqlite_utils.Database(self._conn(), recursive_triggers=False, execute_plugins=False)
        fts = set(db.table_names(fts5=True)) | set(db.table_names(fts4=True))
        names = [n for n in db.table_names() if n not in fts and not any(n.startswith(f + "_") for f in fts)]
        return {name: db.table(name).count for name in sorted(names)}

    def disk_bytes(self) -> int:
        """Bytes the database takes on disk: the file and its -wal and -shm files (side files apart)."""
        total = 0
        for suffix in ("", "-wal", "-shm"):
            with contextlib.suppress(FileNotFoundError):
                total += os.stat(self.path + suffix).st_size
        return total


def _sqlite(conn: Connection) -> sqlite3.Connection:
    # every connection this store hands out is one `_conn` opened: sqlite3's
    return cast(sqlite3.Connection, conn)
