"""A witness's durable state: per log origin, the latest checkpoint it cosigned (SQLite).

tlog-witness requires checking the old size and persisting the new checkpoint atomically, else two
requests checked against the same size could both be cosigned and the later write roll the log back.
`advance` is therefore a compare-and-set inside one BEGIN IMMEDIATE transaction: the write lock is
taken before the size is read, so of two requests from the same size only the first advances.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import NamedTuple

_SCHEMA = """
CREATE TABLE IF NOT EXISTS witness_checkpoint (
    origin TEXT PRIMARY KEY,
    size INTEGER NOT NULL CHECK (size >= 0),
    root BLOB NOT NULL,
    note TEXT NOT NULL,
    updated INTEGER NOT NULL
)
"""
# SQLite's INTEGER is signed 64-bit: a larger size cannot be kept (no real log comes near it)
MAX_SIZE = 2**63 - 1
BUSY_TIMEOUT_S = 30.0  # how long a writer waits for another's lock before sqlite3 gives up


class WitnessRecord(NamedTuple):
    """The latest checkpoint cosigned for one log: size, root hash, the note, when (unix seconds)."""

    origin: str
    size: int
    root: bytes
    note: str
    updated: int


class WitnessState:
    """The witness's table in one SQLite file (WAL, synchronous=FULL: an answered cosignature is on disk)."""

    def __init__(self, path: Path | str) -> None:
        self.path = Path(path)
        with self._connect() as conn:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(_SCHEMA)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        # one connection per call: the witness is called from many threads, and a connection is cheap
        # next to an Ed25519 signature
        with closing(sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None)) as conn:
            conn.execute("PRAGMA synchronous=FULL")
            yield conn

    def latest(self, origin: str) -> WitnessRecord | None:
        """The latest checkpoint cosigned for `origin`, or None if none ever was."""
        with self._connect() as conn:
            row = conn.execute(
                "SELECT origin, size, root, note, updated FROM witness_checkpoint WHERE origin = ?", (origin,)
            ).fetchone()
        return None if row is None else WitnessRecord(*row)

    def advance(
        self,
        origin: str,
        old_size: int,
        new_size: int,
        new_root: bytes,
        note: str,
        *,
        old_root: bytes | None = None,
        updated: int | None = None,
    ) -> bool:
        """Record (new_size, new_root, note) for `origin` only if its latest size is still `old_size`
        (0 with no record) and, when given, its root `old_root`; False when another request moved it."""
        if new_size < old_size:
            raise ValueError(f"a witness never moves a log back (size {old_size} -> {new_size})")
        stamp = int(time.time()) if updated is None else updated
        with self._connect() as conn:
            conn.execute("BEGIN IMMEDIATE")
            try:
                row = conn.execute(
                    "SELECT size, root FROM witness_checkpoint WHERE origin = ?", (origin,)
                ).fetchone()
                size, root = (0, None) if row is None else (row[0], row[1])
                if size != old_size or (old_root is not None and row is not None and root != old_root):
                    conn.execute("ROLLBACK")
                    return False
                conn.execute(
                    "INSERT INTO witness_checkpoint (origin, size, root, note, updated) "
                    "VALUES (?, ?, ?, ?, ?) "
                    "ON CONFLICT (origin) DO UPDATE SET size = excluded.size, root = excluded.root, "
                    "note = excluded.note, updated = excluded.updated",
                    (origin, new_size, new_root, note, stamp),
                )
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        return True
