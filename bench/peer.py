"""The peer a user would pick instead: the `eventsourcing` library (9.5), its application recorder storing
the same events the ledger stored, in the same batches, at the same durability, in the same run.

Each event the ledger stored becomes one eventsourcing `StoredEvent`: originator_id = one UUID per ledger
stream (uuid5 of the stream's name), originator_version = the event's stream_version, topic = its type,
state = its canonical `data` bytes (UTF-8 of the stored column). The StoredEvents are built before the clock
starts, so the figures time the recorder's `insert_events` alone (no mapper, no transcoder).

SQLite: `SQLiteApplicationRecorder` on a `SQLiteDatastore` (it sets journal_mode=WAL and no synchronous
pragma; each connection here gets `PRAGMA synchronous=FULL`, OFF while filling). PostgreSQL:
`PostgresApplicationRecorder` on a `PostgresDatastore` in its own database of the same server (the
server's synchronous_commit=on; this session's synchronous_commit=off while filling).

Run in its own process (bench/worker.py, job `peer`): no ledger code is imported here.
"""

from __future__ import annotations

import contextlib
import functools
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from importlib.metadata import version
from typing import Any
from urllib.parse import unquote, urlsplit

from eventsourcing.persistence import ApplicationRecorder, StoredEvent

COLUMNS = "seq, stream, stream_version, type, data"
PAGE = 10_000  # rows read from the ledger, and events per insert_events call, while filling
SINGLES = 40_000  # at most this many of the ledger's single-event appends are offered to the peer
_NS = uuid.UUID("6b1e0a52-7c1f-4d3e-9a43-3c1b2a4f0e11")  # the namespace of the streams' originator ids


def is_pg(db: str) -> bool:
    """Whether `db` is a postgresql:// URL (else a SQLite path)."""
    return db.startswith(("postgresql://", "postgres://"))


class Events:
    """Ledger rows (seq, stream, stream_version, type, data) as StoredEvents, one UUID per stream."""

    def __init__(self) -> None:
        self.ids: dict[str, uuid.UUID] = {}

    def __call__(self, rows: Sequence[Sequence[Any]]) -> list[StoredEvent]:
        out = []
        for _, stream, stream_version, type_, data in rows:
            oid = self.ids.get(stream)
            if oid is None:
                oid = self.ids[stream] = uuid.uuid5(_NS, stream)
            out.append(StoredEvent(oid, int(stream_version), type_, data.encode()))
        return out


def ledger_rows(ledger: str, after: int, upto: int | None = None) -> Iterator[list[Sequence[Any]]]:
    """The rows a ledger (SQLite path or PostgreSQL URL) stored with after < seq <= upto, in pages."""
    if is_pg(ledger):
        import psycopg

        conn: Any = psycopg.connect(ledger, autocommit=True)
        sql = f"SELECT {COLUMNS} FROM events WHERE seq > %s AND seq <= %s ORDER BY seq LIMIT %s"
    else:
        import sqlite3

        conn = sqlite3.connect(ledger)
        sql = f"SELECT {COLUMNS} FROM events WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?"
    try:
        last = upto if upto is not None else 2**62
        while after < last and (rows := conn.execute(sql, (after, last, PAGE)).fetchall()):
            yield rows
            after = rows[-1][0]
    finally:
        conn.close()


@contextlib.contextmanager
def recorder(store: str, fill: bool = False) -> Iterator[tuple[ApplicationRecorder, Callable[[], dict]]]:
    """The peer's application recorder on `store`, its table created; and a function that reads the
    durability settings of its connection. `fill`: synchronous OFF (SQLite) / synchronous_commit off."""
    datastore: Any
    if is_pg(store):
        from eventsourcing.postgres import PostgresApplicationRecorder as Recorder

        datastore = _pg_datastore(store, "SET synchronous_commit = off" if fill else "")
        settings = functools.partial(_pg_settings, datastore)
    else:
        from eventsourcing.sqlite import SQLiteApplicationRecorder as Recorder  # type: ignore[assignment]

        datastore = _sqlite_datastore(store, "OFF" if fill else "FULL")
        settings = functools.partial(_sqlite_settings, datastore)
    rec = Recorder(datastore)
    rec.create_table()
    try:
        yield rec, settings
    finally:
        datastore.close()


def _pg_settings(datastore: Any) -> dict[str, Any]:
    with datastore.transaction(commit=False) as cur:
        cur.execute("SHOW synchronous_commit")
        row = cur.fetchone()
    return {"synchronous_commit": row["synchronous_commit"] if row else None}


def _sqlite_settings(datastore: Any) -> dict[str, Any]:
    with datastore.transaction(commit=False) as cur:
        cur.execute("PRAGMA synchronous")
        sync = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}[cur.fetchone()[0]]
        cur.execute("PRAGMA journal_mode")
        return {"synchronous": sync, "journal_mode": cur.fetchone()[0]}


