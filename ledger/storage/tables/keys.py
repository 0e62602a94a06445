"""The derived lookup keys and standing checks' per-work rows, read back at every level for verify."""

from __future__ import annotations

import heapq
from collections.abc import Callable, Iterator, Sequence
from itertools import islice
from typing import cast

from ledger.storage.derived.keys import (
    LEVELS,
    level_table,
)
from ledger.storage.derived.sums import Sums
from ledger.storage.sql import (
    CHECK_WORKS_COLUMNS,
    Cursor,
    SqlParams,
)
from ledger.storage.tables.shared import (
    TableBase,
)

# The rows verify reads back, as plain tuples of their columns' values (verify hashes or compares
# hundreds of thousands of them a walk; a NamedTuple each cost it a sixth of its CPU):
# a check_works row by seq first (CHECK_WORKS_COLUMNS): seq, work_id, source, observed_us, recorded_us,
# notices. Read with a cast: both drivers give a row as a tuple of its columns' values, and these
# columns are NOT NULL.
SeqCheck = tuple[int, str, str, int, int, str]
# an event's derived rows in seq order (`index_after`): (seq, "key", key) and (seq, "check", work_id,
# source, observed_us, recorded_us, notices)
IndexedKey = tuple[int, str, str]
IndexedCheck = tuple[int, str, str, str, int, int, str]
IndexRow = IndexedKey | IndexedCheck
# the rows as each level keeps them (`index_rows`): ("key", key, seq) and ("check", work_id, source,
# observed_us, seq, recorded_us, notices)
StoredKey = tuple[str, str, int]
StoredCheck = tuple[str, str, str, int, int, int, str]
StoredRow = StoredKey | StoredCheck


class SqlKeys(TableBase):
    """The event keys and check_works rows at every level (ledger/storage/derived/keys.py)."""

    def check_works_after(self, seq: int, upto: int | None = None) -> Iterator[SeqCheck]:
        """check_works rows (at either level) of events after seq (up to `upto`) in (seq, work_id)
        order, read lazily (a page at a time where the dialect says)."""
        return heapq.merge(
            *(
                cast(
                    Iterator[SeqCheck],
                    self._by_seq(level_table("check_works", lv), CHECK_WORKS_COLUMNS, seq, upto),
                )
                for lv in LEVELS
            )
        )

    def index_after(self, seq: int, upto: int | None = None) -> Iterator[IndexRow]:
        """Every derived row of the events after seq (up to `upto`) in seq order, read lazily:
        (seq, "check", work_id, source, observed_us, recorded_us, notices) for check_works and
        (seq, "key", key) for event_keys at either level."""
        checks: Iterator[IndexRow] = ((r[0], "check", *r[1:]) for r in self.check_works_after(seq, upto))
        keys: Iterator[IndexRow] = (
            (r[0], "key", r[1])
            for r in heapq.merge(
                *(
                    cast(
                        Iterator[tuple[int, str]],
                        self._by_seq(level_table("event_keys", lv), "seq, key", seq, upto),
                    )
                    for lv in LEVELS
                )
            )
        )
        return heapq.merge(checks, keys)

    def index_rows(self, after: int = 0) -> Iterator[StoredRow]:
        """Every derived row at every level (or those of the events after seq `after`), in the order
        each level keeps them (no sort): ("key", key, seq) and ("check", work_id, source, observed_us,
        seq, recorded_us, notices)."""
        if after:
            # by seq, where the big levels have an index: a range costs its rows, not the level's
            for lv in LEVELS:
                keys = cast(
                    Iterator[tuple[int, str]],
                    self._by_seq(level_table("event_keys", lv), "seq, key", after, None),
                )
                yield from (("key", k, s) for s, k in keys)
            yield from (("check", *r[1:4], r[0], *r[4:]) for r in self.check_works_after(after))
            return
        for lv in LEVELS:
            table = level_table("event_keys", lv)
            rows = cast(
                Iterator[tuple[str, int]],
                self._ordered(f"SELECT key, seq FROM {table} WHERE 1 = 1", ["key", "seq"], ()),
            )
            yield from (("key", *r) for r in rows)
        columns = "work_id, source, observed_us, seq, recorded_us, notices"
        for lv in LEVELS:
            checks = cast(
                Iterator[tuple[str, str, int, int, int, str]],
                self._ordered(
                    f"SELECT {columns} FROM {level_table('check_works', lv)} WHERE 1 = 1",
                    columns.split(", ")[:4],
                    (),
                ),
            )
            yield from (("check", *r) for r in checks)

    def index_sums(self, after: int = 0) -> tuple[Sums, Sums]:
        """The stored keys, (key, seq), and check_works rows, (work_id, source, observed_us, seq,
        recorded_us, notices), of the events after seq `after`, at every level, each summed as a
        multiset (ledger/storage/derived/sums.py)."""
        keys, checks = Sums(), Sums()
        q, page = self._q, self.store.dialect.page
        check_columns = "work_id, source, observed_us, seq, recorded_us, notices"
        for lv in LEVELS:
            # by seq where only some events are asked for (the big levels have an index by seq)
            order = ["seq", "key"] if after else ["key", "seq"]
            sum_rows(q, page, keys, "key, seq", level_table("event_keys", lv), order, after_seq(after))
            order = ["seq", "work_id"] if after else ["work_id", "source", "observed_us", "seq"]
            sum_rows(q, page, checks, check_columns, level_table("check_works", lv), order, after_seq(after))
        return keys, checks


Query = Callable[[str, SqlParams], Cursor]


def sum_rows(
    q: Query,
    page: int | None,
    into: Sums,
    columns: str,
    table: str,
    order: Sequence[str],
    where: tuple[str, SqlParams] = ("1 = 1", ()),
) -> None:
    """Add the rows (`columns`) of `table` where `where` (a condition and its parameters) holds to
    `into`, a batch of rows at a time (hashed in C, no Python a row): one statement read lazily (`page`
    None), or pages of `page` rows in the unique `order` (each a statement of its own)."""
    sql, base = f"SELECT {columns} FROM {table} WHERE {where[0]}", where[1]
    if page is None:
        rows = iter(q(sql, base))
        while part := list(islice(rows, _CHUNK)):
            into.add(part)
        return
    names = columns.split(", ")
    at = [names.index(c) for c in order]
    by = ", ".join(order)
    params: SqlParams = (*base, page)
    more = ""
    while True:
        chunk = q(f"{sql}{more} ORDER BY {by} LIMIT ?", params).fetchall()
        into.add(chunk)
        if len(chunk) < page:
            return
        more = f" AND ({by}) > ({', '.join('?' * len(order))})"
        params = (*base, *(chunk[-1][i] for i in at), page)


def after_seq(after: int) -> tuple[str, SqlParams]:
    """The rows of the events after seq `after` (every row for 0), as `sum_rows` takes a condition."""
    return ("seq > ?", (after,)) if after else ("1 = 1", ())


_CHUNK = 5_000  # rows hashed in one call (held as a list meanwhile)
