"""The event store written once over a Dialect: its connections' statements, the log's reads and the
append's write transaction, and the small objects it offers per capability (ledger/storage/tables/).

A backend subclasses SqlStore with its connections, its transaction statements, the errors it
tolerates, and its side of the tree and scrub tables (see sqlite/store.py and postgresql/store.py).
"""

from __future__ import annotations

import contextlib
import functools
import itertools
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import ClassVar, cast

from ledger.model.events import ChainLink, StoredEvent
from ledger.model.facts import (
    Fact,
    Head,
    ImportProgress,
    IngestReceipt,
)
from ledger.storage.append import Rows
from ledger.storage.catalogue_store import SqlCatalogue
from ledger.storage.derived.keys import (
    LEVELS,
    MOVES,
    level_table,
)
from ledger.storage.derived.past import PastIndex
from ledger.storage.sql import (
    CHECK_WORKS_COLUMNS,
    ENVELOPE_COLUMNS,
    FACT_COLUMNS,
    FAR_FUTURE,
    HEAD_SQL,
    INSERT_RECEIPT,
    LAST_RECEIPT,
    SAVE_PROGRESS,
    ChainRow,
    Connection,
    Cursor,
    Dialect,
    SqlParam,
    SqlParams,
    envelope_row,
    fact_row,
    link_row,
)
from ledger.storage.state.alerts import AlertTables
from ledger.storage.state.jobs import JobTables
from ledger.storage.tables.imports import SqlImports
from ledger.storage.tables.keys import SeqCheck, SqlKeys
from ledger.storage.tables.reader import SqlReader
from ledger.storage.tables.screen import SqlScreenIndex
from ledger.storage.tables.scrub import SqlScrub
from ledger.storage.tables.search import SqlSearch
from ledger.storage.tables.shared import (
    citing_of,
    existing_events,
    head_of,
    steps_of,
)
from ledger.storage.tables.spans import SqlSpans
from ledger.storage.tables.tree import SqlTree
from ledger.storage.tables.verifying import SqlVerifying
from ledger.storage.tables.works import SqlWorks
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


# each derived table: its columns and its key (ledger/storage/derived/keys.py)
_DERIVED = {
    "event_keys": ("key, seq", "key, seq"),
    "check_works": (
        "work_id, source, observed_us, seq, recorded_us, notices",
        "work_id, source, observed_us, seq",
    ),
}


# The sample a move's ANALYZE of a key level reads (300 rows a unit of the target; PostgreSQL's default
# is 100): the levels are looked up by equality on a unique key and read by ranges of seq, which need
# the rows' count and a coarse histogram, not 30,000 sampled rows sorted after every append
ANALYZE_SAMPLE = "SET LOCAL default_statistics_target = 10"


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
            out += [ANALYZE_SAMPLE, f"ANALYZE {src}", f"ANALYZE {dst}"]
    return out


# (a level, the level its rows move to), smallest first
_MERGES = tuple(zip(LEVELS, LEVELS[1:], strict=False))


