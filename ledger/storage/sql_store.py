"""The event store written once over a Dialect: every statement the backends share.

A backend subclasses SqlStore with its connections, its transaction statements and the errors it
tolerates; SqlTables likewise for the ledger's other tables (see sqlite/store.py and postgresql/store.py).
"""

from __future__ import annotations

import contextlib
import functools
import heapq
import itertools
import json
import sys
from collections.abc import Collection, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, ClassVar

import msgspec

from ledger.model.events import ChainLink, GlanceWork, StoredEvent
from ledger.model.facts import (
    Checked,
    CheckRow,
    CheckWorkRow,
    Fact,
    Head,
    ImportProgress,
    InboundDay,
    IngestReceipt,
    ScrubPass,
    SourceHead,
    VerifiedPoint,
)
from ledger.model.instants import format_recorded
from ledger.storage.append import Rows, stored_checks
from ledger.storage.catalogue_store import SqlCatalogue
from ledger.storage.conns import ThreadConnections
from ledger.storage.derived import screen, spans
from ledger.storage.derived.keys import (
    CHECK_WORKS,
    EVENT,
    LEVELS,
    MOVES,
    OBSERVATION,
    WORK,
    WORK_KEYS,
    cited_keys,
    level_table,
)
from ledger.storage.derived.past import FIELD_SEP, ROW_SEP, Past, PastIndex, Touching
from ledger.storage.derived.search import INDEX_CHUNK, Found, Hit
from ledger.storage.derived.spans import (
    CITATION,
    OPEN,
    Row,
    Span,
    Step,
    bucket_deltas,
    history,
    step_row,
)
from ledger.storage.derived.spans import COLUMNS as SPAN_COLUMNS
from ledger.storage.interface import Tables, side_path
from ledger.storage.sql import (
    CHECK_WORKS_COLUMNS,
    ENVELOPE_COLUMNS,
    FACT_COLUMNS,
    FAR_FUTURE,
    HEAD_SQL,
    INSERT_RECEIPT,
    LAST_RECEIPT,
    LOAD_PROGRESS,
    PASS_COLUMNS,
    SAVE_PROGRESS,
    SOURCE_HEADS_SQL,
    Dialect,
    decode_peaks,
    encode_peaks,
    envelope_row,
    fact_row,
    link_row,
)
from ledger.storage.state.alerts import AlertTables
from ledger.storage.state.jobs import JobTables
from ledger.storage.writers import WriterRow, WriterTables, save_writers
from ledger.tlog.chain import GENESIS

_INSERT_EVENTS = (
    "INSERT INTO events (seq, event_id, stream, stream_version, type, observed_at, "
    "observed_us, recorded_at, recorded_us, data, prev_hash, hash) "
    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)


def insert_check_works(level: str) -> str:
    table = level_table("check_works", level)
    columns = "work_id, source, observed_us, seq, recorded_us, notices"
    return f"INSERT INTO {table} ({columns}) VALUES (?, ?, ?, ?, ?, ?)"


def insert_keys(level: str) -> str:
    return f"INSERT INTO {level_table('event_keys', level)} (key, seq) VALUES (?, ?)"


_CHECK_WINDOW = "observed_us <= ? AND recorded_us <= ?"  # a check as of T, known by K
# the standing checks as of T, known by K, past the check_works projection's position: those a reader
# folds in from their events (bounded on both sides, so a planner takes the range for a few rows)
_CHECKS_TAIL = (
    "type = 'standing.checked' AND seq > coalesce("
    f"(SELECT seq FROM projections WHERE name = '{CHECK_WORKS}'), 0)"
    f" AND seq <= (SELECT max(seq) FROM events) AND {_CHECK_WINDOW}"
)


def _each_level(table: str, columns: str, where: str, union: str = "UNION ALL") -> str:
    """One SELECT of `columns` per level of a leveled table (derived/keys.py), joined by `union`: each
    level probed on its own, as the planner would scan the view rather than push a list into it."""
    return f" {union} ".join(f"SELECT {columns} FROM {level_table(table, lv)} WHERE {where}" for lv in LEVELS)


# each derived table: its columns and its key (ledger/storage/derived/keys.py)
_DERIVED = {
    "event_keys": ("key, seq", "key, seq"),
    "check_works": (
        "work_id, source, observed_us, seq, recorded_us, notices",
        "work_id, source, observed_us, seq",
    ),
}


def _move(source: str, target: str, analyze: bool = False) -> list[str]:
    """A merge: every derived table's rows at level `source`, sorted by key, into level `target`,
    then `source` emptied (and both tables' statistics renewed, where the dialect plans by them)."""
    out = []
    for table, (columns, key) in _DERIVED.items():
        src, dst = level_table(table, source), level_table(table, target)
        out += [
            f"INSERT INTO {dst} ({columns}) SELECT {columns} FROM {src} ORDER BY {key}",
            f"DELETE FROM {src}",
        ]
        if analyze:
            out += [f"ANALYZE {src}", f"ANALYZE {dst}"]
    return out


_SCREEN_TYPES = "('citation.observed', 'resolution.observed', 'standing.checked')"
_SCREEN_RANGE = 50_000  # seqs whose screen rows verify reads per statement

INSERT_SPANS = f"INSERT INTO inbound_spans ({SPAN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
COUNT_BUCKETS = (
    "INSERT INTO inbound_counts (cited, bucket, starts, ends) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (cited, bucket) DO UPDATE SET starts = inbound_counts.starts + excluded.starts, "
    "ends = inbound_counts.ends + excluded.ends"
)
# the inbound observations of a paper as of T known now (params: cited, T's bucket, cited, the bucket's
# start, T, cited, the bucket's start, T): spans started minus spans ended by T (see spans.BUCKET_US)
_COUNT_NOW = (
    "(SELECT coalesce(sum(starts - ends), 0) FROM inbound_counts WHERE cited = ? AND bucket < ?)"
    f" + (SELECT count(*) FROM inbound_spans WHERE cited = ? AND k_to = {OPEN}"
    "   AND t_from >= ? AND t_from <= ?)"
    f" - (SELECT count(*) FROM inbound_spans WHERE cited = ? AND k_to = {OPEN} AND t_to >= ? AND t_to <= ?"
    f"   AND t_to < {OPEN})"
)
# an inbound span visible as of T (observed) and K (recorded), for one cited paper
_VISIBLE = "cited = ? AND t_from <= ? AND t_to > ? AND k_from <= ? AND k_to > ?"
# the same, known now: the spans no append has closed (+t_to: most spans never end, so the index by
# their end would read them all, where the one by their start reads only those started by T)
_VISIBLE_NOW = f"cited = ? AND k_to = {OPEN} AND t_from <= ? AND +t_to > ?"
_INBOUND_ORDER = "citing, reference_index, observation_id"


def _bucket(column: str) -> str:
    """The bucket of an instant column (spans.BUCKET_US): floor division on both engines, which
    truncate an integer division toward zero."""
    b = spans.BUCKET_US
    return f"(CASE WHEN {column} >= 0 THEN {column} / {b} ELSE -((-{column} - 1) / {b}) - 1 END)"


def _starts_ends(columns: str, starts: str, ends: str) -> str:
    """The rows a per-bucket count of the inbound spans known now sums: (`columns`, bucket, instant,
    1, 0) for each start where `starts` holds, (..., 0, 1) for each end where `ends` holds."""
    return (
        f"SELECT {columns}{_bucket('t_from')} AS bucket, t_from AS t, 1 AS s, 0 AS e FROM inbound_spans"
        f" WHERE k_to = {OPEN}{starts}"
        f" UNION ALL SELECT {columns}{_bucket('t_to')}, t_to, 0, 1 FROM inbound_spans"
        f" WHERE k_to = {OPEN}{ends}"
    )


def step_columns(d: Dialect, events: str = "") -> str:
    """The columns of a Step, read from a citation or resolution row of events (`events`: its alias
    and a dot, in a join)."""
    return (
        f"{d.json_text('observation_id')}, {events}seq, type, observed_us, recorded_us, "
        f"{d.json_text('citing_arxiv_id')}, {d.json_text('reference_index')}, {d.json_text('cited_arxiv_id')}"
    )


def _steps_sql(d: Dialect, where: str) -> str:
    """The Steps (`step_columns`) of the events where `where` holds, each event's data parsed once."""
    return d.parsed(
        f"{d.field('observation_id')}, seq, type, observed_us, recorded_us, "
        f"{d.field('citing_arxiv_id')}, {d.field('reference_index')}, {d.field('cited_arxiv_id')}",
        where,
    )


# the webhook outbox of the standing alerts: one row per delivery, state 'pending'|'delivered'|'gave_up'

# (a level, the level its rows move to), smallest first
_MERGES = tuple(zip(LEVELS, LEVELS[1:], strict=False))
_AFTER_O = OBSERVATION[0] + ";"  # the first key past every observation key ("o:" < "o;")