def _sqlite_datastore(path: str, synchronous: str) -> Any:
    """eventsourcing's SQLiteDatastore whose every connection runs `PRAGMA synchronous=...` once opened
    (the datastore itself sets journal_mode=WAL and leaves synchronous at SQLite's default)."""
    from eventsourcing.sqlite import SQLiteConnection, SQLiteConnectionPool, SQLiteDatastore

    class Pool(SQLiteConnectionPool):
        def _create_connection(self) -> SQLiteConnection:
            conn = super()._create_connection()
            conn._sqlite_conn.execute(f"PRAGMA synchronous={synchronous}")
            return conn

    datastore = SQLiteDatastore(path)
    datastore.pool.close()  # no connection made yet: replaced by the same pool with the pragma
    datastore.pool = Pool(db_name=path)
    return datastore


def _pg_datastore(url: str, session: str) -> Any:
    """eventsourcing's PostgresDatastore (it takes the parts of the URL), `session` run on each new
    connection after its own set-up."""
    from eventsourcing.postgres import PostgresDatastore

    class Datastore(PostgresDatastore):
        def after_connect_func(self) -> Callable[[Any], None]:
            base = super().after_connect_func()

            def after_connect(conn: Any) -> None:
                base(conn)
                if session:
                    conn.execute(session)

            return after_connect

    u = urlsplit(url)
    return Datastore(
        dbname=u.path.lstrip("/"),
        host=u.hostname or "127.0.0.1",
        port=u.port or 5432,
        user=unquote(u.username or ""),
        password=unquote(u.password or ""),
    )


def fill(store: str, ledger: str, upto: int) -> dict[str, Any]:
    """Load the ledger's rows seq <= upto into the peer's store: insert_events of 10,000 a call, durability
    off (as the ledger's build); then, as the ledger after its build, a checkpoint (SQLite: of the WAL;
    PostgreSQL: VACUUM (ANALYZE) and CHECKPOINT)."""
    convert, events = Events(), 0
    start = time.perf_counter()
    with recorder(store, fill=True) as (rec, _):
        for rows in ledger_rows(ledger, 0, upto):
            rec.insert_events(convert(rows))
            events += len(rows)
    seconds = time.perf_counter() - start
    _settle(store)
    return {"events": events, "streams": len(convert.ids), "seconds": round(seconds, 2),
            "settle_seconds": round(time.perf_counter() - start - seconds, 2)}  # fmt: skip


def _settle(store: str) -> None:
    if is_pg(store):
        import psycopg

        with psycopg.connect(store, autocommit=True) as conn:
            conn.execute("VACUUM (ANALYZE) stored_events")
            with contextlib.suppress(Exception):  # needs superuser or pg_checkpoint on a shared server
                conn.execute("CHECKPOINT")
        return
    import sqlite3

    lite = sqlite3.connect(store)
    lite.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    lite.close()


def count(store: str) -> int:
    """Events in the peer's store."""
    if is_pg(store):
        import psycopg

        with psycopg.connect(store) as conn:
            row = conn.execute("SELECT count(*) FROM stored_events").fetchone()
    else:
        import sqlite3

        lite = sqlite3.connect(store)
        row = lite.execute("SELECT count(*) FROM stored_events").fetchone()
        lite.close()
    return int(row[0]) if row else 0


def measure(store: str, ledger: str, after: int, heads: list[int], seconds: float) -> dict[str, Any]:
    """The peer at the ledger's size: filled with the ledger's rows seq <= after, then (durable)

    - batches: the rows the ledger's library append stored next, in the batches it committed them (the
      head after each of its batches: `heads`), one insert_events call a batch, back to back;
    - singles: the rows it stored after those (its single-event appends), one insert_events call each,
      one caller, back to back, until they run out or `seconds` pass.

    `ledger` is the copy the ledger's measurements appended to (bench/run.py: the scratch copy).
    """
    filled = fill(store, ledger, after)
    convert = Events()
    rows = [r for page in ledger_rows(ledger, after, heads[-1]) for r in page]
    starts = [after, *heads[:-1]]
    batches = [convert([r for r in rows if lo < r[0] <= hi]) for lo, hi in zip(starts, heads, strict=True)]
    batches = [b for b in batches if b]  # a batch of duplicates only stored nothing
    last = heads[-1]
    singles = convert([r for page in ledger_rows(ledger, last, last + SINGLES) for r in page])
    with recorder(store) as (rec, settings):
        durability = settings()
        start = time.perf_counter()
        for b in batches:
            rec.insert_events(b)
        batch_s = time.perf_counter() - start
        done, start = 0, time.perf_counter()
        deadline = start + seconds
        for e in singles:
            rec.insert_events([e])
            done += 1
            if time.perf_counter() > deadline:
                break
        single_s = time.perf_counter() - start
        assert settings() == durability, (settings(), durability)
    stored = count(store)
    expected = filled["events"] + len(rows) + done
    assert stored == expected, (stored, expected)
    recorder_name = "PostgresApplicationRecorder" if is_pg(store) else "SQLiteApplicationRecorder"
    return {
        "peer": f"eventsourcing {version('eventsourcing')} {recorder_name}",
        "durability": durability,
        "fill": filled,
        "batches": _rate(len(rows), batch_s, batches=len(batches)),
        "singles": _rate(done, single_s, available=len(singles)),
        "stored": stored,
    }


def _rate(events: int, seconds: float, **extra: int) -> dict[str, Any]:
    return {"events": events, "seconds": round(seconds, 4), "events_per_s": round(events / seconds), **extra}
