"""The SQLite store: the core's SQLite SQL (append a batch, read as of T and K, log, head); see backend.py."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sqlite3
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import sqlite_utils

from .chain import GENESIS
from .codec import decode_data
from .conns import ThreadConnections
from .events import StoredEvent
from .facts import CheckRow, CheckWorkRow, Existing, Fact, Head, Row, SourceHead
from .migrations import migrate

if TYPE_CHECKING:
    from .sqlite_tables import SQLiteTables

FAR_FUTURE = 2**62
# Statement 4 (see SQLiteReader.source_heads); PostgreSQL runs the same text with %s placeholders.
SOURCE_HEADS_SQL = (
    "WITH RECURSIVE s(stream) AS ("
    "  SELECT min(stream) FROM events WHERE stream >= 'source:' AND stream < 'source;'"
    "  UNION ALL"
    "  SELECT (SELECT min(stream) FROM events WHERE stream > s.stream AND stream < 'source;')"
    "  FROM s WHERE s.stream IS NOT NULL) "
    "SELECT substr(e.stream, 8), e.observed_at, e.observed_us, e.seq FROM s "
    "JOIN events e ON e.seq = ("
    "  SELECT seq FROM events WHERE stream = s.stream AND type = 'standing.checked'"
    "  AND observed_us <= ? AND recorded_us <= ? ORDER BY observed_us DESC, seq DESC LIMIT 1) "
    "ORDER BY e.stream"
)
_FACT_COLUMNS = "seq, type, observed_at, observed_us, data"
_ENVELOPE_COLUMNS = (
    "seq, event_id, stream, stream_version, type, observed_at, recorded_at, data, prev_hash, hash"
)


def _fact(row: tuple[Any, ...]) -> Fact:
    seq, type_, observed_at, observed_us, data = row
    return Fact(seq, type_, observed_at, observed_us, decode_data(type_, data.encode()))


def _envelope(row: tuple[Any, ...]) -> StoredEvent:
    seq, event_id, stream, version, type_, observed_at, recorded_at, data, prev, h = row
    return StoredEvent(
        seq=seq,
        event_id=event_id,
        stream=stream,
        stream_version=version,
        type=type_,
        observed_at=observed_at,
        recorded_at=recorded_at,
        data=data.encode(),
        prev_hash=prev,
        hash=h,
    )


class SQLiteStore:
    """An event store in one SQLite file (WAL; synchronous=FULL unless chosen otherwise)."""

    kind = "sqlite"
    local = True

    def __init__(self, path: str | os.PathLike[str], *, synchronous: str = "FULL") -> None:
        self.path = str(path)
        self.synchronous = synchronous
        # one connection per thread, closed when its thread ends (see conns.py)
        self._conns: ThreadConnections[sqlite3.Connection] = ThreadConnections(sqlite3.Connection.close)
        if not Path(self.path).exists():
            # created 0600 before SQLite opens it: no window in which others can read it
            with contextlib.suppress(FileExistsError):
                os.close(os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        migrate(self._conn())

    def _conn(self) -> sqlite3.Connection:
        conn = self._conns.get()
        if conn is None:
            conn = sqlite3.connect(self.path, isolation_level=None, timeout=60, check_same_thread=False)
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute(f"PRAGMA synchronous={self.synchronous}")
            conn.execute("PRAGMA busy_timeout=60000")
            self._conns.put(conn)
        return conn

    @property
    def db(self) -> str:
        """The path it was opened with."""
        return self.path

    @property
    def utils(self) -> sqlite_utils.Database:
        """This thread's connection, wrapped by sqlite-utils."""
        return sqlite_utils.Database(self._conn())

    @functools.cached_property
    def tables(self) -> SQLiteTables:
        """The Merkle nodes, resume point, signed checkpoint and ledger-wide lookups."""
        from .sqlite_tables import SQLiteTables

        return SQLiteTables(self)

    def close(self) -> None:
        """Close this thread's connection."""
        self._conns.close()

    # -- writing ---------------------------------------------------------------------

    @contextmanager
    def write(self) -> Iterator[WriteTx]:
        """One BEGIN IMMEDIATE transaction: the write lock is held until commit or rollback."""
        conn = self._conn()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield WriteTx(conn)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    # -- reading ---------------------------------------------------------------------

    def head(self) -> Head:
        """The last seq and its hash."""
        return _head(self._conn())

    @contextmanager
    def snapshot(self, as_of_us: int, known_us: int | None = None) -> Iterator[SQLiteReader]:
        """A consistent read of the ledger, filtered to observed_at <= T and recorded_at <= K."""
        conn = self._conn()
        conn.execute("BEGIN")
        try:
            yield SQLiteReader(conn, as_of_us, FAR_FUTURE if known_us is None else known_us)
        finally:
            conn.execute("COMMIT")

    def read_log(
        self,
        after: int = 0,
        limit: int | None = None,
        stream: str | None = None,
        type: str | None = None,
    ) -> list[StoredEvent]:
        """Stored envelopes in seq order after `after`, optionally one stream or type."""
        sql = f"SELECT {_ENVELOPE_COLUMNS} FROM events WHERE seq > ?"
        params: list[Any] = [after]
        if stream is not None:
            sql += " AND stream = ?"
            params.append(stream)
        if type is not None:
            sql += " AND type = ?"
            params.append(type)
        sql += " ORDER BY seq"
        if limit is not None:
            sql += " LIMIT ?"
            params.append(limit)
        return [_envelope(r) for r in self._conn().execute(sql, params)]

    def iter_chain(self, after: int = 0, batch: int = 5000) -> Iterator[tuple[Any, ...]]:
        """Every stored row in seq order, with the derived columns verify rechecks."""
        conn = self._conn()
        while True:
            rows = conn.execute(
                f"SELECT {_ENVELOPE_COLUMNS}, observed_us, recorded_us FROM events "
                "WHERE seq > ? ORDER BY seq LIMIT ?",
                (after, batch),
            ).fetchall()
            if not rows:
                return
            yield from rows
            after = rows[-1][0]

    def iter_check_works(self) -> Iterator[tuple[Any, ...]]:
        """Every check_works row, ordered by seq (verify compares them with the data)."""
        yield from self._conn().execute(
            "SELECT seq, work_id, source, observed_us, recorded_us, notices FROM check_works "
            "ORDER BY seq, work_id"
        )

    def envelopes(self, seqs: Sequence[int]) -> list[StoredEvent]:
        """The stored envelopes of the given seqs, in seq order."""
        rows = self._conn().execute(
            f"SELECT {_ENVELOPE_COLUMNS} FROM events "
            "WHERE seq IN (SELECT value FROM json_each(?)) ORDER BY seq",
            (json.dumps(list(seqs)),),
        )
        return [_envelope(r) for r in rows]

    def paper_history(self, arxiv_id: str) -> list[Fact]:
        """Every paper.observed snapshot of one paper, in seq order."""
        rows = self._conn().execute(
            f"SELECT {_FACT_COLUMNS} FROM events WHERE stream = ? AND type = 'paper.observed' ORDER BY seq",
            (f"paper:{arxiv_id}",),
        )
        return [_fact(r) for r in rows]

    def papers(self, limit: int = 100) -> list[str]:
        """Arxiv ids of papers with at least one snapshot, most events first."""
        rows = self._conn().execute(
            "SELECT substr(stream, 7) FROM events WHERE type = 'paper.observed' "
            "GROUP BY stream ORDER BY count(*) DESC, stream LIMIT ?",
            (limit,),
        )
        return [r[0] for r in rows]