class SqlStore:
    """An event store over one connection per thread; subclasses say how to connect and transact."""

    kind: str
    local: bool
    dialect: ClassVar[Dialect]
    read_begin: ClassVar[str]  # opens a read that sees one state throughout
    rollback_errors: ClassVar[tuple[type[BaseException], ...]] = ()  # ignored when ending a failed tx
    # when a list, every statement this store runs is appended to it (the statement-budget test)
    trace: list[str] | None = None
    db: str  # the path or URL it was opened with
    _conns: ThreadConnections[Any]

    @functools.cached_property
    def tables(self) -> Tables:
        """The Merkle nodes, resume point, signed checkpoint and ledger-wide lookups."""
        return self._new_tables()

    @functools.cached_property
    def past(self) -> PastIndex:
        """What the events past the inbound spans' position hold, as records last read them."""
        return PastIndex()

    @functools.cached_property
    def alerts(self) -> AlertTables:
        """The standing alerts' tables (watches, alerts, the webhook outbox)."""
        return AlertTables(self)

    @functools.cached_property
    def jobs(self) -> JobTables:
        """The background resolve jobs (one running at a time across every process)."""
        return JobTables(self)

    @functools.cached_property
    def writers(self) -> WriterTables:
        """Who made each write (a token's fingerprint, the CLI's user), kept outside the chain."""
        return WriterTables(self)

    @functools.cached_property
    def catalogue(self) -> SqlCatalogue:
        """The resolver's catalogue: each DOI's latest work and each arXiv paper, indexed for search."""
        return SqlCatalogue(self, getattr(self.tables, "readonly_errors", ()))

    def _new_tables(self) -> Tables:
        raise NotImplementedError

    def close(self) -> None:
        """Close this thread's connection."""
        self._conns.close()

    def _conn(self) -> Any:
        raise NotImplementedError

    def write_begin(self) -> tuple[str, ...]:
        """The statements that open a write transaction holding the append lock."""
        raise NotImplementedError

    def _execute(self, conn: Any, sql: str, params: Sequence[Any]) -> Any:
        raise NotImplementedError

    def _execute_many(self, conn: Any, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        raise NotImplementedError

    def in_transaction(self, conn: Any) -> bool:
        """Whether `conn` is inside a transaction already."""
        raise NotImplementedError

    def connection(self) -> Any:
        """This thread's connection (opened on first use)."""
        return self._conn()

    def query(self, conn: Any, sql: str, params: Sequence[Any] = ()) -> Any:
        """One statement (written with `?` placeholders) on `conn`; traced when tracing."""
        sql = self.dialect.sql(sql)
        if self.trace is not None:
            self.trace.append(sql)
        return self._execute(conn, sql, params)

    def query_many(self, conn: Any, sql: str, rows: Sequence[Sequence[Any]]) -> None:
        """One statement run for many rows; traced once per row, as sent."""
        sql = self.dialect.sql(sql)
        if self.trace is not None:
            self.trace.extend([sql] * len(rows))
        self._execute_many(conn, sql, rows)

    @contextmanager
    def transaction(self, begin: Sequence[str]) -> Iterator[Any]:
        """Run `begin`, yield the connection, COMMIT; ROLLBACK if the block (or a later `begin`) fails."""
        conn = self._conn()
        self.query(conn, begin[0])
        try:
            for sql in begin[1:]:
                self.query(conn, sql)
            yield conn
        except BaseException:
            with contextlib.suppress(*self.rollback_errors):
                self.query(conn, "ROLLBACK")
            raise
        self.query(conn, "COMMIT")

    @contextmanager
    def reading(self) -> Iterator[Any]:
        """A read transaction that sees one state throughout, ended whatever happens in it."""
        conn = self._conn()
        self.query(conn, self.read_begin)
        try:
            yield conn
        finally:
            with contextlib.suppress(*self.rollback_errors):
                self.query(conn, "COMMIT")

    # -- writing ---------------------------------------------------------------------

    @contextmanager
    def write(self) -> Iterator[SqlWriteTx]:
        """One write transaction holding the append lock until commit or rollback."""
        with self.transaction(self.write_begin()) as conn:
            yield SqlWriteTx(self, conn)

    # -- reading ---------------------------------------------------------------------

    def head(self) -> Head:
        """The last seq and its hash."""
        return _head(self.query(self._conn(), HEAD_SQL).fetchone())

    @contextmanager
    def snapshot(self, as_of_us: int, known_us: int | None = None) -> Iterator[SqlReader]:
        """A consistent read of the ledger, filtered to observed_at <= T and recorded_at <= K."""
        with self.reading() as conn:
            yield SqlReader(self, conn, as_of_us, FAR_FUTURE if known_us is None else known_us)

    def read_log(
        self, after: int = 0, limit: int | None = None, stream: str | None = None, type: str | None = None
    ) -> list[StoredEvent]:
        """Stored envelopes in seq order after `after`, optionally one stream or type."""
        sql = f"SELECT {ENVELOPE_COLUMNS} FROM events WHERE seq > ?"
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
        return [envelope_row(r) for r in self.query(self._conn(), sql, params)]

    def read_streams(self, prefix: str, upto: int | None = None) -> list[StoredEvent]:
        """The stored envelopes of every stream whose name starts with `prefix` (e.g. `collection:`), in
        seq order, up to seq `upto`: a range of the (stream, ...) index, text compared byte-wise."""
        sql = f"SELECT {ENVELOPE_COLUMNS} FROM events WHERE stream >= ? AND stream < ?"
        params: list[Any] = [prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1)]
        if upto is not None:
            sql += " AND seq <= ?"
            params.append(upto)
        return [envelope_row(r) for r in self.query(self._conn(), sql + " ORDER BY seq", params)]

    def read_of(self, streams: Sequence[str], types: Sequence[str]) -> list[StoredEvent]:
        """The stored envelopes of these streams and of these types, in seq order, in one statement."""
        if not streams or not types:
            return []
        d = self.dialect
        sql = (
            f"SELECT {ENVELOPE_COLUMNS} FROM events WHERE {d.any_of('stream')} AND {d.any_of('type')} "
            "ORDER BY seq"
        )
        params = (d.bind_list(sorted(set(streams))), d.bind_list(sorted(set(types))))
        return [envelope_row(r) for r in self.query(self._conn(), sql, params)]

    def iter_chain(self, after: int = 0, batch: int = 5000) -> Iterator[ChainLink]:
        """Every stored event in seq order, with the index columns verify rechecks."""
        return map(link_row, self.iter_rows(after, batch))

    def iter_rows(self, after: int = 0, batch: int = 5000) -> Iterator[tuple[Any, ...]]:
        """iter_chain's rows as read: ENVELOPE_COLUMNS, observed_us, recorded_us (data as text)."""
        for rows in self.iter_pages(after, batch):
            yield from rows

    def iter_pages(self, after: int = 0, batch: int = 5000) -> Iterator[list[tuple[Any, ...]]]:
        """iter_rows' rows, `batch` at a time, each part as one list (one part in memory at a time)."""
        conn = self._conn()
        while True:
            rows = self.query(
                conn,
                f"SELECT {ENVELOPE_COLUMNS}, observed_us, recorded_us FROM events "
                "WHERE seq > ? ORDER BY seq LIMIT ?",
                (after, batch),
            ).fetchall()
            if not rows:
                return
            after = rows[-1][0]
            yield rows
            del rows  # not held while the next part is read

    def iter_check_works(self) -> Iterator[tuple[Any, ...]]:
        """Every check_works row at either level, ordered by seq (verify compares them with the data)."""
        yield from self.query(
            self._conn(),
            f"SELECT {CHECK_WORKS_COLUMNS} FROM check_works_all ORDER BY seq, work_id, source, observed_us",
        )

    def envelopes(self, seqs: Sequence[int]) -> list[StoredEvent]:
        """The stored envelopes of the given seqs, in seq order."""
        d = self.dialect
        rows = self.query(
            self._conn(),
            f"SELECT {ENVELOPE_COLUMNS} FROM events WHERE {d.any_of('seq')} ORDER BY seq",
            (d.bind_list(seqs),),
        )
        return [envelope_row(r) for r in rows]

    def paper_history(self, arxiv_id: str) -> list[Fact]:
        """Every paper.observed snapshot of one paper, in seq order."""
        rows = self.query(
            self._conn(),
            f"SELECT {FACT_COLUMNS} FROM events WHERE stream = ? AND type = 'paper.observed' ORDER BY seq",
            (f"paper:{arxiv_id}",),
        )
        return [fact_row(r) for r in rows]

    def papers(self, limit: int = 100, offset: int = 0) -> list[str]:
        """Arxiv ids of papers with at least one snapshot, most events first (a page of them)."""
        rows = self.query(
            self._conn(),
            "SELECT substr(stream, 7) FROM events WHERE type = 'paper.observed' "
            "GROUP BY stream ORDER BY count(*) DESC, stream LIMIT ? OFFSET ?",
            (limit, offset),
        )
        return [r[0] for r in rows]


def _head(row: Sequence[Any] | None) -> Head:
    return Head(0, GENESIS) if row is None else Head(row[0], row[1])


def _existing(store: SqlStore, conn: Any, event_ids: Sequence[str]) -> dict[str, StoredEvent]:
    """Events stored under any of these ids."""
    d = store.dialect
    rows = store.query(
        conn,
        f"SELECT {ENVELOPE_COLUMNS} FROM events WHERE {d.keyed('event_keys_all')}",
        (d.bind_list([EVENT + i for i in event_ids]),),
    )
    return {e.event_id: e for e in map(envelope_row, rows)}


def steps_of(store: SqlStore, conn: Any, observation_ids: Sequence[str]) -> dict[str, list[Step]]:
    """The stored citations and resolutions of each of these observations (an empty list: none)."""
    d = store.dialect
    rows = store.query(
        conn,
        _steps_sql(d, d.keyed("event_keys_all")),
        (d.bind_list([OBSERVATION + o for o in observation_ids]),),
    )
    found: dict[str, list[Step]] = {o: [] for o in observation_ids}
    for step in map(step_row, rows):
        found[step.observation_id].append(step)
    return found


def citing_of(steps: dict[str, list[Step]]) -> dict[str, str]:
    """observation_id -> its citing paper, for the observations with a citation.observed among `steps`."""
    return {
        oid: min(s.citing for s in mine if s.citing is not None)
        for oid, mine in steps.items()
        if any(s.type == CITATION for s in mine)
    }


