"""The derived rows a whole walk sums a page at a time (ledger/storage/derived/sums.py) are the rows the
append and the projector stored, at every position the projections can be at; and verify falls back
to comparing the screen's rows one event at a time only when their sums differ."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger.model import events as ev
from ledger.storage import verify
from ledger.storage.derived.keys import CHECK_WORKS, LEVELS, WORK_KEYS, level_table
from ledger.storage.derived.screen import NAME as SCREEN
from ledger.storage.derived.screen import NOTICE_COLUMNS, REF_COLUMNS
from ledger.storage.derived.spans import COLUMNS as SPAN_COLUMNS
from ledger.storage.derived.sums import MASK, Derived, Page, Positions, Sums, page_sums
from ledger.storage.interface import Store
from ledger.storage.projector import READ_BY_RECORDS
from ledger.storage.sql import Cursor, SqlParams
from ledger.storage.sql_store import SqlStore
from ledger.storage.tables.keys import after_seq, sum_rows
from service.ledger import Ledger
from tests.conftest import examples
from tests.factories import citation, ledgers, oid_of, resolution, ts
from tests.raw import edit, one
from tests.screen_scenario import seeded_ledger
from tests.service.test_screen import flagged_ledgers


def _derived(store: Store, after: int, batch: int) -> Derived:
    """The sums of the rows the events after `after` imply, as a whole walk takes them, page by page."""
    at = Positions(*(store.spans.projection_position(n) for n in (WORK_KEYS, CHECK_WORKS, SCREEN)))
    into = Derived()
    for rows in store.iter_pages(after=after, batch=batch):
        seqs, ids, streams, _, types, observed, _, data, _, _, obs_us, rec_us = zip(*rows, strict=True)
        page_sums(Page(seqs, ids, streams, types, observed, data, obs_us, rec_us), at, into)
    return into


@settings(
    max_examples=examples(15), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    events=st.one_of(ledgers(), flagged_ledgers()),
    cut=st.integers(0, 100),
    batch=st.sampled_from([1, 3, 5000]),
)
def test_the_sums_of_the_events_are_the_stored_rows(
    new_db: Any, events: list[ev.Event], cut: int, batch: int
) -> None:
    """Two appends, the projections brought to the first only: each kind of row summed from the events
    (every page size, from seq 1 and from the first append's end) equals the stored rows' sums."""
    ledger = Ledger(new_db(f"{uuid.uuid4().hex}.db"))
    try:
        split = len(events) * cut // 100
        ledger.append(events[:split])
        ledger.ops.project(READ_BY_RECORDS)
        ledger.append(events[split:])
        store = ledger.store
        for after in (0, store.spans.projection_position(SCREEN)):
            derived = _derived(store, after, batch)
            assert store.keys.index_sums(after) == (derived.keys, derived.checks)
            assert store.screen.screen_sums(after) == (derived.refs, derived.notices)
    finally:
        ledger.close()


@pytest.fixture
def screened(new_db: Any) -> Iterator[Ledger]:
    """The screen scenario (notices under several works, references to keyed works) and a few
    references resolved to another of its papers (inbound spans), projected."""
    ledger, _ = seeded_ledger(new_db())
    inbound: list[ev.Event] = []
    for i in range(5):
        inbound.append(citation(oid_of(900 + i), "2101.00001", ts(1), i))
        inbound.append(resolution(oid_of(900 + i), ts(2 + i), cited_arxiv="2101.00002"))
    ledger.append(inbound)
    ledger.ops.project(READ_BY_RECORDS)
    yield ledger
    ledger.close()


def test_a_ledger_with_notices_sums_every_kind_of_row(screened: Ledger) -> None:
    """No kind of row is left out of the sums, so none is compared vacuously."""
    derived = _derived(screened.store, 0, 5000)
    assert all(s.count > 0 for s in (derived.keys, derived.checks, derived.refs, derived.notices))
    assert screened.store.spans.span_sums().count == 5
    assert screened.store.keys.index_sums(0) == (derived.keys, derived.checks)
    assert screened.store.screen.screen_sums(0) == (derived.refs, derived.notices)


def test_sums_are_multisets() -> None:
    """Order does not count; a row twice is not the row once; another row is another sum."""
    a, b = Sums(), Sums()
    a.add([("x", 1), ("y", 2)])
    b.add([("y", 2)])
    b.add([("x", 1)])
    assert a == b
    b.add([("x", 1)])
    assert a != b


@given(st.lists(st.tuples(st.text(), st.integers(0, 2**40), st.integers(0, 2**40)), min_size=2, unique=True))
def test_rows_that_swap_an_int_column_change_the_sum(rows: list[tuple[str, int, int]]) -> None:
    """Two rows that trade their seqs (or any int column) are other rows: the sum tells. (A plain sum
    of the tuples' hashes misses such a trade about half the time: they are near linear in the ints.)"""
    (k1, s1, t1), (k2, s2, t2) = rows[0], rows[1]
    traded = [(k1, s2, t1), (k2, s1, t2), *rows[2:]]
    if sorted(traded) == sorted(rows):
        return  # the same rows after the trade
    a, b = Sums(), Sums()
    a.add(rows)
    b.add(traded)
    assert a != b


def test_a_plain_sum_of_tuple_hashes_would_miss_swaps() -> None:
    """Why the rows are hashed twice: over 200 swapped pairs, plain sums agree for many of them."""
    plain = 0
    for i in range(200):
        x, y = [(f"e:{i}", 1000 + i), (f"e:{i}b", 5000 + i)], [(f"e:{i}", 5000 + i), (f"e:{i}b", 1000 + i)]
        plain += (sum(map(hash, x)) & MASK) == (sum(map(hash, y)) & MASK)
        a, b = Sums(), Sums()
        a.add(x)
        b.add(y)
        assert a != b
    assert plain > 20


def test_the_screen_is_walked_row_by_row_only_when_its_sums_differ(
    screened: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An untouched ledger's screen rows pass on their sums; a notice moved among its work's notices
    sends verify to the exact comparison, which names its seq."""
    exact = verify._check_screen
    calls: list[int] = []

    def counted(store: Store, after: int) -> tuple[int, str] | None:
        calls.append(after)
        return exact(store, after)

    monkeypatch.setattr(verify, "_check_screen", counted)
    assert screened.verify().ok and calls == []
    db = screened.store.db
    seq = int(one(db, "SELECT max(seq) FROM screen_notices"))
    edit(db, "UPDATE screen_notices SET ordinal = ordinal + 100 WHERE seq = ?", params=(seq,))
    report = screened.verify()
    assert (report.ok, report.first_bad_seq, calls) == (False, seq, [0])
    assert report.reason is not None and "screen's index rows" in report.reason


@pytest.mark.parametrize("page", [1, 2, 7])
def test_stored_sums_read_in_pages_are_the_sums_read_at_once(screened: Ledger, page: int) -> None:
    """Every table verify sums, read in pages of a few rows (each page after the last one's key, in the
    order a dialect that pages uses), sums as it does read in one statement: no row skipped or twice."""
    store = screened.store
    after = store.head().seq // 2
    assert isinstance(store, SqlStore)  # both backends

    def q(sql: str, params: SqlParams) -> Cursor:
        return store.query(store.connection(), sql, params)

    keyed = [level_table("event_keys", lv) for lv in LEVELS]
    checked = [level_table("check_works", lv) for lv in LEVELS]
    checks = "work_id, source, observed_us, seq, recorded_us, notices"
    tables = [
        ("key, seq", keyed, ["key", "seq"], after_seq(0)),
        ("key, seq", keyed, ["seq", "key"], after_seq(after)),
        (checks, checked, ["work_id", "source", "observed_us", "seq"], after_seq(0)),
        (checks, checked, ["seq", "work_id"], after_seq(after)),
        (REF_COLUMNS, ["screen_refs"], ["work_id", "seq"], after_seq(0)),
        (REF_COLUMNS, ["screen_refs"], ["seq", "work_id"], after_seq(after)),
        (NOTICE_COLUMNS, ["screen_notices"], ["work_id", "seq", "ordinal"], after_seq(0)),
        (NOTICE_COLUMNS, ["screen_notices"], ["seq", "work_id", "ordinal"], after_seq(after)),
        (SPAN_COLUMNS, ["inbound_spans"],
         ["cited", "citing", "reference_index", "observation_id", "t_from", "k_from"], after_seq(0)),
    ]  # fmt: skip
    for columns, levels, order, where in tables:
        whole, paged = Sums(), Sums()
        for table in levels:
            sum_rows(q, None, whole, columns, table, order, where)
            sum_rows(q, page, paged, columns, table, order, where)
        assert whole.count > 0 and paged == whole, (levels, order)
