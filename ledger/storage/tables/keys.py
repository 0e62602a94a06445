"""The derived lookup keys and standing checks' per-work rows, read back at every level for verify."""

from __future__ import annotations

import heapq
from collections.abc import Iterator
from typing import Literal, NamedTuple

from ledger.storage.derived.keys import (
    LEVELS,
    level_table,
)
from ledger.storage.sql import (
    CHECK_WORKS_COLUMNS,
)
from ledger.storage.tables.shared import (
    TableBase,
)


class SeqCheckRow(NamedTuple):
    """A check_works row as verify reads it (CHECK_WORKS_COLUMNS): by seq first."""

    seq: int
    work_id: str
    source: str
    observed_us: int
    recorded_us: int
    notices: str


class IndexedCheck(NamedTuple):
    """A check_works row among an event's derived rows, in seq order (`index_after`)."""

    seq: int
    kind: Literal["check"]
    work_id: str
    source: str
    observed_us: int
    recorded_us: int
    notices: str


class IndexedKey(NamedTuple):
    """An event_keys row among an event's derived rows, in seq order (`index_after`)."""

    seq: int
    kind: Literal["key"]
    key: str


class StoredCheck(NamedTuple):
    """A check_works row as its level keeps it (`index_rows`)."""

    kind: Literal["check"]
    work_id: str
    source: str
    observed_us: int
    seq: int
    recorded_us: int
    notices: str


class StoredKey(NamedTuple):
    """An event_keys row as its level keeps it (`index_rows`)."""

    kind: Literal["key"]
    key: str
    seq: int


IndexRow = IndexedCheck | IndexedKey
StoredRow = StoredCheck | StoredKey


class SqlKeys(TableBase):
    """The event keys and check_works rows at every level (ledger/storage/derived/keys.py)."""

    def check_works_after(self, seq: int, upto: int | None = None) -> Iterator[SeqCheckRow]:
        """check_works rows (at either level) of events after seq (up to `upto`) in (seq, work_id)
        order, read lazily (a page at a time where the dialect says)."""
        levels = (
            map(
                SeqCheckRow._make,
                self._by_seq(level_table("check_works", lv), CHECK_WORKS_COLUMNS, seq, upto),
            )
            for lv in LEVELS
        )
        return heapq.merge(*levels)

    def index_after(self, seq: int, upto: int | None = None) -> Iterator[IndexRow]:
        """Every derived row of the events after seq (up to `upto`) in seq order, read lazily:
        (seq, "check", work_id, source, observed_us, recorded_us, notices) for check_works and
        (seq, "key", key) for event_keys at either level."""
        checks = (IndexedCheck(r[0], "check", *r[1:]) for r in self.check_works_after(seq, upto))
        keys = heapq.merge(
            *(
                (
                    IndexedKey(r[0], "key", r[1])
                    for r in self._by_seq(level_table("event_keys", lv), "seq, key", seq, upto)
                )
                for lv in LEVELS
            )
        )
        merged: Iterator[IndexRow] = heapq.merge(checks, keys)
        return merged

    def index_rows(self, after: int = 0) -> Iterator[StoredRow]:
        """Every derived row at every level (or those of the events after seq `after`), in the order
        each level keeps them (no sort): ("key", key, seq) and ("check", work_id, source, observed_us,
        seq, recorded_us, notices)."""
        if after:
            # by seq, where the big levels have an index: a range costs its rows, not the level's
            for lv in LEVELS:
                keys = self._by_seq(level_table("event_keys", lv), "seq, key", after, None)
                yield from (StoredKey("key", k, s) for s, k in keys)
            yield from (StoredCheck("check", *r[1:4], r[0], *r[4:]) for r in self.check_works_after(after))
            return
        for lv in LEVELS:
            table = level_table("event_keys", lv)
            rows = self._ordered(f"SELECT key, seq FROM {table} WHERE 1 = 1", ["key", "seq"], ())
            yield from (StoredKey("key", *r) for r in rows)
        columns = "work_id, source, observed_us, seq, recorded_us, notices"
        for lv in LEVELS:
            rows = self._ordered(
                f"SELECT {columns} FROM {level_table('check_works', lv)} WHERE 1 = 1",
                columns.split(", ")[:4],
                (),
            )
            yield from (StoredCheck("check", *r) for r in rows)
