"""Inbound observations' spans and their per-day counts (ledger/storage/derived/spans.py)."""

from __future__ import annotations

import heapq
import itertools
import operator
from collections.abc import Iterable, Iterator, Sequence

from ledger.storage.derived import spans
from ledger.storage.derived.keys import (
    LEVELS,
    OBSERVATION,
    level_table,
)
from ledger.storage.derived.spans import (
    CITATION,
    OPEN,
    Bucket,
    Row,
    Step,
    bucket_deltas,
    history,
    step_row,
)
from ledger.storage.derived.spans import COLUMNS as SPAN_COLUMNS
from ledger.storage.derived.sums import Sums
from ledger.storage.sql import Connection, SqlParams, SqlRow
from ledger.storage.tables.keys import sum_rows
from ledger.storage.tables.shared import (
    AFTER_OBSERVATIONS,
    COUNT_BUCKETS,
    INSERT_SPANS,
    TableBase,
    starts_ends,
    step_columns,
    steps_of,
)


class SqlSpans(TableBase):
    """The inbound spans and counts, their projection's position, and their first fill."""

    def observation_steps(
        self, oids: Sequence[str] | None = None, *, cited_only: bool = False
    ) -> Iterator[tuple[str, list[Step]]]:
        """Every observation's citations and resolutions as Steps (or only these observations'), by
        observation id, read lazily. `cited_only` may leave out (where that is cheap: every observation
        in one statement) the observations no resolution of which names a paper: they have no spans."""
        d = self.store.dialect
        if oids is not None:
            found = steps_of(self.store, self.store.connection(), oids)
            yield from ((o, sorted(found[o], key=lambda s: s.seq)) for o in sorted(found) if found[o])
            return
        if d.page is None:
            # one statement read lazily: the database sorts the citations and resolutions by observation
            # (a scan of the events in their order, where the keys' levels cost a random read each)
            sorted_steps = self._q(
                f"SELECT {step_columns(d)} FROM events "
                f"WHERE type IN ('{CITATION}', '{spans.RESOLUTION}') ORDER BY 1, seq"
            )
            by_oid = itertools.groupby(sorted_steps, key=_first)
            if not cited_only:
                yield from ((oid, list(map(step_row, mine))) for oid, mine in by_oid)
                return
            for oid, mine in by_oid:
                rows = list(mine)
                if any(r[7] for r in rows):  # a resolution's cited paper
                    yield oid, list(map(step_row, rows))
            return
        levels = [
            self._ordered(
                f"SELECT k.key, k.seq, {step_columns(d, 'e.')} FROM {level_table('event_keys', lv)} AS k "
                "JOIN events AS e ON e.seq = k.seq "
                f"WHERE k.key >= '{OBSERVATION}' AND k.key < '{AFTER_OBSERVATIONS}'",
                ["k.key", "k.seq"],
                (),
            )
            for lv in LEVELS
        ]
        for key, group in itertools.groupby(heapq.merge(*levels, key=_by_key), key=lambda r: r[0]):
            yield key.removeprefix(OBSERVATION), [step_row(r[2:]) for r in group]

    def span_rows(self, oids: Sequence[str] | None = None, *, ordered: bool = True) -> Iterator[Row]:
        """Every stored inbound span (or only these observations'), read lazily: by (observation_id,
        t_from, k_from), or in the key's order (`ordered=False`, paged by the key where the dialect pages)."""
        d = self.store.dialect
        where, params = ("1 = 1", ()) if oids is None else (d.in_list("observation_id"), (d.bind_list(oids),))
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

    def span_sums(self, oids: Sequence[str] | None = None) -> Sums:
        """Every stored inbound span (or only these observations'), as Rows' tuples, summed as a
        multiset (ledger/storage/derived/sums.py)."""
        d = self.store.dialect
        where: tuple[str, SqlParams] = (
            ("1 = 1", ()) if oids is None else (d.any_of("observation_id"), (d.bind_list(oids),))
        )
        into = Sums()
        key = ["cited", "citing", "reference_index", "observation_id", "t_from", "k_from"]
        sum_rows(self._q, d.page, into, SPAN_COLUMNS, "inbound_spans", key, where)
        return into

    def _fill(self, conn: Connection, rows: list[Row]) -> None:
        if rows:
            self.store.query_many(conn, INSERT_SPANS, rows)
            self.store.query_many(conn, COUNT_BUCKETS, bucket_deltas(rows, []))

    def count_rows(self, cited: Sequence[str] | None = None) -> tuple[Iterator[Bucket], Iterator[Bucket]]:
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
            + starts_ends("cited, ", where, f" AND t_to < {OPEN}{where}")
            + ") AS c GROUP BY cited, bucket HAVING sum(s) <> 0 OR sum(e) <> 0 ORDER BY cited, bucket",
            params * 2,
        )
        return _buckets(stored), _buckets(counted)

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


def _by_key(row: SqlRow) -> tuple[str, int]:
    """A level's row by its key (an observation key and a seq: unique across the levels)."""
    return row[0], row[1]


def _buckets(rows: Iterable[SqlRow]) -> Iterator[Bucket]:
    """Rows of (cited, bucket, starts, ends) as Buckets (int(): PostgreSQL sums bigints as numeric)."""
    return ((c, int(b), int(n), int(e)) for c, b, n, e in rows)


_first = operator.itemgetter(0)  # a step row's observation id