class SqlStore:
    """An event store over one connection per thread; subclasses say how to connect and transact."""

    kind: str
    local: bool
    dialect: ClassVar[Dialect]
    read_begin: ClassVar[str]  # opens a read that sees one state throughout
    rollback_errors: ClassVar[tuple[type[BaseException], ...]] = ()  # ignored when ending a failed tx
    fill_begin: ClassVar[tuple[str, ...]]  # opens a transaction in which one filler at a time stores nodes
    search_begin: ClassVar[tuple[str, ...]]  # opens a transaction in which one indexer at a time runs
    readonly_errors: ClassVar[tuple[type[BaseException], ...]]  # a best-effort write gives up on these
    # when a list, every statement this store runs is appended to it (the statement-budget test)
    trace: list[str] | None = None
    db: str  # the path or URL it was opened with

    @functools.cached_property
    def tree(self) -> SqlTree:
        """The Merkle nodes, the signed checkpoint, and the files beside the ledger."""
        return self._new_tree()

    @functools.cached_property
    def verifying(self) -> SqlVerifying:
        """Where verify's walk may resume, and what it rechecks of each event."""
        return SqlVerifying(self)

    @functools.cached_property
    def keys(self) -> SqlKeys:
        """The lookup keys and standing checks' per-work rows at every level, read back."""
        return SqlKeys(self)

    @functools.cached_property
    def screen(self) -> SqlScreenIndex:
        """The screen's index, read back with its events."""
        return SqlScreenIndex(self)

    @functools.cached_property
    def spans(self) -> SqlSpans:
        """The inbound spans and their per-day counts."""
        return SqlSpans(self)

    @functools.cached_property
    def search(self) -> SqlSearch:
        """The title index."""
        return SqlSearch(self)

    @functools.cached_property
    def scrub(self) -> SqlScrub:
        """The record of each full walk, and the one-walker lock."""
        return self._new_scrub()

    @functools.cached_property
    def works(self) -> SqlWorks:
        """The works known as of T and the facts about them."""
        return SqlWorks(self)

    @functools.cached_property
    def imports(self) -> SqlImports:
        """How far each file's import has committed, and the lookups that check a file."""
        return SqlImports(self)

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
        return SqlCatalogue(self, self.readonly_errors)

    def _new_tree(self) -> SqlTree:
        raise NotImplementedError

    def _new_scrub(self) -> SqlScrub:
        raise NotImplementedError

    def close(self) -> None:
        """Close this thread's connection."""
        raise NotImplementedError

    def _conn(self) -> Connection:
        raise NotImplementedError

    def write_begin(self) -> tuple[str, ...]:
        """The statements that open a write transaction holding the append lock."""
        raise NotImplementedError

    def _execute(self, conn: Connection, sql: str, params: SqlParams) -> Cursor:
        raise NotImplementedError

    def _execute_many(self, conn: Connection, sql: str, rows: Sequence[SqlParams]) -> None:
        raise NotImplementedError

    def in_transaction(self, conn: Connection) -> bool:
        """Whether `conn` is inside a transaction already."""
        raise NotImplementedError

    def connection(self) -> Connection:
        """This thread's connection (opened on first use)."""
        return self._conn()

    def query(self, conn: Connection, sql: str, params: SqlParams = ()) -> Cursor:
        """One statement (written with `?` placeholders) on `conn`; traced when tracing."""
        sql = self.dialect.sql(sql)
        if self.trace is not None:
            self.trace.append(sql)
        return self._execute(conn, sql, params)

    def query_many(self, conn: Connection, sql: str, rows: Sequence[SqlParams]) -> None:
        """One statement run for many rows; traced once per row, as sent."""
        sql = self.dialect.sql(sql)
        if self.trace is not None:
            self.trace.extend([sql] * len(rows))
        self._execute_many(conn, sql, rows)

    @contextmanager
    def transaction(self, begin: Sequence[str]) -> Iterator[Connection]:
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
    def reading(self) -> Iterator[Connection]:
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
        return head_of(self.query(self._conn(), HEAD_SQL).fetchone())

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
        params: list[SqlParam] = [after]
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
        params: list[SqlParam] = [prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1)]
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

    def iter_rows(self, after: int = 0, batch: int = 5000) -> Iterator[ChainRow]:
        """iter_chain's rows as read: ENVELOPE_COLUMNS, observed_us, recorded_us (data as text)."""
        for rows in self.iter_pages(after, batch):
            yield from rows

    def iter_pages(self, after: int = 0, batch: int = 5000) -> Iterator[list[ChainRow]]:
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
            # both drivers give a row as a tuple of its columns' values, and the events' are NOT NULL
            yield cast(list[ChainRow], rows)
            del rows  # not held while the next part is read

    def iter_check_works(self) -> Iterator[SeqCheck]:
        """Every check_works row at either level, ordered by seq (verify compares them with the data)."""
        rows = self.query(
            self._conn(),
            f"SELECT {CHECK_WORKS_COLUMNS} FROM check_works_all ORDER BY seq, work_id, source, observed_us",
        )
        # both drivers give a row as a tuple of its columns' values, and these columns are NOT NULL
        return cast(Iterator[SeqCheck], iter(rows))

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


class SqlWriteTx:
    """The reads and writes an append needs, inside one write transaction."""

    def __init__(self, store: SqlStore, conn: Connection) -> None:
        self.store = store
        self.conn = conn

    def _q(self, sql: str, params: SqlParams = ()) -> Cursor:
        return self.store.query(self.conn, sql, params)

    def head(self) -> tuple[Head, int]:
        """The head and its recorded_us (0 when empty)."""
        row = self._q("SELECT seq, hash, recorded_us FROM events ORDER BY seq DESC LIMIT 1").fetchone()
        return (Head(0, GENESIS), 0) if row is None else (Head(row[0], row[1]), row[2])

    def existing(self, event_ids: Sequence[str]) -> dict[str, StoredEvent]:
        """Events already stored under any of these ids."""
        return existing_events(self.store, self.conn, event_ids)

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
            self._q(ANALYZE_SAMPLE)
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
