"""The screen's index (ledger/storage/derived/screen.py), read back with the events it comes from."""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Iterator
from typing import cast

from ledger.storage.derived import screen
from ledger.storage.derived.sums import Sums
from ledger.storage.tables.keys import after_seq, sum_rows
from ledger.storage.tables.shared import (
    TableBase,
)

_SCREEN_TYPES = "('citation.observed', 'resolution.observed', 'standing.checked')"
_SCREEN_RANGE = 50_000  # seqs whose screen rows verify reads per statement


# What verify reads back of the screen, as plain tuples of their columns' values (a walk reads one for
# every citation, resolution and check; both drivers give a row as a tuple, and these columns are NOT
# NULL): an event the screen's rows come from (seq, type, stream, observed_us, recorded_us, data), and
# the stored rows, ("ref", *derived/screen.RefRow) and ("notice", *derived/screen.NoticeRow)
ScreenEvent = tuple[int, str, str, int, int, str]
StoredRef = tuple[str, str, int, str, str]
StoredNotice = tuple[str, str, int, int, str, int, int, str]
ScreenRow = StoredRef | StoredNotice


class SqlScreenIndex(TableBase):
    """The screen's stored rows and the events they come from, for verify."""

    def screen_events(self, after: int = 0) -> Iterator[ScreenEvent]:
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
            yield from cast(list[ScreenEvent], rows)
            after = rows[-1][0]

    def screen_rows(self, after: int = 0) -> Iterator[ScreenRow]:
        """The screen's stored rows of events after `after`: ("ref", *RefRow) and ("notice", *NoticeRow),
        by seq, a range of seqs at a time."""
        last = self._q("SELECT coalesce(max(seq), 0) FROM events").fetchone()[0]
        for low in range(after, last, _SCREEN_RANGE):
            where = "WHERE seq > ? AND seq <= ? ORDER BY seq"
            span = (low, low + _SCREEN_RANGE)
            refs = self._q(f"SELECT 'ref', {screen.REF_COLUMNS} FROM screen_refs {where}", span).fetchall()
            notices = self._q(f"SELECT 'notice', {screen.NOTICE_COLUMNS} FROM screen_notices {where}", span)
            merged: Iterator[ScreenRow] = heapq.merge(
                cast(list[StoredRef], refs), cast(list[StoredNotice], notices.fetchall()), key=lambda r: r[2]
            )
            yield from merged
        # rows past the last event (none belong there) are named by the caller as rows of no event
        yield from cast(
            Iterable[StoredRef],
            self._q(
                f"SELECT 'ref', {screen.REF_COLUMNS} FROM screen_refs WHERE seq > ?", (max(last, after),)
            ),
        )
        yield from cast(
            Iterable[StoredNotice],
            self._q(
                f"SELECT 'notice', {screen.NOTICE_COLUMNS} FROM screen_notices WHERE seq > ?",
                (max(last, after),),
            ),
        )

    def screen_sums(self, after: int = 0) -> tuple[Sums, Sums]:
        """The screen's stored rows of the events after seq `after`, references (REF_COLUMNS) and
        notices (NOTICE_COLUMNS), each summed as a multiset (ledger/storage/derived/sums.py)."""
        refs, notices = Sums(), Sums()
        page = self.store.dialect.page
        where = after_seq(after)
        # pages by seq where only the events after one are asked for (both tables have an index by seq)
        order = ["seq", "work_id"] if after else ["work_id", "seq"]
        sum_rows(self._q, page, refs, screen.REF_COLUMNS, "screen_refs", order, where)
        order = [*order, "ordinal"]
        sum_rows(self._q, page, notices, screen.NOTICE_COLUMNS, "screen_notices", order, where)
        return refs, notices
