"""The SQL both backends run, written once, and the small dialect that spells it for each; and the
DB-API connection and cursor the storage code receives: what sqlite3's and psycopg's both offer.

Statements are written with `?` placeholders; the PostgreSQL dialect turns them into `%s`. Their
parameters and rows' values are the column types the layout uses (schema.py): integers, text, bytes,
booleans and NULL; floats and (PostgreSQL's sums) decimals for computed values.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Protocol, TypeAlias

from ledger.model.codec import decode_data
from ledger.model.events import ChainLink, StoredEvent
from ledger.model.facts import Fact

FAR_FUTURE = 2**62

FACT_COLUMNS = "seq, type, observed_at, observed_us, data"
ENVELOPE_COLUMNS = (
    "seq, event_id, stream, stream_version, type, observed_at, recorded_at, data, prev_hash, hash"
)
CHECK_WORKS_COLUMNS = "seq, work_id, source, observed_us, recorded_us, notices"
PASS_COLUMNS = (
    "kind, started_at, started_us, finished_at, finished_us, events, head_seq, ok, first_bad_seq, reason"
)
RECEIPT_COLUMNS = (
    "source, observed_at, observed_us, accepted_at, accepted_us, sha256, bytes, rows_read, rows_matched, "
    "appended, seq"
)
INSERT_RECEIPT = f"INSERT INTO ingest_receipts ({RECEIPT_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
LAST_RECEIPT = f"SELECT {RECEIPT_COLUMNS} FROM ingest_receipts WHERE source = ? ORDER BY id DESC LIMIT 1"
# how far `ledger import` has committed each file (service/intake), upserted in each batch's transaction
PROGRESS_COLUMNS = (
    "file_key, name, bytes_done, lines_done, prefix_sha256, appended, duplicates, head_seq, updated_at, "
    "updated_us"
)
SAVE_PROGRESS = (
    f"INSERT INTO import_progress ({PROGRESS_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) "
    "ON CONFLICT (file_key) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in PROGRESS_COLUMNS.split(", ")[1:])
)
LOAD_PROGRESS = f"SELECT {PROGRESS_COLUMNS} FROM import_progress WHERE file_key = ?"
HEAD_SQL = "SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1"
# Statement 4 (see SqlReader.source_heads).
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

SqlValue: TypeAlias = None | bool | int | float | Decimal | str | bytes
# a row as the drivers give it (sqlite3 and psycopg both: a tuple of the row's values), whose types
# the statement's columns decide: each reader narrows or names what it selects
SqlRow: TypeAlias = Sequence[Any]
# a value bound to a statement, or a list bound whole (`Dialect.bind_list`: an array on PostgreSQL)
SqlParam: TypeAlias = SqlValue | Sequence[SqlValue]
SqlParams: TypeAlias = Sequence[SqlParam]


class Cursor(Protocol):
    """The part of a DB-API cursor the storage code uses."""

    @property
    def rowcount(self) -> int: ...

    def __iter__(self) -> Iterator[SqlRow]: ...

    # a row or None, as the drivers' own stubs type it: callers check None where a row may be missing
    def fetchone(self) -> Any: ...

    def fetchall(self) -> Sequence[SqlRow]: ...

    # sqlite3 gives the cursor back, psycopg None
    def executemany(self, sql: str, rows: Sequence[SqlParams], /) -> Cursor | None: ...


class Connection(Protocol):
    """The part of a DB-API connection the storage code uses (sqlite3.Connection, psycopg.Connection)."""

    def execute(self, sql: str, params: SqlParams = ..., /) -> Cursor: ...

    def cursor(self) -> Cursor: ...


def first(cursor: Cursor) -> SqlRow:
    """The row of a query that always gives one (an aggregate, a setting)."""
    row = cursor.fetchone()
    if row is None:
        raise LookupError("the query gave no row")
    return row


def integer(value: SqlValue) -> int:
    """A value of an integer column, or an aggregate of one (PostgreSQL's sum is a numeric), as an int."""
    if value is None:
        raise TypeError("expected an integer from the database, found NULL")
    return int(value)


# One event as INSERT_EVENTS writes it (its parameters, in the events table's column order): seq,
# event_id, stream, stream_version, type, observed_at, observed_us, recorded_at, recorded_us, data,
# prev_hash, hash. A plain tuple: the append builds one per event on its hot path.
EventParams = tuple[int, str, str, int, str, str, int, str, int, str, str, str]


# An event as verify's and migrate's walks read it: ENVELOPE_COLUMNS, observed_us, recorded_us (seq,
# event_id, stream, stream_version, type, observed_at, recorded_at, data, prev_hash, hash,
# observed_us, recorded_us). A plain tuple as the driver gives it: a walk reads every event.
ChainRow = tuple[int, str, str, int, str, str, str, str, str, str, int, int]


# a text array bound as one parameter, which the planner sees as a value it does not know
_PG_LIST = "CAST((SELECT ?::text[]) AS text[])"


@dataclass(frozen=True)
class Dialect:
    """How one backend spells what the shared statements leave open."""

    name: str
    percent: bool  # placeholders are %s (psycopg), not ? (sqlite3)
    json_lists: bool  # lists are bound as one JSON text and unpacked by json_each (SQLite has no arrays)
    page: int | None  # check_works rows read per statement; None: one statement, read lazily
    # statistics renewed for a table whose rows a merge just moved (derived/keys.py); PostgreSQL plans
    # by them, and a level it last saw empty would be scanned whole for every key looked up
    analyze: bool = False
    # an append whose seqs pass a level's size writes its rows straight into the deepest level it moves,
    # after moving the levels above there: the same rows at the same levels as writing them to the
    # recent level and moving it down, without writing each row twice more (PostgreSQL pays the
    # server's CPU and WAL per row; SQLite the inserts and the move's copy, for a batch as large as an
    # import's, most of whose appends pass the recent level's size)
    direct_moves: bool = False
    # ids or observations a resumed walk looks up in one statement (None: all of them in one). SQLite
    # reads a part in proportion to it, and its grouping of a long list is held in memory whole (16 MB
    # at 26,000 ids); PostgreSQL's plan scans the small levels whole for a list of any length, so each
    # part would pay that scan again
    list_part: int | None = None

    def sql(self, text: str) -> str:
        """`text` with this backend's placeholders."""
        return _percent(text) if self.percent else text

    def any_of(self, column: str) -> str:
        """A condition: `column` is one of a list bound with `bind_list`."""
        if self.json_lists:
            return f"{column} IN (SELECT value FROM json_each(?))"
        return f"{column} = ANY(?)"

    def in_list(self, column: str) -> str:
        """`any_of` for a list of thousands: PostgreSQL semi-joins the list's rows, probing `column`'s
        index once a value, where `= ANY` of 6,400 observations among the 143,000 spans of a 1M-event
        ledger was planned as a hashed scan of them all (the same time on that ledger: 170-180 ms)."""
        if self.json_lists:
            return self.any_of(column)
        return f"{column} IN (SELECT unnest(?::text[]))"

    def keyed(self, view: str) -> str:
        """A condition: the row's seq is that of a key of `view` (key, seq) in a list bound with
        `bind_list`. SQLite reads the list once per level of the view and probes each level's tree
        (a condition on the view instead ran the list as a subquery in every level: 3 us a key, not
        0.8). PostgreSQL joins the list's rows to the view, which it runs as one probe of each level's
        key index a key: `= ANY` pushed into each level hashed the list and read the small levels whole
        (up to 90,000 keys, for every lookup), and an index scan by `= ANY` sorts the list again in
        each level."""
        if self.json_lists:
            return f"seq IN (SELECT k.seq FROM json_each(?) AS j JOIN {view} AS k ON k.key = j.value)"
        return f"seq IN (SELECT k.seq FROM unnest(?::text[]) AS u(key) JOIN {view} AS k ON k.key = u.key)"

    def repeated_key(self, view: str) -> str | None:
        """A SELECT of a key of a list bound with `bind_list` that `view` (key, seq) holds under more
        than one seq; None: the backend groups its own probes per level. PostgreSQL gets the list as
        one value it cannot look into, through a one-row subquery: given the list itself (13,000
        ids a walk) it estimated the ids one by one in each level, as long as the reading took, and
        sent the list to parallel workers; as one value each level's key index takes it whole. (A join
        of the list's rows to the view, as `keyed`, cost the walk 1.4 times the server's time.)"""
        if self.json_lists:
            return None
        return f"SELECT key FROM {view} WHERE key = ANY({_PG_LIST}) GROUP BY key HAVING count(*) > 1 LIMIT 1"

    def bind_list(self, values: Sequence[SqlValue]) -> SqlParam:
        """The parameter for `any_of`."""
        return json.dumps(list(values)) if self.json_lists else list(values)

    def pairs(self, first_type: str, second_type: str) -> str:
        """A SELECT of two columns from a list of pairs bound with `bind_pairs`."""
        if self.json_lists:
            return "SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?)"
        return f"SELECT * FROM unnest(?::{first_type}[], ?::{second_type}[])"

    def bind_pairs(self, pairs: Sequence[tuple[SqlValue, SqlValue]]) -> list[SqlParam]:
        """The parameters for `pairs`."""
        if self.json_lists:
            return [json.dumps([list(p) for p in pairs])]
        return [[p[0] for p in pairs], [p[1] for p in pairs]]

    def json_text(self, key: str) -> str:
        """The string at `key` of the event's data, as text (`a.b`: key b of the object at a)."""
        if self.json_lists:
            return f"json_extract(data, '$.{key}')"
        if "." in key:
            return f"(data::jsonb #>> '{{{key.replace('.', ',')}}}')"
        return f"(data::jsonb ->> '{key}')"

    def title_match(self) -> str:
        """A condition on search_titles: the title holds every word of a query bound with `title_query`
        (SQLite: its FTS5 index, in the shape sqlite-utils and Datasette recognise; PostgreSQL: the
        GIN-indexed tsvector of its words)."""
        if self.json_lists:
            return "rowid IN (SELECT rowid FROM search_titles_fts WHERE search_titles_fts MATCH ?)"
        return "words @@ to_tsquery('simple', ?)"

    def title_query(self, words: Sequence[str]) -> str:
        """The bound query of `title_match`: each word (letters and digits only) as a prefix."""
        if self.json_lists:
            return " ".join(f'"{w}"*' for w in words)
        return " & ".join(f"'{w}':*" for w in words)

    def latest_versions(self) -> str:
        """A SELECT of (stream, its greatest stream_version) of each stream of a list bound with
        `bind_list` that has an event. PostgreSQL reads each by one backward seek of the
        (stream, stream_version) index; grouped, it read every event of those streams (a much-cited
        paper's are thousands: 391,000 pages for 40 batches of a 400k-line import)."""
        if self.json_lists:
            where = self.any_of("stream")
            return f"SELECT stream, max(stream_version) FROM events WHERE {where} GROUP BY stream"
        return (
            "SELECT s, v FROM (SELECT s, (SELECT max(stream_version) FROM events WHERE stream = s) AS v"
            " FROM unnest(?::text[]) AS s) AS latest WHERE v IS NOT NULL"
        )

    def field(self, key: str) -> str:
        """`json_text` of a row that `parsed` selects from (its data parsed once, as `j`)."""
        return self.json_text(key) if self.json_lists else f"(j ->> '{key}')"

    def parsed(self, columns: str, where: str) -> str:
        """SELECT `columns` (reading the data by `field`) FROM events WHERE `where`. PostgreSQL parses
        `data::jsonb` once for each expression that casts it: here once a row, behind OFFSET 0, which
        keeps the planner from pulling the cast into each column (19,000 steps: 0.7 s -> 0.5 s)."""
        if self.json_lists:
            return f"SELECT {columns} FROM events WHERE {where}"
        return f"SELECT {columns} FROM (SELECT *, data::jsonb AS j FROM events WHERE {where} OFFSET 0) AS e"

    def json_value(self, key: str) -> str:
        """The JSON value at `key` of the event's data, as JSON text (NULL when absent or null)."""
        if self.json_lists:
            return f"json_extract(data, '$.{key}')"
        return f"NULLIF(data::jsonb -> '{key}', 'null'::jsonb)::text"


# SQLite cursors of one connection interleave, so verify reads check_works in one lazy statement
SQLITE = Dialect("sqlite", percent=False, json_lists=True, page=None, list_part=2000, direct_moves=True)
# psycopg's client-side cursor holds every row of a statement, and verify walks the chain on the same
# connection meanwhile: PostgreSQL reads check_works a page at a time
POSTGRESQL = Dialect("postgresql", percent=True, json_lists=False, page=5000, analyze=True, direct_moves=True)


@functools.lru_cache(maxsize=512)
def _percent(text: str) -> str:
    return text.replace("?", "%s")


def fact_row(row: SqlRow) -> Fact:
    """A Fact from a row of FACT_COLUMNS."""
    seq, type_, observed_at, observed_us, data = row
    return Fact(seq, type_, observed_at, observed_us, decode_data(type_, data.encode()))


def envelope_row(row: SqlRow) -> StoredEvent:
    """A StoredEvent from a row of ENVELOPE_COLUMNS."""
    seq, event_id, stream, version, type_, observed_at, recorded_at, data, prev, h = row
    return StoredEvent(
        seq, event_id, stream, version, type_, observed_at, recorded_at, data.encode(), prev, h
    )


def link_row(row: SqlRow) -> ChainLink:
    """A ChainLink from a row of ENVELOPE_COLUMNS, observed_us, recorded_us."""
    return ChainLink(envelope_row(row[:10]), row[10], row[11])


def link_params(link: ChainLink) -> EventParams:
    """The parameters of INSERT_EVENTS for one link."""
    e = link.event
    return (
        e.seq,
        e.event_id,
        e.stream,
        e.stream_version,
        e.type,
        e.observed_at,
        link.observed_us,
        e.recorded_at,
        link.recorded_us,
        e.data.decode(),
        e.prev_hash,
        e.hash,
    )


def encode_peaks(peaks: Sequence[bytes]) -> str:
    """The stored form of verify's resume peaks: a JSON list of hex strings."""
    return json.dumps([p.hex() for p in peaks])


def decode_peaks(text: str) -> list[bytes]:
    """Stored peaks: the JSON form, or space-separated hex (what existing PostgreSQL ledgers hold)."""
    items = json.loads(text) if text.startswith("[") else text.split()
    return [bytes.fromhex(p) for p in items]


class DialectStore(Protocol):
    """What tables written over a dialect use of their store (sql_store.SqlStore): its per-thread
    connection, its statements, and its write and read transactions."""

    @property
    def dialect(self) -> Dialect: ...

    def connection(self) -> Connection: ...
    def query(self, conn: Connection, sql: str, params: SqlParams = ()) -> Cursor: ...
    def query_many(self, conn: Connection, sql: str, rows: Sequence[SqlParams]) -> None: ...
    def write_begin(self) -> tuple[str, ...]: ...
    def transaction(self, begin: Sequence[str]) -> AbstractContextManager[Connection]: ...
    def reading(self) -> AbstractContextManager[Connection]: ...
