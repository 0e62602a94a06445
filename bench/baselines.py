"""The bare references: what SQLite and blake3 do on this machine with no ledger code around them."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import Any

from blake3 import blake3

from bench.util import remove_db

COLUMNS = (
    "seq, event_id, stream, stream_version, type, observed_at, observed_us, recorded_at, recorded_us, "
    "data, prev_hash, hash"
)
_PLAIN = (
    "CREATE TABLE events (seq INTEGER PRIMARY KEY, event_id TEXT, stream TEXT, stream_version INTEGER, "
    "type TEXT, observed_at TEXT, observed_us INTEGER, recorded_at TEXT, recorded_us INTEGER, data TEXT, "
    "prev_hash TEXT, hash TEXT)"
)
_INSERT = f"INSERT INTO events ({COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"


def stored_rows(db: Path, after: int, upto: int | None = None) -> list[tuple[Any, ...]]:
    """The rows the ledger stored after seq `after`: the same bytes the bare inserts write."""
    conn = sqlite3.connect(db)
    sql = f"SELECT {COLUMNS} FROM events WHERE seq > ?" + (" AND seq <= ?" if upto else "") + " ORDER BY seq"
    rows = conn.execute(sql, (after, upto) if upto else (after,)).fetchall()
    conn.close()
    return rows


def plain_db(path: Path, synchronous: str = "FULL") -> sqlite3.Connection:
    """A fresh plain table (no index, trigger or constraint) with the ledger's pragmas (WAL, FULL)."""
    remove_db(path)
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={synchronous}")
    conn.execute("PRAGMA busy_timeout=60000")
    conn.execute(_PLAIN)
    return conn


def schema_db(path: Path) -> sqlite3.Connection:
    """An existing ledger file opened bare (no ledger code): its indexes, generated columns, triggers."""
    conn = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("PRAGMA busy_timeout=60000")
    return conn


def bare_batches(
    path: Path, rows: Sequence[tuple[Any, ...]], batch: int = 1000, schema: bool = False
) -> dict[str, Any]:
    """executemany INSERT of `batch` rows per transaction, each committed at synchronous=FULL.

    Into a fresh plain table, or (schema=True) into the events table of the ledger file at `path`.
    """
    with _bare_db(path, schema) as conn:
        write = partial(conn.executemany, _INSERT)
        return timed_commits(conn, "BEGIN IMMEDIATE", write, chunks(rows, batch), len(rows))


def bare_one_row(path: Path, rows: Sequence[tuple[Any, ...]], schema: bool = False) -> dict[str, Any]:
    """One row per BEGIN IMMEDIATE ... COMMIT at synchronous=FULL, back to back (one fsync each)."""
    with _bare_db(path, schema) as conn:
        return timed_commits(conn, "BEGIN IMMEDIATE", partial(conn.execute, _INSERT), rows, len(rows))


@contextmanager
def _bare_db(path: Path, schema: bool) -> Iterator[sqlite3.Connection]:
    """schema_db or a fresh plain_db; closed afterwards, and a plain one's file removed."""
    conn = schema_db(path) if schema else plain_db(path)
    try:
        yield conn
    finally:
        conn.close()
        if not schema:
            remove_db(path)


def chunks(rows: Sequence[tuple[Any, ...]], size: int) -> Iterator[Sequence[tuple[Any, ...]]]:
    """`rows` in consecutive slices of `size` (the last one may be shorter)."""
    return (rows[k : k + size] for k in range(0, len(rows), size))


def timed_commits(
    cur: Any, begin: str, write: Callable[[Any], object], units: Iterable[Any], events: int
) -> dict[str, Any]:
    """Each unit in a transaction of its own (`begin`, write(unit), COMMIT), back to back; events/s."""
    start, cpu = time.perf_counter(), time.process_time()
    for unit in units:
        cur.execute(begin)
        write(unit)
        cur.execute("COMMIT")
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    return {"events": events, "seconds": round(seconds, 4), "events_per_s": round(events / seconds),
            "cpu_seconds": round(cpu, 4)}  # fmt: skip


CHAIN_SELECT = (
    "SELECT seq, data, event_id, observed_at, recorded_at, stream, stream_version, type FROM events "
    "WHERE seq > ? ORDER BY seq LIMIT ?"
)


def bare_chain(db: Path, batch: int = 5000) -> dict[str, Any]:
    """blake3(prev || bytes) down the stored rows, read from the same file in the same pages as verify.

    The hashed bytes are the stored columns that make up body(e) (data, event_id, observed_at,
    recorded_at, seq, stream, stream_version, type), concatenated: no canonical re-encoding, no checks.
    """
    conn = sqlite3.connect(db)
    try:
        return chain_pages(lambda after: conn.execute(CHAIN_SELECT, (after, batch)).fetchall())
    finally:
        conn.close()


def chain_pages(page: Callable[[int], Sequence[Sequence[Any]]]) -> dict[str, Any]:
    """Hash the rows `page(after)` returns, page after page, as bare_chain does; events/s."""
    prev, after, count = b"\0" * 32, 0, 0
    start, cpu = time.perf_counter(), time.process_time()
    while rows := page(after):
        for seq, data, event_id, observed_at, recorded_at, stream, version, type_ in rows:
            body = f"{data}{event_id}{observed_at}{recorded_at}{seq}{stream}{version}{type_}".encode()
            prev = blake3(prev + body).digest()
        count += len(rows)
        after = rows[-1][0]
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    return {"events": count, "seconds": round(seconds, 4), "events_per_s": round(count / seconds),
            "cpu_seconds": round(cpu, 4)}  # fmt: skip