class SqlWriteTx:
    """The reads and writes an append needs, inside one write transaction."""

    def __init__(self, store: SqlStore, conn: Any) -> None:
        self.store = store
        self.conn = conn

    def _q(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self.store.query(self.conn, sql, params)

    def head(self) -> tuple[Head, int]:
        """The head and its recorded_us (0 when empty)."""
        row = self._q("SELECT seq, hash, recorded_us FROM events ORDER BY seq DESC LIMIT 1").fetchone()
        return (Head(0, GENESIS), 0) if row is None else (Head(row[0], row[1]), row[2])

    def existing(self, event_ids: Sequence[str]) -> dict[str, StoredEvent]:
        """Events already stored under any of these ids."""
        return _existing(self.store, self.conn, event_ids)

    def citing_papers(self, observation_ids: Sequence[str]) -> dict[str, str]:
        """observation_id -> its citing paper, for ids that have a citation.observed."""
        return citing_of(steps_of(self.store, self.conn, observation_ids))

    def stream_versions(self, streams: Sequence[str]) -> dict[str, int]:
        """Current version of each stream (absent streams are left out)."""
        d = self.store.dialect
        rows = self._q(d.latest_versions(), (d.bind_list(streams),))
        return {r[0]: r[1] for r in rows}

    def insert(self, rows: Rows) -> None:
        """Insert the new events and their keys, moving levels down when the seqs pass a level's size
        (the caller commits); what else the events imply is the projector's (ledger/storage/projector.py)."""
        self.store.query_many(self.conn, _INSERT_EVENTS, rows.events)
        # a level moves in the append whose seqs pass a multiple of its size: no read needed to know
        # (each size a multiple of the one before, a level moves only when the one above it does)
        before, last = rows.events[0][0] - 1, rows.events[-1][0]
        levels = zip(_MERGES, MOVES, strict=True)
        moves = [m for m, _ in itertools.takewhile(lambda m: last // m[1] != before // m[1], levels)]
        d = self.store.dialect
        if moves and d.direct_moves:
            self._insert_moved(rows, moves[-1][1], [source for source, _ in moves])
            return
        self._insert_derived(rows, "recent")
        for source, target in moves:
            for sql in _move(source, target, d.analyze):
                self._q(sql)

    def _insert_derived(self, rows: Rows, level: str, ordered: bool = False) -> None:
        """The new events' keys into `level` (sorted by key if `ordered`)."""
        keys = sorted(rows.keys) if ordered else rows.keys
        self.store.query_many(self.conn, insert_keys(level), keys)

    def _insert_moved(self, rows: Rows, target: str, sources: Sequence[str]) -> None:
        """What the moves of this append leave, written directly: every level of `sources` moved into
        `target`, then the new rows (sorted) into `target` too, each statistics renewed once."""
        for source in sources:
            for table, (columns, key) in _DERIVED.items():
                src, dst = level_table(table, source), level_table(table, target)
                self._q(f"INSERT INTO {dst} ({columns}) SELECT {columns} FROM {src} ORDER BY {key}")
                self._q(f"DELETE FROM {src}")
        self._insert_derived(rows, target, ordered=True)
        if self.store.dialect.analyze:
            for level in (*sources, target):
                for table in _DERIVED:
                    self._q(f"ANALYZE {level_table(table, level)}")

    def last_receipt(self, source: str) -> IngestReceipt | None:
        """The receipt of the last file of `source` accepted (read under the append lock)."""
        row = self._q(LAST_RECEIPT, (source,)).fetchone()
        return None if row is None else IngestReceipt(*row)

    def save_receipt(self, receipt: IngestReceipt) -> None:
        """Record an ingest in this transaction: committed with its events or not at all."""
        self._q(INSERT_RECEIPT, tuple(receipt))

    def save_writers(self, rows: Sequence[WriterRow]) -> None:
        """Record who made these writes, in the transaction of their events."""
        save_writers(self.store, self.conn, rows)

    def save_import_progress(self, progress: ImportProgress) -> None:
        """Record how far a file's import has come, in the transaction of the batch that got it there."""
        self._q(SAVE_PROGRESS, tuple(progress))


class SqlReader:
    """The five queries one record needs, one statement each, filtered to observed <= T, recorded <= K."""

    def __init__(self, store: SqlStore, conn: Any, as_of_us: int, known_us: int) -> None:
        self.store = store
        self.conn = conn
        self.t = as_of_us
        self.k = known_us
        self._noticed_cache: list[str] | None = None
        self._screen_tail: screen.Tail | None = None
        self._tail_refs: list[screen.RefRow] | None = None

    def _facts(self, sql: str, params: Sequence[Any]) -> list[Fact]:
        return [fact_row(r) for r in self.store.query(self.conn, sql, params)]

    def head(self) -> Head:
        """The head this snapshot sees (not counted in the statement budget)."""
        return _head(self.store.query(self.conn, HEAD_SQL).fetchone())

    def paper_stream(self, arxiv_id: str) -> list[Fact]:
        """Statement 1: the paper's own stream (snapshots, citations, resolutions, measurements)."""
        return self._facts(
            f"SELECT {FACT_COLUMNS} FROM events WHERE stream = ? AND observed_us <= ? "
            "AND recorded_us <= ? ORDER BY seq",
            (f"paper:{arxiv_id}", self.t, self.k),
        )

    def inbound(self, arxiv_id: str, limit: int) -> tuple[int, list[Fact]]:
        """Statements 2 and 3: how many observations are inbound to the paper, counted over its spans,
        and the citations and resolutions of the first `limit` of them in the record's order. The spans
        hold the events up to their projection's position: the observations of the events past it that
        can touch this paper (read with the count, see derived/past.py) are left out of the spans read
        and folded in from their events."""
        where = (arxiv_id, self.t, self.t, self.k, self.k)
        held = self.store.past.held()
        since = (-1, 0) if held is None else (held.position, held.upto)
        if self.k < FAR_FUTURE:  # known at an earlier K: every span of the paper is read, once
            tail = self.store.query(self.conn, f"SELECT {_tail(self.store.dialect)}", since).fetchone()
            count_all = f"SELECT (SELECT count(*) FROM inbound_spans WHERE {_VISIBLE})"
            return self._inbound(count_all, where, where, limit, past=self._past(held, tail, arxiv_id))
        start = self.t - self.t % spans.BUCKET_US
        row = self.store.query(
            self.conn,
            f"SELECT {_COUNT_NOW}, "
            "(SELECT coalesce(sum(starts - ends), 0) FROM inbound_counts WHERE cited = ?), "
            + _tail(self.store.dialect),
            (arxiv_id, self.t // spans.BUCKET_US, *(arxiv_id, start, self.t) * 2, arxiv_id, *since),
        ).fetchone()
        # int(): PostgreSQL sums bigints as numeric
        count, spans_now = int(row[0]), int(row[1])
        # The first `limit` in the record's order: walking the paper's spans in that order finds them
        # after about limit * spans_now / count spans; when few are visible as of T (an early T), the
        # spans started by T, read by start and then sorted, are fewer (the ORDER BY expression keeps
        # the planner off the ordered walk).
        early = count * count * 4 < limit * spans_now
        order = "citing || '', reference_index, observation_id" if early else _INBOUND_ORDER
        return self._inbound(
            f"SELECT {count}", (), (arxiv_id, self.t, self.t), limit, order, _VISIBLE_NOW,
            past=self._past(held, row[2:], arxiv_id),
        )  # fmt: skip

    def _past(self, held: Past | None, tail: Sequence[Any], cited: str) -> tuple[int, Touching]:
        """The spans' position, and what of the events past it the paper folds in (`tail`: the
        position, the head and the rows of `_tail`)."""
        position, head, rows = int(tail[0] or 0), int(tail[1] or 0), tail[2]
        return position, self.store.past.touching(held, position, head, rows, cited)

    def _inbound(
        self,
        count: str,
        counted: Sequence[Any],
        where: Sequence[Any],
        limit: int,
        order: str = _INBOUND_ORDER,
        visible: str = _VISIBLE,
        *,
        past: tuple[int, Touching],
    ) -> tuple[int, list[Fact]]:
        # the count on a row of its own, joined to the shown events (none when nothing is shown), and
        # every event of the observations past the spans' position that can touch this paper
        d = self.store.dialect
        position, touching = past
        touched = skip = extra = ""
        params: list[Any] = []
        if touching:
            listed = "SELECT value FROM json_each(?)" if d.json_lists else "SELECT unnest(CAST(? AS text[]))"
            touched = (
                "touched AS (SELECT observation_id AS oid FROM inbound_spans WHERE cited = ? AND "
                f"{d.any_of('citing')} UNION {listed}), "
            )
            params += [where[0], d.bind_list(touching.citing), d.bind_list(touching.named)]
            skip = " AND observation_id NOT IN (SELECT oid FROM touched)"
            keyed = (
                f"SELECT k.seq FROM touched AS t JOIN event_keys_all AS k ON k.key = '{OBSERVATION}' || t.oid"
                if d.json_lists
                else "SELECT seq FROM event_keys_all WHERE key = "
                f"ANY(ARRAY(SELECT '{OBSERVATION}' || oid FROM touched))"
            )
            extra = f" UNION ALL SELECT seq, 1 FROM events WHERE seq IN ({keyed})"
        params += [*where, limit, *counted]
        rows = self.store.query(
            self.conn,
            f"WITH {touched}shown AS (SELECT citation_seq, resolution_seq FROM inbound_spans "
            f"  WHERE {visible}{skip} ORDER BY {order} LIMIT ?), "
            " picked AS (SELECT citation_seq AS seq, 0 AS tail FROM shown"
            f"  UNION ALL SELECT resolution_seq, 0 FROM shown{extra}) "
            f"SELECT c.n, p.tail, e.recorded_us, {', '.join('e.' + c for c in FACT_COLUMNS.split(', '))} "
            f"FROM ({count} AS n) AS c "
            "LEFT JOIN (picked AS p JOIN events AS e ON e.seq = p.seq) ON 1 = 1 "
            "ORDER BY e.seq",
            params,
        ).fetchall()
        total = int(rows[0][0])
        facts = [fact_row(r[3:]) for r in rows if r[3] is not None and not r[1]]
        if not touching:
            return total, facts
        folded_from = [(fact_row(r[3:]), int(r[2])) for r in rows if r[3] is not None and r[1]]
        more, folded = _fold(where[0], self.t, self.k, position, folded_from)
        # the first `limit` observations in the record's order, of those read and those folded in
        by_oid: dict[str, list[Fact]] = {}
        for f in (*facts, *folded):
            by_oid.setdefault(f.data.observation_id, []).append(f)
        first = sorted(by_oid.values(), key=_record_order)[:limit]
        return total + more, sorted((f for mine in first for f in mine), key=lambda f: f.seq)

    def inbound_seqs(self, arxiv_id: str, offset: int, limit: int) -> list[tuple[int, int]]:
        """(citation seq, resolution seq) of the inbound observations `offset`.. `offset + limit` in
        the record's order (the integrity report's and the bundle's pages)."""
        rows = self.store.query(
            self.conn,
            f"SELECT citation_seq, resolution_seq FROM inbound_spans WHERE {_VISIBLE} "
            f"ORDER BY {_INBOUND_ORDER} LIMIT ? OFFSET ?",
            (arxiv_id, self.t, self.t, self.k, self.k, limit, offset),
        )
        return [(r[0], r[1]) for r in rows]

    def snapshots(self, arxiv_ids: Sequence[str]) -> list[Fact]:
        """Statement 3: paper.observed events of the given papers."""
        if not arxiv_ids:
            return []
        d = self.store.dialect
        return self._facts(
            f"SELECT {FACT_COLUMNS} FROM events WHERE type = 'paper.observed' AND {d.any_of('stream')} "
            "AND observed_us <= ? AND recorded_us <= ? ORDER BY seq",
            (d.bind_list([f"paper:{a}" for a in arxiv_ids]), self.t, self.k),
        )

    def source_heads(self) -> list[SourceHead]:
        """Statement 4: the latest standing check of every source, by index seeks.

        A recursive skip-scan finds each source stream (one seek per source), then a backward seek on
        events_stream_type_time its latest check as of T and K: the cost does not grow with the
        number of checks in the ledger (a window over every check did: 30 ms per record at 1M).
        """
        rows = self.store.query(self.conn, SOURCE_HEADS_SQL, (self.t, self.k))
        return [SourceHead(*r) for r in rows]

    def check_history(self, work_ids: Sequence[str]) -> list[tuple[Any, ...]]:
        """Every standing check covering any of these works as of T and K (its per-work row, or its
        every-work row): (work_id, source, observed_at, observed_us, seq, hash, notices JSON), by seq.
        Not a record's statement: the alerts a page and a feed show."""
        if not work_ids:
            return []
        d = self.store.dialect
        # a work no check ever listed a notice for has nothing to show: its rows are not read
        noticed = self._noticed(work_ids)
        rows = self.store.query(
            self.conn,
            "SELECT c.work_id, c.source, e.observed_at, c.observed_us, c.seq, e.hash, c.notices, "
            "c.recorded_us FROM check_works_all AS c JOIN events AS e ON e.seq = c.seq "
            f"WHERE {d.any_of('c.work_id')} AND c.observed_us <= ? AND c.recorded_us <= ? "
            # the checks past the projection's position, their rows derived here
            "UNION ALL SELECT NULL, NULL, observed_at, observed_us, seq, hash, data, recorded_us FROM events "
            f"WHERE {_CHECKS_TAIL} ORDER BY 5",
            (d.bind_list(noticed), self.t, self.k, self.t, self.k),
        )
        wanted = set(noticed)
        out: list[tuple[Any, ...]] = []
        for w, source, observed_at, observed_us, seq, hash_, notices, recorded_us in rows:
            if w is not None:
                out.append((w, source, observed_at, observed_us, seq, hash_, notices))
                continue
            out += [
                (c.work_id, c.source, observed_at, observed_us, seq, hash_, c.notices.decode())
                for c in stored_checks(seq, observed_at, observed_us, recorded_us, notices)
                if c.work_id in wanted
            ]
        # by seq, then work: the same order whichever rows were folded in
        return sorted(out, key=lambda r: (r[4], r[0]))

    def work_checks(self, works: Sequence[tuple[str, int]]) -> list[CheckRow]:
        """Statement 5: per (work_id, since) and source, the latest check covering the work. The
        projection holds the checks up to its position; the checks past it come with the same
        statement (a row each, work_id NULL, its data for notices) and are folded in here."""
        if not works:
            return []
        d = self.store.dialect
        # each level joined on its own (a join into the UNION ALL view would read all of it)
        covering = " UNION ALL ".join(
            "SELECT w.work_id, w.since, c.source, e.observed_at, c.observed_us, c.seq, c.notices"
            f" FROM wanted w JOIN {level_table('check_works', level)} c ON c.work_id IN (w.work_id, '*')"
            " JOIN events e ON e.seq = c.seq"
            " WHERE c.observed_us <= ? AND c.observed_us >= w.since AND c.recorded_us <= ?"
            for level in LEVELS
        )
        rows = self.store.query(
            self.conn,
            f"WITH wanted(work_id, since) AS ({d.pairs('text', 'bigint')}) "
            "SELECT work_id, since, source, observed_at, observed_us, seq, notices FROM ("
            "  SELECT *, row_number() OVER (PARTITION BY work_id, since, source"
            "   ORDER BY observed_us DESC, seq DESC) AS rn"
            f"  FROM ({covering}) AS c"
            ") AS r WHERE rn = 1"
            f" UNION ALL SELECT NULL, recorded_us, NULL, observed_at, observed_us, seq, data FROM events"
            f" WHERE {_CHECKS_TAIL}",
            (*d.bind_pairs(works), *(self.t, self.k) * len(LEVELS), self.t, self.k),
        ).fetchall()
        latest = {
            (w, s, src): CheckRow(w, s, src, oa, ous, seq, json.loads(n))
            for w, s, src, oa, ous, seq, n in rows
            if w is not None
        }
        sinces: dict[str, list[int]] = {}
        for w, since in works:
            sinces.setdefault(w, []).append(since)
        for _, recorded_us, _, observed_at, observed_us, seq, data in (r for r in rows if r[0] is None):
            for c in stored_checks(seq, observed_at, observed_us, recorded_us, data):
                for w in sinces if c.work_id == "*" else (c.work_id,) if c.work_id in sinces else ():
                    for since in sinces[w]:
                        held = latest.get((w, since, c.source))
                        if observed_us >= since and (
                            held is None or (held.observed_us, held.seq) < (observed_us, seq)
                        ):
                            notices = json.loads(c.notices)
                            latest[w, since, c.source] = CheckRow(
                                w, since, c.source, observed_at, observed_us, seq, notices
                            )
        return [latest[key] for key in sorted(latest)]

    # -- the screen (service/screen.py): references to works with notices ----------------

    # The screen's index holds the events up to its projection's position; each read folds in those
    # past it (at most the allowed lag) from this snapshot's events, so the answer never waits on the
    # projector and is the same whatever its lag, on a ledger that cannot be written too.

    def _tail(self) -> screen.Tail:
        """The events past the screen projection's position, and their notices (read once per reader)."""
        if self._screen_tail is None:
            self._screen_tail = screen.tail(self.store, self.conn)
        return self._screen_tail

    def _noticed_works(self) -> list[str]:
        """The works some check as of T and K lists a notice for (read once per reader)."""
        if self._noticed_cache is None:
            folded = self._tail().noticed(self.t, self.k)
            rows = self.store.query(
                self.conn,
                "SELECT DISTINCT work_id FROM screen_notices WHERE observed_us <= ? AND recorded_us <= ?",
                (self.t, self.k),
            )
            self._noticed_cache = sorted({r[0] for r in rows} | folded)
        return self._noticed_cache

    def _folded_refs(self, papers: Collection[str] | None) -> list[screen.RefRow]:
        """The references past the projection's position that name a work with a notice (of `papers`)."""
        if self._tail_refs is None:
            self._tail_refs = screen.tail_refs(self.store, self.conn, self._tail(), self._noticed_works())
        return [r for r in self._tail_refs if papers is None or r.citing in papers]

    def _flagged_refs(self, papers: Sequence[str] | None) -> tuple[str, list[Any]]:
        """The screen_refs rows of works some check as of T and K lists a notice for (of `papers`).
        The works are bound as a list: each is one seek of the table's key, whatever the planner
        knows of the table's size."""
        d = self.store.dialect
        where = d.any_of("r.work_id")
        params: list[Any] = [d.bind_list(self._noticed_works())]
        if papers is not None:
            where += f" AND {d.any_of('r.citing')}"
            params.append(d.bind_list(sorted(papers)))
        return where, params

    def screen_citing(self, papers: Sequence[str] | None, after: str | None, limit: int) -> list[str]:
        """The first `limit` citing papers (after `after`, in code-point order) with a reference that
        ever named a work some check as of T and K lists a notice for."""
        where, params = self._flagged_refs(papers)
        if after is not None:
            where += " AND r.citing > ?"
            params.append(after)
        rows = self.store.query(
            self.conn,
            f"SELECT DISTINCT r.citing FROM screen_refs AS r WHERE {where} ORDER BY r.citing LIMIT ?",
            (*params, limit),
        )
        folded = (r.citing for r in self._folded_refs(None if papers is None else set(papers)))
        return sorted({r[0] for r in rows} | {c for c in folded if after is None or c > after})[:limit]

    def screen_observations(self, citing: Sequence[str]) -> list[str]:
        """The references of these papers that ever named a work some check as of T and K lists a
        notice for: their observation ids, sorted."""
        if not citing:
            return []
        where, params = self._flagged_refs(citing)
        rows = self.store.query(
            self.conn, f"SELECT DISTINCT r.observation_id FROM screen_refs AS r WHERE {where}", params
        )
        folded = {r.observation_id for r in self._folded_refs(set(citing))}
        return sorted({r[0] for r in rows} | folded)

    def screen_facts(self, observation_ids: Sequence[str]) -> list[Fact]:
        """The citations and resolutions as of T and K of these observations, in seq order."""
        if not observation_ids:
            return []
        d = self.store.dialect
        return self._facts(
            f"SELECT {FACT_COLUMNS} FROM events WHERE {d.keyed('event_keys_all')} "
            "AND observed_us <= ? AND recorded_us <= ? ORDER BY seq",
            (d.bind_list([OBSERVATION + o for o in observation_ids]), self.t, self.k),
        )

    def notices_learned(self, work_ids: Sequence[str]) -> dict[tuple[str, str, str], tuple[int, int]]:
        """(work_id, source, notice JSON) -> (recorded_us, seq) of the first check as of T and K that
        listed that notice for the work: when the ledger learned it."""
        if not work_ids:
            return {}
        d = self.store.dialect
        rows = self.store.query(
            self.conn,
            "SELECT work_id, source, notice, min(recorded_us), min(seq) FROM screen_notices "
            f"WHERE {d.any_of('work_id')} AND observed_us <= ? AND recorded_us <= ? "
            "GROUP BY work_id, source, notice",
            (d.bind_list(sorted(set(work_ids))), self.t, self.k),
        )
        found = {(r[0], r[1], r[2]): (r[3], r[4]) for r in rows}
        return self._tail().learned(found, work_ids, self.t, self.k)

    # -- a paper's timeline (projections/timeline.py): every instant, not one -----------

    def at(self, as_of_us: int, known_us: int | None = None) -> SqlReader:
        """A reader over the same consistent read, filtered to another T (and K)."""
        return SqlReader(self.store, self.conn, as_of_us, FAR_FUTURE if known_us is None else known_us)

    def checks(self) -> list[Checked]:
        """Every standing check of every source, in (observed_us, seq) order."""
        rows = self.store.query(
            self.conn,
            "SELECT substr(stream, 8), observed_at, observed_us, seq FROM events "
            "WHERE stream >= 'source:' AND stream < 'source;' AND type = 'standing.checked' "
            "AND observed_us <= ? AND recorded_us <= ? ORDER BY observed_us, seq",
            (self.t, self.k),
        )
        return [Checked(*r) for r in rows]

    def _check_works(self, columns: str, work_ids: Sequence[str], also: str = "") -> list[CheckWorkRow]:
        """The check_works rows of these works as of T and K (where `also` holds too): the
        projection's (`columns` of them, the rest NULL) and, from the same statement, those of the
        checks past its position, derived from their events here (whole rows)."""
        d = self.store.dialect
        wanted = set(work_ids)
        where = f"{d.any_of('work_id')} AND {also}{_CHECK_WINDOW}"
        # `also` given: a set of works is asked for (UNION), else every row
        union = "UNION" if also else "UNION ALL"
        rows = self.store.query(
            self.conn,
            _each_level("check_works", columns, where, union)
            + f" UNION ALL SELECT NULL, observed_at, observed_us, seq, recorded_us, data FROM events "
            f"WHERE {_CHECKS_TAIL}",
            (*(d.bind_list(sorted(wanted)), self.t, self.k) * len(LEVELS), self.t, self.k),
        ).fetchall()
        out = [
            CheckWorkRow(w, src, o_us, seq, r_us, n) for w, src, o_us, seq, r_us, n in rows if w is not None
        ]
        for _, observed_at, observed_us, seq, recorded_us, data in (r for r in rows if r[0] is None):
            out += [
                c
                for c in stored_checks(seq, observed_at, observed_us, recorded_us, data)
                if c.work_id in wanted
            ]
        return out

    def _noticed(self, work_ids: Sequence[str]) -> list[str]:
        """Those of these works some check as of T and K lists a notice for, and '*' (every check of
        all works): the only ones whose check rows can hold a notice."""
        # typed NULLs: PostgreSQL types a UNION's columns pairwise, and the folded rows' come last
        blank = "CAST(NULL AS TEXT), CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), CAST(NULL AS BIGINT), NULL"
        noticed = self._check_works(f"work_id, {blank}", work_ids, "notices <> '[]' AND ")
        return sorted({r.work_id for r in noticed if r.notices is None or r.notices != b"[]"} | {"*"})

    def notice_rows(self, work_ids: Sequence[str]) -> list[CheckWorkRow]:
        """Every check_works row of those of these works that some check lists a notice for, and of
        every check of all works ('*'), in (observed_us, seq, work_id) order: what the notices of the
        paper's cited works were at each check (the rows of works never noticed are not read)."""
        if not work_ids:
            return []
        columns = "work_id, source, observed_us, seq, recorded_us, notices"
        rows = self._check_works(columns, self._noticed(work_ids))
        return sorted(
            (r if isinstance(r.notices, bytes) else r._replace(notices=r.notices.encode()) for r in rows),
            key=lambda r: (r.observed_us, r.seq, r.work_id),
        )

    def inbound_spans(self, arxiv_id: str, limit: int) -> list[tuple[Span, int | None]] | None:
        """The paper's inbound spans known now that start by T, by (t_from, observation_id), each with
        the seq of the event that ended it (the latest of its observation's at t_to; None while open);
        None when there are more than `limit` (the timeline then counts them per day)."""
        ended = (
            f"CASE WHEN s.t_to < {OPEN} THEN (SELECT max(e.seq) FROM events AS e WHERE e.seq IN ("
            f"  SELECT k.seq FROM event_keys_all AS k WHERE k.key = '{OBSERVATION}' || s.observation_id)"
            "  AND e.observed_us = s.t_to) END"
        )
        rows = self.store.query(
            self.conn,
            "SELECT s.cited, s.citing, s.reference_index, s.observation_id, s.t_from, s.t_to, "
            f"s.citation_seq, s.resolution_seq, {ended} FROM inbound_spans AS s "
            f"WHERE s.cited = ? AND s.k_to = {OPEN} AND s.t_from <= ? "
            "ORDER BY s.t_from, s.observation_id LIMIT ?",
            (arxiv_id, self.t, limit + 1),
        ).fetchall()
        return None if len(rows) > limit else [(Span(*r[:8]), r[8]) for r in rows]

    def inbound_days(self, arxiv_id: str) -> list[InboundDay]:
        """Per day of observed time, the paper's inbound spans known now that start or end in it
        (up to T): the first and last such instant, how many distinct ones, how many start and end."""
        rows = self.store.query(
            self.conn,
            "SELECT bucket, min(t), max(t), count(DISTINCT t), sum(s), sum(e) FROM ("
            + _starts_ends("", " AND cited = ? AND t_from <= ?", " AND cited = ? AND t_to <= ?")
            + ") AS c GROUP BY bucket ORDER BY bucket",
            (arxiv_id, self.t, arxiv_id, self.t),
        )
        # int(): PostgreSQL sums bigints as numeric
        return [InboundDay(*(int(v) for v in r)) for r in rows]


def _works_tail(d: Dialect) -> str:
    """The condition on events (one bound instant, T) of the citations and resolutions observed as of
    T past the works-index keys' position whose cited work has a work_id: the ones a reader folds in."""
    return (
        f"type IN ('{CITATION}', '{spans.RESOLUTION}') AND seq > coalesce("
        f"(SELECT seq FROM projections WHERE name = '{WORK_KEYS}'), 0) "
        "AND seq <= (SELECT max(seq) FROM events) "
        f"AND observed_us <= ? AND {d.json_text('cited_work.work_id')} IS NOT NULL"
    )


def _fact_keys(f: Fact) -> list[str]:
    """The works-index keys of a citation's or resolution's cited work (none without a work_id)."""
    w = f.data.cited_work
    return [] if w is None or w.work_id is None else cited_keys(w.doi, w.arxiv_id, w.pith_arxiv_id)


_CITED_WORK = msgspec.json.Decoder(GlanceWork)


def _work_keys_of(work: str) -> list[str]:
    """The works-index keys of a cited work given as JSON text (one with a work_id)."""
    w = _CITED_WORK.decode(work)
    return cited_keys(w.doi, w.arxiv_id, w.pith_arxiv_id)


def _tail(d: Dialect) -> str:
    """Three columns: the spans' position, the head, and one row (derived/past.py) for each citation
    and resolution past the position and past a seq the reader holds already (params: the position
    and the seq its index holds up to; every one past the position when its position is another). A
    read after no new event is one probe of the events past the head."""
    position = f"coalesce((SELECT seq FROM projections WHERE name = '{spans.NAME}'), 0)"
    row = (
        f"CAST(seq AS TEXT) || '{FIELD_SEP}' || {d.json_text('observation_id')} || '{FIELD_SEP}' || "
        f"substr(stream, 7) || '{FIELD_SEP}' || coalesce({d.json_text('cited_arxiv_id')}, '')"
    )
    joined = f"group_concat({row}, '{ROW_SEP}')" if d.json_lists else f"string_agg({row}, '{ROW_SEP}')"
    return (
        f"{position}, (SELECT max(seq) FROM events), (SELECT {joined} FROM events "
        f"WHERE seq > (CASE WHEN {position} = ? THEN ? ELSE {position} END) "
        # bounded on both sides: a planner takes a range between two unknowns for a few rows, where
        # one side alone is a third of the events
        f"AND seq <= (SELECT max(seq) FROM events) AND type IN ('{CITATION}', '{spans.RESOLUTION}'))"
    )


def _record_order(facts: Sequence[Fact]) -> tuple[str, int, str]:
    """An inbound observation's place in the record's order (its citation's citing paper and reference
    index, then its id): that of the inbound spans' key."""
    d: Any = next(f.data for f in facts if f.type == CITATION)
    return d.citing_arxiv_id, d.reference_index, d.observation_id


def _fold(
    cited: str, t: int, k: int, position: int, tail: Sequence[tuple[Fact, int]]
) -> tuple[int, list[Fact]]:
    """What the events past the spans' position change in a paper's inbound observations as of T and
    K: (how many more are inbound, the citation and resolution of each touched one now inbound), from
    every event (with its recorded_us) of the observations they touch, which the spans read left out."""
    by_oid: dict[str, list[Step]] = {}
    facts = {f.seq: f for f, _ in tail}
    for f, recorded_us in tail:
        if recorded_us > k:
            continue
        d: Any = f.data
        citation = f.type == CITATION
        by_oid.setdefault(d.observation_id, []).append(
            Step(d.observation_id, f.seq, f.type, f.observed_us, recorded_us,
                 d.citing_arxiv_id if citation else None, d.reference_index if citation else None,
                 None if citation else d.cited_arxiv_id)
        )  # fmt: skip

    def shown(steps: Sequence[Step]) -> Span | None:
        return next((s for s in spans.spans(steps) if s.cited == cited and s.t_from <= t < s.t_to), None)

    more, found = 0, []
    for steps in by_oid.values():
        # the stored spans hold the steps up to the position (those the read left out), the fold all
        more -= shown([s for s in steps if s.seq <= position]) is not None
        now = shown(steps)
        if now is not None:
            more += 1
            found += [facts[now.citation_seq], facts[now.resolution_seq]]
    return more, found


@functools.cache
def _index_sql(d: Dialect) -> str:
    """INSERT into search_titles the distinct titles that events seq > ? AND seq <= ? carry: a paper's
    own, and the cited work's of a citation or a resolution (whose reference index is its citation's),
    each under the paper of the event's stream; a title already there keeps its first seq."""
    paper = "type = 'paper.observed'"
    citation = (
        f"SELECT CAST({d.json_text('reference_index')} AS INTEGER) FROM events "
        "WHERE type = 'citation.observed' AND "
        f"seq IN (SELECT seq FROM event_keys_all WHERE key = '{OBSERVATION}' || t.observation_id) LIMIT 1"
    )
    return (
        "INSERT INTO search_titles (seq, arxiv_id, observation_id, reference_index, title) "
        "SELECT seq, arxiv_id, observation_id, "
        f"CASE WHEN type = 'resolution.observed' THEN ({citation}) ELSE reference_index END, title FROM ("
        "  SELECT seq, type, substr(stream, 7) AS arxiv_id,"
        f"  CASE WHEN {paper} THEN '' ELSE {d.json_text('observation_id')} END AS observation_id,"
        f"  CASE WHEN type = 'citation.observed' THEN CAST({d.json_text('reference_index')} AS INTEGER) END"
        "    AS reference_index,"
        f"  trim(CASE WHEN {paper} THEN {d.json_text('title')} ELSE {d.json_text('cited_work.title')} END)"
        "    AS title"
        "  FROM events WHERE seq > ? AND seq <= ?"
        "  AND type IN ('paper.observed', 'citation.observed', 'resolution.observed')"
        ") AS t WHERE title IS NOT NULL AND title <> '' ORDER BY seq "
        "ON CONFLICT DO NOTHING"
    )


class SqlTables:
    """The ledger's other tables over the store's per-thread connection: what both backends share."""

    fill_begin: ClassVar[tuple[str, ...]]  # opens a transaction in which one filler at a time stores nodes
    search_begin: ClassVar[tuple[str, ...]]  # opens a transaction in which one indexer at a time runs
    readonly_errors: ClassVar[tuple[type[BaseException], ...]]  # a best-effort write gives up on these

    def __init__(self, store: SqlStore) -> None:
        self.store = store

    @property
    def list_part(self) -> int | None:
        """Ids or observations a resumed walk looks up in one statement (see Dialect.list_part)."""
        return self.store.dialect.list_part

    def side_file(self, suffix: str) -> Path:
        """A file of this ledger (signing key, tokens): see interface.side_path."""
        return side_path(self.store.db, suffix)

    def _q(self, sql: str, params: Sequence[Any] = ()) -> Any:
        return self.store.query(self.store.connection(), sql, params)

    # -- Merkle nodes ----------------------------------------------------------------

    def fill_state(self) -> tuple[int, str | None]:
        """(leaves covered by stored nodes, chain hash of the last of them)."""
        row = self._q("SELECT leaves, chain_hash FROM merkle_fill WHERE id = 1").fetchone()
        return (0, None) if row is None else (int(row[0]), str(row[1]))

    def event_hash(self, seq: int) -> str | None:
        """The stored chain hash of one seq (None if absent)."""
        row = self._q("SELECT hash FROM events WHERE seq = ?", (seq,)).fetchone()
        return None if row is None else str(row[0])

    def node(self, level: int, index: int) -> bytes | None:
        """One stored complete-subtree hash, or None."""
        row = self._q("SELECT hash FROM merkle_nodes WHERE level = ? AND idx = ?", (level, index)).fetchone()
        return None if row is None else bytes(row[0])

    def nodes(self, keys: Iterable[tuple[int, int]]) -> dict[tuple[int, int], bytes]:
        """The stored hashes of the given (level, idx) nodes that exist."""
        d = self.store.dialect
        rows = self._q(
            f"WITH k(level, idx) AS ({d.pairs('int', 'bigint')}) "
            "SELECT n.level, n.idx, n.hash FROM k "
            "JOIN merkle_nodes AS n ON n.level = k.level AND n.idx = k.idx",
            d.bind_pairs(list(keys)),
        )
        return {(r[0], r[1]): bytes(r[2]) for r in rows}

    @contextmanager
    def filling(self) -> Iterator[None]:
        """One transaction storing nodes, fillers (not appends) taking turns."""
        with self.store.transaction(self.fill_begin):
            yield

    def store_nodes(self, rows: Sequence[tuple[int, int, bytes]], leaves: int, chain_hash: str) -> None:
        """Insert new nodes and move the fill marker (inside `filling`)."""
        self.store.query_many(
            self.store.connection(), "INSERT INTO merkle_nodes (level, idx, hash) VALUES (?, ?, ?)", rows
        )
        self._q(
            "INSERT INTO merkle_fill (id, leaves, chain_hash) VALUES (1, ?, ?) "
            "ON CONFLICT (id) DO UPDATE SET leaves = excluded.leaves, chain_hash = excluded.chain_hash",
            (leaves, chain_hash),
        )

    # -- verify ----------------------------------------------------------------------

    @contextmanager
    def consistent_read(self) -> Iterator[None]:
        """A read that sees one state throughout (verify's walk): the walk, the index and the nodes."""
        if self.store.in_transaction(self.store.connection()):
            yield
            return
        with self.store.reading():
            yield

    def verified_point(self) -> VerifiedPoint | None:
        """(seq, hash, peaks, verified_at) of the last full verify, if remembered."""
        row = self._q("SELECT seq, hash, peaks, verified_at FROM verified_point WHERE id = 1").fetchone()
        if row is None:
            return None
        return VerifiedPoint(row[0], row[1], decode_peaks(row[2]), row[3])

    def save_verified_point(self, seq: int, hash_: str, peaks: Sequence[bytes], at_us: int) -> None:
        """Remember that seq 1..seq were verified at `at_us` (best effort: a read-only ledger is skipped)."""
        with contextlib.suppress(*self.readonly_errors):
            self._q(
                "INSERT INTO verified_point (id, seq, hash, peaks, verified_at) VALUES (1, ?, ?, ?, ?) "
                "ON CONFLICT (id) DO UPDATE SET seq = excluded.seq, hash = excluded.hash, "
                "peaks = excluded.peaks, verified_at = excluded.verified_at",
                (seq, hash_, encode_peaks(peaks), format_recorded(at_us)),
            )

    def recorded_us_at(self, seq: int) -> int:
        """recorded_us of the event at seq (-1 if absent)."""
        row = self._q("SELECT recorded_us FROM events WHERE seq = ?", (seq,)).fetchone()
        return -1 if row is None else int(row[0])

    def stream_version_at(self, stream: str, seq: int) -> int:
        """The stream's version as of seq (0 if it had no event yet)."""
        row = self._q(
            "SELECT max(stream_version) FROM events WHERE stream = ? AND seq <= ?", (stream, seq)
        ).fetchone()
        return int(row[0] or 0)

    def screen_events(self, after: int = 0) -> Iterator[tuple[Any, ...]]:
        """(seq, type, stream, observed_us, recorded_us, data) of the events the screen's rows come
        from, after `after`, in seq order, a part at a time."""
        while True:
            rows = self._q(
                "SELECT seq, type, stream, observed_us, recorded_us, data FROM events WHERE seq > ? AND "
                f"type IN {_SCREEN_TYPES} ORDER BY seq LIMIT 5000",
                (after,),
            ).fetchall()
            if not rows:
                return
            yield from rows
            after = rows[-1][0]

    def screen_rows(self, after: int = 0) -> Iterator[tuple[Any, ...]]:
        """The screen's stored rows of events after `after`: ("ref", *RefRow) and ("notice", *NoticeRow),
        by seq, a range of seqs at a time."""
        last = self._q("SELECT coalesce(max(seq), 0) FROM events").fetchone()[0]
        for low in range(after, last, _SCREEN_RANGE):
            where = "WHERE seq > ? AND seq <= ? ORDER BY seq"
            span = (low, low + _SCREEN_RANGE)
            refs = self._q(f"SELECT 'ref', {screen.REF_COLUMNS} FROM screen_refs {where}", span).fetchall()
            notices = self._q(f"SELECT 'notice', {screen.NOTICE_COLUMNS} FROM screen_notices {where}", span)
            yield from heapq.merge(map(tuple, refs), map(tuple, notices.fetchall()), key=lambda r: r[2])
        # rows past the last event (none belong there) are named by the caller as rows of no event
        yield from map(
            tuple,
            self._q(
                f"SELECT 'ref', {screen.REF_COLUMNS} FROM screen_refs WHERE seq > ?", (max(last, after),)
            ),
        )
        yield from map(
            tuple,
            self._q(
                f"SELECT 'notice', {screen.NOTICE_COLUMNS} FROM screen_notices WHERE seq > ?",
                (max(last, after),),
            ),
        )

    def check_works_after(self, seq: int, upto: int | None = None) -> Iterator[tuple[Any, ...]]:
        """check_works rows (at either level) of events after seq (up to `upto`) in (seq, work_id)
        order, read lazily (a page at a time where the dialect says)."""
        return heapq.merge(
            *(self._by_seq(level_table("check_works", lv), CHECK_WORKS_COLUMNS, seq, upto) for lv in LEVELS)
        )

    def index_after(self, seq: int, upto: int | None = None) -> Iterator[tuple[Any, ...]]:
        """Every derived row of the events after seq (up to `upto`) in seq order, read lazily:
        (seq, "check", work_id, source, observed_us, recorded_us, notices) for check_works and
        (seq, "key", key) for event_keys at either level."""
        checks = ((r[0], "check", *r[1:]) for r in self.check_works_after(seq, upto))
        keys = (
            (r[0], "key", r[1])
            for r in heapq.merge(
                *(self._by_seq(level_table("event_keys", lv), "seq, key", seq, upto) for lv in LEVELS)
            )
        )
        return heapq.merge(checks, keys)

    def index_rows(self, after: int = 0) -> Iterator[tuple[Any, ...]]:
        """Every derived row at every level (or those of the events after seq `after`), in the order
        each level keeps them (no sort): ("key", key, seq) and ("check", work_id, source, observed_us,
        seq, recorded_us, notices)."""
        if after:
            # by seq, where the big levels have an index: a range costs its rows, not the level's
            for lv in LEVELS:
                keys = self._by_seq(level_table("event_keys", lv), "seq, key", after, None)
                yield from (("key", k, s) for s, k in keys)
            yield from (("check", *r[1:4], r[0], *r[4:]) for r in self.check_works_after(after))
            return
        for lv in LEVELS:
            table = level_table("event_keys", lv)
            rows = self._ordered(f"SELECT key, seq FROM {table} WHERE 1 = 1", ["key", "seq"], ())
            yield from (("key", *r) for r in rows)
        columns = "work_id, source, observed_us, seq, recorded_us, notices"
        for lv in LEVELS:
            rows = self._ordered(
                f"SELECT {columns} FROM {level_table('check_works', lv)} WHERE 1 = 1",
                columns.split(", ")[:4],
                (),
            )
            yield from (("check", *r) for r in rows)

    def repeated_event_id(self, event_ids: Sequence[str] | None = None) -> tuple[str, list[int]] | None:
        """An event id (of all, or of these) stored under more than one seq, with its seqs (the ledger
        holds none)."""
        d = self.store.dialect
        if event_ids is not None:
            if not event_ids:
                return None
            probes = _each_level("event_keys", "key", d.any_of("key"))
            repeated = d.repeated_key("event_keys_all")
            part = self.list_part or len(event_ids)
            for i in range(0, len(event_ids), part):
                keys = d.bind_list([EVENT + e for e in event_ids[i : i + part]])
                if repeated is not None:
                    row = self._q(repeated, (keys,)).fetchone()
                else:
                    row = self._q(
                        f"SELECT key FROM ({probes}) AS k GROUP BY key HAVING count(*) > 1 LIMIT 1",
                        (keys,) * len(LEVELS),
                    ).fetchone()
                if row is not None:
                    return self._seqs_of(row[0])
            return None
        # each level in key order (no sort); a smaller level's keys probed in the levels above it
        ids = f"key >= '{EVENT}' AND key < '{EVENT[0]};'"
        row = self._q(
            f"SELECT key FROM event_keys WHERE {ids} GROUP BY key HAVING count(*) > 1 "
            f"UNION ALL SELECT key FROM event_keys_middle WHERE {ids} GROUP BY key HAVING count(*) > 1 "
            f"UNION ALL SELECT m.key FROM event_keys_middle AS m WHERE {ids} "
            "AND EXISTS (SELECT 1 FROM event_keys AS b WHERE b.key = m.key) "
            f"UNION ALL SELECT r.key FROM event_keys_recent AS r WHERE {ids} "
            "AND EXISTS (SELECT 1 FROM event_keys_all AS b WHERE b.key = r.key AND b.seq <> r.seq) LIMIT 1"
        ).fetchone()
        return None if row is None else self._seqs_of(row[0])

    def _seqs_of(self, key: str) -> tuple[str, list[int]]:
        seqs = self._q("SELECT seq FROM event_keys_all WHERE key = ? ORDER BY seq", (key,))
        return key.removeprefix(EVENT), [r[0] for r in seqs]

    def _by_seq(self, table: str, columns: str, seq: int, upto: int | None) -> Iterator[tuple[Any, ...]]:
        """The rows of `table` (whose `columns` start with seq and a second key) after seq, up to
        `upto`, in that order."""
        end = sys.maxsize if upto is None else upto
        return self._ordered(
            f"SELECT {columns} FROM {table} WHERE seq > ? AND seq <= ?", columns.split(", ")[:2], (seq, end)
        )

    def _ordered(self, sql: str, order: Sequence[str], params: Sequence[Any]) -> Iterator[tuple[Any, ...]]:
        """The rows of `sql` (a SELECT ... WHERE whose first columns are `order`, a unique key) in that
        order, read lazily: one statement, or one page per statement where the dialect says."""
        by = ", ".join(order)
        page = self.store.dialect.page
        if page is None:
            return iter(self._q(f"{sql} ORDER BY {by}", params))
        return self._pages(sql, by, len(order), params, page)

    def _pages(
        self, sql: str, by: str, width: int, params: Sequence[Any], page: int
    ) -> Iterator[tuple[Any, ...]]:
        rows = self._q(f"{sql} ORDER BY {by} LIMIT ?", (*params, page)).fetchall()
        after = f" AND ({by}) > ({', '.join('?' * width)}) ORDER BY {by} LIMIT ?"
        while rows:
            yield from rows
            rows = self._q(sql + after, (*params, *rows[-1][:width], page)).fetchall()

    # -- inbound spans ---------------------------------------------------------------

    def observation_steps(self, oids: Sequence[str] | None = None) -> Iterator[tuple[str, list[Step]]]:
        """Every observation's citations and resolutions as Steps (or only these observations'), by
        observation id, read lazily."""
        d = self.store.dialect
        if oids is not None:
            rows = self._q(
                _steps_sql(d, d.keyed("event_keys_all")),
                (d.bind_list([OBSERVATION + o for o in oids]),),
            )
            steps = sorted(map(step_row, rows), key=lambda s: (s.observation_id, s.seq))
            yield from ((o, list(g)) for o, g in itertools.groupby(steps, key=lambda s: s.observation_id))
            return
        if d.page is None:
            # one statement read lazily: the database sorts the citations and resolutions by observation
            # (a scan of the events in their order, where the keys' levels cost a random read each)
            sorted_steps = self._q(
                f"SELECT {step_columns(d)} FROM events "
                f"WHERE type IN ('{CITATION}', '{spans.RESOLUTION}') ORDER BY 1, seq"
            )
            by_oid = itertools.groupby(map(step_row, sorted_steps), key=lambda s: s.observation_id)
            yield from ((oid, list(mine)) for oid, mine in by_oid)
            return
        levels = [
            self._ordered(
                f"SELECT k.key, k.seq, {step_columns(d, 'e.')} FROM {level_table('event_keys', lv)} AS k "
                f"JOIN events AS e ON e.seq = k.seq WHERE k.key >= '{OBSERVATION}' AND k.key < '{_AFTER_O}'",
                ["k.key", "k.seq"],
                (),
            )
            for lv in LEVELS
        ]
        for key, group in itertools.groupby(heapq.merge(*levels), key=lambda r: r[0]):
            yield key.removeprefix(OBSERVATION), [step_row(r[2:]) for r in group]

    def span_rows(self, oids: Sequence[str] | None = None, *, ordered: bool = True) -> Iterator[Row]:
        """Every stored inbound span (or only these observations'), read lazily: by (observation_id,
        t_from, k_from), or in the key's order (`ordered=False`, paged by the key where the dialect pages)."""
        d = self.store.dialect
        where, params = ("1 = 1", ()) if oids is None else (d.any_of("observation_id"), (d.bind_list(oids),))
        if not ordered:  # in the key's order: no sort, and pages by the key where the dialect pages
            key = ["cited", "citing", "reference_index", "observation_id", "t_from", "k_from"]
            rest = ", ".join(c for c in SPAN_COLUMNS.split(", ") if c not in key)
            by_key = self._ordered(
                f"SELECT {', '.join(key)}, {rest} FROM inbound_spans WHERE {where}", key, params
            )
            return (Row(r[0], r[1], r[2], r[3], r[4], r[6], r[7], r[8], r[5], r[9]) for r in by_key)
        rows = self._ordered(
            f"SELECT observation_id, t_from, k_from, {SPAN_COLUMNS} FROM inbound_spans WHERE {where}",
            ["observation_id", "t_from", "k_from"],
            params,
        )
        return (Row(*r[3:]) for r in rows)

    def _fill(self, conn: Any, rows: list[Row]) -> None:
        if rows:
            self.store.query_many(conn, INSERT_SPANS, rows)
            self.store.query_many(conn, COUNT_BUCKETS, bucket_deltas(rows, []))

    def count_rows(
        self, cited: Sequence[str] | None = None
    ) -> tuple[Iterator[tuple[Any, ...]], Iterator[tuple[Any, ...]]]:
        """(stored inbound_counts rows, the same counted by the database from the spans known now), of
        every paper or of these cited ones, each as (cited, bucket, starts, ends) by (cited, bucket),
        zeros left out, read lazily."""
        d = self.store.dialect
        where, params = ("", ()) if cited is None else (f" AND {d.any_of('cited')}", (d.bind_list(cited),))
        stored = self._q(
            f"SELECT cited, bucket, starts, ends FROM inbound_counts WHERE (starts <> 0 OR ends <> 0){where} "
            "ORDER BY cited, bucket",
            params,
        )
        counted = self._q(
            "SELECT cited, bucket, sum(s), sum(e) FROM ("
            + _starts_ends("cited, ", where, f" AND t_to < {OPEN}{where}")
            + ") AS c GROUP BY cited, bucket HAVING sum(s) <> 0 OR sum(e) <> 0 ORDER BY cited, bucket",
            params * 2,
        )
        # int(): PostgreSQL sums bigints as numeric
        return iter(stored), ((c, int(b), int(n), int(e)) for c, b, n, e in counted)

    def projection_position(self, name: str) -> int:
        """The last seq whose events the projection `name` holds (ledger/storage/projector.py)."""
        row = self._q("SELECT seq FROM projections WHERE name = ?", (name,)).fetchone()
        return 0 if row is None else int(row[0])

    def fill_spans(self) -> bool:
        """Fill inbound_spans from the events if a migration left it to the store (False: nothing to
        do); one write transaction, holding the append lock."""
        if self._q("SELECT name FROM derived_pending WHERE name = 'inbound_spans'").fetchone() is None:
            return False
        with self.store.transaction(self.store.write_begin()) as conn:
            if self._q("SELECT name FROM derived_pending WHERE name = 'inbound_spans'").fetchone() is None:
                return False  # another process filled it meanwhile
            self._q("DELETE FROM inbound_spans")
            self._q("DELETE FROM inbound_counts")
            # every event's spans: the projection's position is the head
            self._q(
                "INSERT INTO projections (name, seq) SELECT ?, coalesce(max(seq), 0) FROM events WHERE 1 = 1 "
                "ON CONFLICT (name) DO UPDATE SET seq = excluded.seq",
                (spans.NAME,),
            )
            batch: list[Row] = []
            for _, steps in self.observation_steps():
                batch += history(steps)
                if len(batch) >= 5000:
                    self._fill(conn, batch)
                    batch = []
            self._fill(conn, batch)
            self._q("DELETE FROM derived_pending WHERE name = 'inbound_spans'")
        return True

    # -- imports (service/intake) -----------------------------------------------------

    def import_progress(self, file_key: str) -> ImportProgress | None:
        """How far the import of the file `file_key` names has committed, if it has begun."""
        row = self._q(LOAD_PROGRESS, (file_key,)).fetchone()
        return None if row is None else ImportProgress(*row)

    def stored_events(self, event_ids: Sequence[str]) -> dict[str, StoredEvent]:
        """The events stored under any of these ids (what an append would find)."""
        return _existing(self.store, self.store.connection(), event_ids)

    def citing_papers(self, observation_ids: Sequence[str]) -> dict[str, str]:
        """observation_id -> its citing paper, for those with a stored citation.observed (what an append
        would find)."""
        return citing_of(steps_of(self.store, self.store.connection(), observation_ids))

    # -- scrub passes ----------------------------------------------------------------

    def save_pass(self, p: ScrubPass) -> bool:
        """Record one full walk; False when the ledger cannot be written (a read-only file or role)."""
        try:
            self._q(
                f"INSERT INTO scrub_passes ({PASS_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)", tuple(p)
            )
        except self.readonly_errors:
            return False
        return True

    def last_pass(self) -> ScrubPass | None:
        """The full walk that finished last, if any was recorded."""
        row = self._q(
            f"SELECT {PASS_COLUMNS} FROM scrub_passes ORDER BY finished_us DESC, id DESC LIMIT 1"
        ).fetchone()
        if row is None:
            return None
        kind, started_at, started_us, finished_at, finished_us, events, head_seq, ok, bad, reason = row
        return ScrubPass(
            kind, started_at, started_us, finished_at, finished_us, events, head_seq, bool(ok), bad, reason
        )

    # -- title search (ledger/storage/derived/search.py) ----------------------------------------------

    def titles_indexed(self) -> int:
        """The last seq whose titles the search index holds."""
        return int(self._q("SELECT seq FROM search_cursor WHERE id = 1").fetchone()[0])

    def index_titles(self, upto: int) -> int:
        """Index the titles of the events after the cursor up to seq `upto` (a committed head), a chunk
        per transaction; returns the seq indexed through (where it stopped on a ledger that cannot be
        written: a read-only file or role). Appends are not held up on PostgreSQL; on SQLite each chunk
        holds the file's write lock for the one statement that fills it."""
        done = self.titles_indexed()
        while done < upto:
            try:
                with self.store.transaction(self.search_begin):
                    start = self.titles_indexed()  # another process may have gone further meanwhile
                    end = min(upto, start + INDEX_CHUNK)
                    if start < end:
                        self._q(_index_sql(self.store.dialect), (start, end))
                        self._q("UPDATE search_cursor SET seq = ? WHERE id = 1", (end,))
            except self.readonly_errors:
                return done
            done = max(start, end)
        return done

    def search_titles(self, words: Sequence[str], limit: int, offset: int) -> Found:
        """The titles holding every word (each as a prefix): papers first, then references by citing
        paper and reference index; the page `offset`..`offset+limit` of them, and how many in all."""
        d = self.store.dialect
        query = d.title_query(words)
        # one read, so the count and the page see the same index
        with self.store.reading() as conn:
            total = self.store.query(
                conn, f"SELECT count(*) FROM search_titles WHERE {d.title_match()}", (query,)
            ).fetchone()[0]
            rows = self.store.query(
                conn,
                "SELECT arxiv_id, observation_id, reference_index, title, seq FROM search_titles "
                f"WHERE {d.title_match()} ORDER BY observation_id <> '', arxiv_id, reference_index, "
                "observation_id, title LIMIT ? OFFSET ?",
                (query, limit, offset),
            ).fetchall()
            through = int(self.store.query(conn, "SELECT seq FROM search_cursor WHERE id = 1").fetchone()[0])
        return Found(int(total), [Hit(*r) for r in rows], through)

    # -- ledger-wide lookups (source adapters, diff, alerts) ---------------------------

    def current_checks(self, work_ids: Sequence[str]) -> list[CheckRow]:
        """Per work and source, the latest standing check covering it, known now (as a record shows),
        read in whatever transaction this thread is in."""
        reader = SqlReader(self.store, self.store.connection(), FAR_FUTURE, FAR_FUTURE)
        return reader.work_checks([(w, -FAR_FUTURE) for w in work_ids])

    def latest_cited_works(self, as_of_us: int) -> list[tuple[str, str, str | None]]:
        """(observation_id, type, cited_work JSON) of each observation's latest citation and resolution."""
        # greatest observed_us, ties to the later seq, with only cited_work extracted
        d = self.store.dialect
        oid = d.json_text("observation_id")
        rows = self._q(
            "SELECT observation_id, type, cited_work FROM ("
            f"  SELECT {oid} AS observation_id, type, {d.json_value('cited_work')} AS cited_work,"
            f"   row_number() OVER (PARTITION BY {oid}, type ORDER BY observed_us DESC, seq DESC) AS rn"
            "  FROM events WHERE type IN ('citation.observed', 'resolution.observed') AND observed_us <= ?"
            ") AS latest WHERE rn = 1",
            (as_of_us,),
        )
        return [(r[0], r[1], r[2]) for r in rows]

    def paper_ids(self, as_of_us: int) -> list[str]:
        """arXiv ids of the papers with a paper.observed snapshot as of T, sorted."""
        rows = self._q(
            "SELECT DISTINCT substr(stream, 7) AS id FROM events "
            "WHERE type = 'paper.observed' AND observed_us <= ? ORDER BY 1",
            (as_of_us,),
        )
        return [r[0] for r in rows]

    def work_facts(self, index_keys: Sequence[str], as_of_us: int) -> list[Fact]:
        """Citations and resolutions observed as of T of the observations with an event observed as
        of T under one of these works-index keys (derived/keys.py), in seq order. The keys are a
        projection: the observations of the events past its position that cite a work with a work_id
        are read too (flagged), and kept here if one of those events has one of these keys."""
        d = self.store.dialect
        oid = d.json_text("observation_id")
        # the observations found once (inlined, they were found again for each level of their keys)
        rows = self._q(
            "WITH found(key) AS MATERIALIZED ("
            f"  SELECT '{OBSERVATION}' || {oid} FROM event_keys_all AS w"
            "   JOIN events ON events.seq = w.seq"
            f"   WHERE {d.any_of('w.key')} AND events.observed_us <= ?), "
            f" tail(key) AS MATERIALIZED ("
            f"  SELECT '{OBSERVATION}' || {oid} FROM events WHERE {_works_tail(d)}) "
            f"SELECT {FACT_COLUMNS}, '{OBSERVATION}' || {oid} IN (SELECT key FROM found) "
            "FROM events WHERE seq IN (SELECT o.seq FROM event_keys_all AS o "
            "  WHERE o.key IN (SELECT key FROM found UNION SELECT key FROM tail)) "
            "AND observed_us <= ? ORDER BY seq",
            (d.bind_list(index_keys), as_of_us, as_of_us, as_of_us),
        ).fetchall()
        facts = [(fact_row(r[:5]), bool(r[5])) for r in rows]
        if all(found for _, found in facts):
            return [f for f, _ in facts]
        wanted = set(index_keys)
        # an observation read only for its events past the position: kept if one of them has a key
        kept = {f.data.observation_id for f, found in facts if found or wanted.intersection(_fact_keys(f))}
        return [f for f, _ in facts if f.data.observation_id in kept]

    def work_observations(self, as_of_us: int) -> list[str]:
        """Ids of the observations with an event observed as of T under any works-index key, sorted."""
        # a range of the keys' order on each level: only events whose cited work has a key are read;
        # the events past the keys' position that cite a work with a work_id come with their work
        d = self.store.dialect
        oid = d.json_text("observation_id")
        rows = self._q(
            f"SELECT DISTINCT {oid}, NULL FROM events WHERE seq IN ("
            f"  SELECT seq FROM event_keys_all WHERE key >= '{WORK}' AND key < '{WORK[0]};') "
            f"AND observed_us <= ? UNION ALL SELECT {oid}, {d.json_value('cited_work')} FROM events "
            f"WHERE {_works_tail(d)} ORDER BY 1",
            (as_of_us, as_of_us),
        )
        out: list[str] = []
        for o, work in rows:
            if (work is None or _work_keys_of(work)) and (not out or out[-1] != o):
                out.append(o)
        return out

    def papers_among(self, arxiv_ids: Sequence[str], as_of_us: int) -> list[str]:
        """Those of the given arXiv ids with a paper.observed snapshot as of T, sorted."""
        d = self.store.dialect
        rows = self._q(
            "SELECT DISTINCT substr(stream, 7) FROM events "
            f"WHERE {d.any_of('stream')} AND type = 'paper.observed' AND observed_us <= ? ORDER BY 1",
            (d.bind_list([f"paper:{a}" for a in arxiv_ids]), as_of_us),
        )
        return [r[0] for r in rows]

    def observation_facts(self, observation_ids: Sequence[str], after_us: int, until_us: int) -> list[Fact]:
        """Citations and resolutions of the given observations observed in (after, until], in seq order."""
        d = self.store.dialect
        rows = self._q(
            f"SELECT {FACT_COLUMNS} FROM events WHERE {d.keyed('event_keys_all')} "
            "AND observed_us > ? AND observed_us <= ? ORDER BY seq",
            (d.bind_list([OBSERVATION + o for o in observation_ids]), after_us, until_us),
        )
        return [fact_row(r) for r in rows]
