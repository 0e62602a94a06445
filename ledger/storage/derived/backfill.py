"""The works-index keys of the events a ledger stored before it kept them: the upgrade's Python
part, written once for both backends (SQL alone cannot apply the DOI rules of ledger/doi.py)."""

from __future__ import annotations

from typing import Any

from ledger.storage.derived.keys import link_work_keys
from ledger.storage.derived.screen import INSERT_NOTICES, INSERT_REFS, NoticeRow, RefRow, batch_rows
from ledger.storage.sql import ENVELOPE_COLUMNS, Dialect, link_row

PAGE = 10_000
# where the keys are staged, unsorted, before they are moved in key order
FILL_TABLE = "work_keys_fill"
_READ = (
    f"SELECT {ENVELOPE_COLUMNS}, observed_us, recorded_us FROM events "
    "WHERE type IN ('citation.observed', 'resolution.observed') AND seq > ? ORDER BY seq LIMIT ?"
)


def fill_work_keys(conn: Any, dialect: Dialect) -> int:
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


_READ_SCREEN = (
    "SELECT seq, event_id, stream, stream_version, type, observed_at, observed_us, recorded_at, recorded_us, "
    "data FROM events WHERE type IN ('citation.observed', 'resolution.observed', 'standing.checked') "
    "AND seq > ? ORDER BY seq LIMIT ?"
)


def fill_screen(conn: Any, dialect: Dialect) -> int:
    """Derive the screen's rows of every stored event, a page at a time; returns how many. Run inside
    the migration's transaction."""
    after, added = 0, 0
    while True:
        rows = conn.execute(dialect.sql(_READ_SCREEN), (after, PAGE)).fetchall()
        if not rows:
            return added
        refs, notices = batch_rows(rows)
        insert_screen(conn, dialect, refs, notices)
        added += len(refs) + len(notices)
        after = rows[-1][0]


def insert_screen(conn: Any, dialect: Dialect, refs: list[RefRow], notices: list[NoticeRow]) -> None:
    """Write the screen's rows of a batch on `conn`."""
    if refs:
        conn.cursor().executemany(dialect.sql(INSERT_REFS), refs)
    if notices:
        conn.cursor().executemany(dialect.sql(INSERT_NOTICES), notices)