def _head(conn: sqlite3.Connection) -> Head:
    row = conn.execute("SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1").fetchone()
    return Head(0, GENESIS) if row is None else Head(row[0], row[1])


class WriteTx:
    """The reads and writes an append needs, inside one write transaction."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn

    @contextmanager
    def savepoint(self) -> Iterator[None]:
        """One batch inside a group transaction: undone alone if it fails."""
        self.conn.execute("SAVEPOINT batch")
        try:
            yield
        except BaseException:
            self.conn.execute("ROLLBACK TO batch")
            self.conn.execute("RELEASE batch")
            raise
        self.conn.execute("RELEASE batch")

    def head(self) -> tuple[Head, int]:
        """The head and its recorded_us (0 when empty)."""
        row = self.conn.execute(
            "SELECT seq, hash, recorded_us FROM events ORDER BY seq DESC LIMIT 1"
        ).fetchone()
        return (Head(0, GENESIS), 0) if row is None else (Head(row[0], row[1]), row[2])

    def existing(self, event_ids: Sequence[str]) -> dict[str, Existing]:
        """Events already stored under any of these ids."""
        rows = self.conn.execute(
            "SELECT event_id, seq, type, observed_at, data, hash FROM events "
            "WHERE event_id IN (SELECT value FROM json_each(?))",
            (json.dumps(list(event_ids)),),
        )
        return {r[0]: Existing(r[1], r[2], r[3], r[4].encode(), r[5]) for r in rows}

    def citing_papers(self, observation_ids: Sequence[str]) -> dict[str, str]:
        """observation_id -> its citing paper, for ids that have a citation.observed."""
        rows = self.conn.execute(
            "SELECT observation_id, json_extract(data, '$.citing_arxiv_id') FROM events "
            "WHERE observation_id IN (SELECT value FROM json_each(?)) "
            "AND type = 'citation.observed' GROUP BY observation_id",
            (json.dumps(list(observation_ids)),),
        )
        return {r[0]: r[1] for r in rows}

    def stream_versions(self, streams: Sequence[str]) -> dict[str, int]:
        """Current version of each stream (absent streams are left out)."""
        rows = self.conn.execute(
            "SELECT stream, max(stream_version) FROM events "
            "WHERE stream IN (SELECT value FROM json_each(?)) GROUP BY stream",
            (json.dumps(list(streams)),),
        )
        return {r[0]: r[1] for r in rows}

    def insert(self, rows: Sequence[Row], checks: Sequence[CheckWorkRow]) -> None:
        """Insert the new rows (the caller commits)."""
        self.conn.executemany(
            "INSERT INTO events (seq, event_id, stream, stream_version, type, observed_at, "
            "observed_us, recorded_at, recorded_us, data, prev_hash, hash) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(*r[:9], r.data.decode(), r.prev_hash, r.hash) for r in rows],
        )
        if checks:
            self.conn.executemany(
                "INSERT INTO check_works (work_id, source, observed_us, seq, recorded_us, notices) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [(*c[:5], c.notices.decode()) for c in checks],
            )


class SQLiteReader:
    """The five queries one record needs, all filtered to observed <= T and recorded <= K."""

    def __init__(self, conn: sqlite3.Connection, as_of_us: int, known_us: int) -> None:
        self.conn = conn
        self.t = as_of_us
        self.k = known_us

    def head(self) -> Head:
        """The head this snapshot sees (not counted in the statement budget)."""
        return _head(self.conn)

    def paper_stream(self, arxiv_id: str) -> list[Fact]:
        """Statement 1: the paper's own stream (snapshots, citations, resolutions, measurements)."""
        rows = self.conn.execute(
            f"SELECT {_FACT_COLUMNS} FROM events WHERE stream = ? AND observed_us <= ? "
            "AND recorded_us <= ? ORDER BY seq",
            (f"paper:{arxiv_id}", self.t, self.k),
        )
        return [_fact(r) for r in rows]

    def citing_events(self, arxiv_id: str) -> list[Fact]:
        """Statement 2: citations and resolutions of every observation ever resolved to the paper."""
        rows = self.conn.execute(
            f"SELECT {_FACT_COLUMNS} FROM events WHERE observation_id IN ("
            "  SELECT observation_id FROM events WHERE cited_arxiv_id = ? "
            "  AND observed_us <= ? AND recorded_us <= ?) "
            "AND observed_us <= ? AND recorded_us <= ? ORDER BY seq",
            (arxiv_id, self.t, self.k, self.t, self.k),
        )
        return [_fact(r) for r in rows]

    def snapshots(self, arxiv_ids: Sequence[str]) -> list[Fact]:
        """Statement 3: paper.observed events of the given papers."""
        if not arxiv_ids:
            return []
        rows = self.conn.execute(
            f"SELECT {_FACT_COLUMNS} FROM events WHERE type = 'paper.observed' "
            "AND stream IN (SELECT 'paper:' || value FROM json_each(?)) "
            "AND observed_us <= ? AND recorded_us <= ? ORDER BY seq",
            (json.dumps(list(arxiv_ids)), self.t, self.k),
        )
        return [_fact(r) for r in rows]

    def source_heads(self) -> list[SourceHead]:
        """Statement 4: the latest standing check of every source, by index seeks.

        A skip-scan finds each source stream (one seek per source), then a backward seek on
        events_stream_type_time finds its latest check as of T and K, so the cost does not grow
        with the number of checks in the ledger.
        """
        rows = self.conn.execute(SOURCE_HEADS_SQL, (self.t, self.k))
        return [SourceHead(*r) for r in rows]

    def work_checks(self, works: Sequence[tuple[str, int]]) -> list[CheckRow]:
        """Statement 5: per (work_id, since) and source, the latest check covering the work."""
        if not works:
            return []
        rows = self.conn.execute(
            "WITH wanted(work_id, since) AS ("
            "  SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?)) "
            "SELECT work_id, since, source, observed_at, observed_us, seq, notices FROM ("
            "  SELECT w.work_id, w.since, c.source, e.observed_at, c.observed_us, c.seq,"
            "   c.notices, row_number() OVER (PARTITION BY w.work_id, w.since, c.source"
            "   ORDER BY c.observed_us DESC, c.seq DESC) AS rn"
            "  FROM wanted w JOIN check_works c ON c.work_id IN (w.work_id, '*')"
            "  JOIN events e ON e.seq = c.seq"
            "  WHERE c.observed_us <= ? AND c.observed_us >= w.since AND c.recorded_us <= ?"
            ") WHERE rn = 1",
            (json.dumps([list(w) for w in works]), self.t, self.k),
        )
        return [CheckRow(w, s, src, oa, ous, seq, json.loads(n)) for w, s, src, oa, ous, seq, n in rows]
