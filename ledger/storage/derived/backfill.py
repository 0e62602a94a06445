"""The works-index keys and the screen's rows of the events a ledger stored before it kept them: the
upgrade's Python part, written once for both backends (SQL alone cannot apply the DOI rules of
ledger/model/doi.py, nor write a notice's canonical JSON)."""

from __future__ import annotations

from collections.abc import Sequence

from ledger.storage.derived.keys import link_work_keys
from ledger.storage.derived.screen import apply
from ledger.storage.sql import (
    ENVELOPE_COLUMNS,
    Connection,
    Cursor,
    Dialect,
    SqlParams,
    first,
    integer,
    link_row,
)

PAGE = 10_000
# where the keys are staged, unsorted, before they are moved in key order
FILL_TABLE = "work_keys_fill"
_READ = (
    f"SELECT {ENVELOPE_COLUMNS}, observed_us, recorded_us FROM events "
    "WHERE type IN ('citation.observed', 'resolution.observed') AND seq > ? ORDER BY seq LIMIT ?"
)


def fill_work_keys(conn: Connection, dialect: Dialect) -> int:
    """Add the `w:` keys of every stored citation and resolution to the merged level; returns how many.

    Read a page of events at a time, the keys staged unsorted, then moved in key order (each leaf of
    the merged level written once, as a level move does). Run inside the migration's transaction.
    """
    text, seq = ("TEXT", "INTEGER") if dialect.name == "sqlite" else ('text COLLATE "C"', "bigint")
    conn.execute(f"CREATE TEMP TABLE {FILL_TABLE} (key {text} NOT NULL, seq {seq} NOT NULL)")
    after, added = 0, 0
    while True:
        rows = conn.execute(dialect.sql(_READ), (after, PAGE)).fetchall()
        if not rows:
            break
        links = [link_row(r) for r in rows]
        # the keys link_work_keys derives, so `ledger verify` finds exactly these
        keys = [(k, link.event.seq) for link in links for k in link_work_keys(link)]
        if keys:
            conn.cursor().executemany(dialect.sql(f"INSERT INTO {FILL_TABLE} (key, seq) VALUES (?, ?)"), keys)
        added += len(keys)
        after = links[-1].event.seq
    conn.execute(f"INSERT INTO event_keys (key, seq) SELECT key, seq FROM {FILL_TABLE} ORDER BY key, seq")
    conn.execute(f"DROP TABLE {FILL_TABLE}")
    if dialect.analyze:
        conn.execute("ANALYZE event_keys")
    return added


def fill_screen(conn: Connection, dialect: Dialect) -> None:
    """Derive the screen's rows of every stored event, by the projector's rule a range of seqs at a
    time. Run inside the migration's transaction."""
    head = integer(first(conn.execute("SELECT coalesce(max(seq), 0) FROM events"))[0])
    for after in range(0, head, _SCREEN_RANGE):
        apply(_Conn(dialect), conn, after, min(head, after + _SCREEN_RANGE))


_SCREEN_RANGE = 100_000  # seqs a statement derives the references of


class _Conn:
    """The two calls of a store the screen's rule makes, on a bare connection."""

    def __init__(self, dialect: Dialect) -> None:
        self.dialect = dialect

    def query(self, conn: Connection, sql: str, params: SqlParams = ()) -> Cursor:
        return conn.execute(self.dialect.sql(sql), params)

    def query_many(self, conn: Connection, sql: str, rows: Sequence[SqlParams]) -> None:
        conn.cursor().executemany(self.dialect.sql(sql), rows)
