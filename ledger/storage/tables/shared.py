"""What the SQL store's capabilities share: statements over several tables, and a base that
runs a statement on the store's per-thread connection."""

from __future__ import annotations

import sys
from collections.abc import Iterator, Sequence
from typing import Protocol

from ledger.model.events import StoredEvent
from ledger.model.facts import (
    Head,
)
from ledger.storage.derived import spans
from ledger.storage.derived.keys import (
    CHECK_WORKS,
    EVENT,
    LEVELS,
    OBSERVATION,
    level_table,
)
from ledger.storage.derived.spans import (
    CITATION,
    OPEN,
    Step,
    data_steps,
)
from ledger.storage.derived.spans import COLUMNS as SPAN_COLUMNS
from ledger.storage.sql import (
    ENVELOPE_COLUMNS,
    Connection,
    Cursor,
    Dialect,
    DialectStore,
    SqlParams,
    SqlRow,
    envelope_row,
)
from ledger.tlog.chain import GENESIS

CHECK_WINDOW = "observed_us <= ? AND recorded_us <= ?"  # a check as of T, known by K
# the standing checks as of T, known by K, past the check_works projection's position: those a reader
# folds in from their events (bounded on both sides, so a planner takes the range for a few rows)
CHECKS_TAIL = (
    "type = 'standing.checked' AND seq > coalesce("
    f"(SELECT seq FROM projections WHERE name = '{CHECK_WORKS}'), 0)"
    f" AND seq <= (SELECT max(seq) FROM events) AND {CHECK_WINDOW}"
)


def each_level(table: str, columns: str, where: str, union: str = "UNION ALL") -> str:
    """One SELECT of `columns` per level of a leveled table (derived/keys.py), joined by `union`: each
    level probed on its own, as the planner would scan the view rather than push a list into it."""
    return f" {union} ".join(f"SELECT {columns} FROM {level_table(table, lv)} WHERE {where}" for lv in LEVELS)


INSERT_SPANS = f"INSERT INTO inbound_spans ({SPAN_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
COUNT_BUCKETS = (
    "INSERT INTO inbound_counts (cited, bucket, starts, ends) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (cited, bucket) DO UPDATE SET starts = inbound_counts.starts + excluded.starts, "
    "ends = inbound_counts.ends + excluded.ends"
)


def bucket_of(column: str) -> str:
    """The bucket of an instant column (spans.BUCKET_US): floor division on both engines, which
    truncate an integer division toward zero."""
    b = spans.BUCKET_US
    return f"(CASE WHEN {column} >= 0 THEN {column} / {b} ELSE -((-{column} - 1) / {b}) - 1 END)"


def starts_ends(columns: str, starts: str, ends: str) -> str:
    """The rows a per-bucket count of the inbound spans known now sums: (`columns`, bucket, instant,
    1, 0) for each start where `starts` holds, (..., 0, 1) for each end where `ends` holds."""
    return (
        f"SELECT {columns}{bucket_of('t_from')} AS bucket, t_from AS t, 1 AS s, 0 AS e FROM inbound_spans"
        f" WHERE k_to = {OPEN}{starts}"
        f" UNION ALL SELECT {columns}{bucket_of('t_to')}, t_to, 0, 1 FROM inbound_spans"
        f" WHERE k_to = {OPEN}{ends}"
    )


def step_columns(d: Dialect, events: str = "") -> str:
    """The columns of a Step, read from a citation or resolution row of events (`events`: its alias
    and a dot, in a join)."""
    return (
        f"{d.json_text('observation_id')}, {events}seq, type, observed_us, recorded_us, "
        f"{d.json_text('citing_arxiv_id')}, {d.json_text('reference_index')}, {d.json_text('cited_arxiv_id')}"
    )


AFTER_OBSERVATIONS = OBSERVATION[0] + ";"  # the first key past every observation key ("o:" < "o;")


def head_of(row: SqlRow | None) -> Head:
    """The Head of a row of HEAD_SQL (the genesis when the ledger is empty)."""
    return Head(0, GENESIS) if row is None else Head(row[0], row[1])


def existing_events(
    store: DialectStore, conn: Connection, event_ids: Sequence[str]
) -> dict[str, StoredEvent]:
    """Events stored under any of these ids."""
    d = store.dialect
    rows = store.query(
        conn,
        f"SELECT {ENVELOPE_COLUMNS} FROM events WHERE {d.keyed('event_keys_all')}",
        (d.bind_list([EVENT + i for i in event_ids]),),
    )
    return {e.event_id: e for e in map(envelope_row, rows)}


# the columns `data_steps` (derived/spans.py) takes a Step from
STEP_DATA_COLUMNS = "seq, type, observed_us, recorded_us, data"


def steps_of(
    store: DialectStore, conn: Connection, observation_ids: Sequence[str], upto: int | None = None
) -> dict[str, list[Step]]:
    """The stored citations and resolutions of each of these observations (an empty list: none), those
    at or before seq `upto` where it is given."""
    d = store.dialect
    # the data comes back whole and is decoded here: PostgreSQL parsed each row's into jsonb to read
    # four fields (1.6 us of the server's CPU a row, msgspec's decode a tenth of that), SQLite once each
    keys = d.bind_list([OBSERVATION + o for o in observation_ids])
    sql = f"SELECT {STEP_DATA_COLUMNS} FROM events WHERE {d.keyed('event_keys_all')}"
    rows = (
        store.query(conn, sql, (keys,))
        if upto is None
        else store.query(conn, f"{sql} AND seq <= ?", (keys, upto))
    )
    found: dict[str, list[Step]] = {o: [] for o in observation_ids}
    for step in data_steps(rows):
        found[step.observation_id].append(step)
    return found


def citing_of(steps: dict[str, list[Step]]) -> dict[str, str]:
    """observation_id -> its citing paper, for the observations with a citation.observed among `steps`."""
    return {
        oid: min(s.citing for s in mine if s.citing is not None)
        for oid, mine in steps.items()
        if any(s.type == CITATION for s in mine)
    }


class TableStore(DialectStore, Protocol):
    """What a capability's tables use of their store (sql_store.SqlStore)."""

    @property
    def db(self) -> str: ...
    @property
    def fill_begin(self) -> tuple[str, ...]: ...
    @property
    def search_begin(self) -> tuple[str, ...]: ...
    @property
    def readonly_errors(self) -> tuple[type[BaseException], ...]: ...
    def in_transaction(self, conn: Connection) -> bool: ...


class TableBase:
    """A capability's tables over the store's per-thread connection."""

    def __init__(self, store: TableStore) -> None:
        self.store = store

    def _q(self, sql: str, params: SqlParams = ()) -> Cursor:
        return self.store.query(self.store.connection(), sql, params)

    def _by_seq(self, table: str, columns: str, seq: int, upto: int | None) -> Iterator[SqlRow]:
        """The rows of `table` (whose `columns` start with seq and a second key) after seq, up to
        `upto`, in that order."""
        end = sys.maxsize if upto is None else upto
        return self._ordered(
            f"SELECT {columns} FROM {table} WHERE seq > ? AND seq <= ?", columns.split(", ")[:2], (seq, end)
        )

    def _ordered(self, sql: str, order: Sequence[str], params: SqlParams) -> Iterator[SqlRow]:
        """The rows of `sql` (a SELECT ... WHERE whose first columns are `order`, a unique key) in that
        order, read lazily: one statement, or one page per statement where the dialect says."""
        by = ", ".join(order)
        page = self.store.dialect.page
        if page is None:
            return iter(self._q(f"{sql} ORDER BY {by}", params))
        return self._pages(sql, by, len(order), params, page)

    def _pages(self, sql: str, by: str, width: int, params: SqlParams, page: int) -> Iterator[SqlRow]:
        rows = self._q(f"{sql} ORDER BY {by} LIMIT ?", (*params, page)).fetchall()
        after = f" AND ({by}) > ({', '.join('?' * width)}) ORDER BY {by} LIMIT ?"
        while rows:
            yield from rows
            rows = self._q(sql + after, (*params, *rows[-1][:width], page)).fetchall()
