"""ledger/spans.py: inbound spans kept by appends equal the ones the events give, and the record read
from them equals the record read from every event, as of any T and known at any K."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger.model.events import Event
from ledger.model.instants import parse_ts
from ledger.storage.derived.spans import (
    CITATION,
    OPEN,
    RESOLUTION,
    Row,
    Span,
    Step,
    delta,
    history,
    replay,
    spans,
)
from ledger.storage.projector import READ_BY_RECORDS
from projections.memory import MemoryReader
from service.ledger import Ledger
from tests.conftest import NewDb, examples
from tests.factories import citation, oid_of, paper, resolution, ts
from tests.old_layout import build_old_ledger, version_before
from tests.raw import rows

P, Q = "2101.00001", "2101.00002"


def cit(seq: int, at: int, index: int = 0, recorded: int = 0, citing: str = Q) -> Step:
    return Step("o", seq, CITATION, at, recorded, citing, index, None)


def res(seq: int, at: int, cited: str | None = P, recorded: int = 0) -> Step:
    return Step("o", seq, RESOLUTION, at, recorded, None, None, cited)


@pytest.mark.parametrize(
    ("steps", "want"),
    [
        pytest.param([cit(1, 10)], [], id="pending"),
        pytest.param([cit(1, 10), res(2, 20)], [Span(P, Q, 0, "o", 20, OPEN, 1, 2)], id="resolved-later"),
        pytest.param(
            [res(2, 5), cit(1, 10)], [Span(P, Q, 0, "o", 10, OPEN, 1, 2)], id="resolved-before-cited"
        ),
        pytest.param([cit(1, 10), res(2, 20, cited=None)], [], id="unresolved"),
        pytest.param([cit(1, 10), res(2, 20, cited=Q)], [], id="self-citation"),
        pytest.param(
            [cit(1, 10), res(2, 20), res(3, 30, cited=None)],
            [Span(P, Q, 0, "o", 20, 30, 1, 2)],
            id="re-resolved-away",
        ),
        pytest.param(
            [cit(1, 10), res(2, 20), cit(3, 25, index=7)],
            [Span(P, Q, 0, "o", 20, 25, 1, 2), Span(P, Q, 7, "o", 25, OPEN, 3, 2)],
            id="re-cited-with-another-index",
        ),
        pytest.param(
            [cit(1, 10), res(2, 20), res(3, 20, cited="2101.00003")],
            [Span("2101.00003", Q, 0, "o", 20, OPEN, 1, 3)],
            id="same-instant-later-seq-wins",
        ),
    ],
)
def test_spans_follow_the_latest_citation_and_resolution(steps: list[Step], want: list[Span]) -> None:
    assert spans(steps) == want


def test_history_closes_a_span_when_a_later_append_changes_it() -> None:
    steps = [cit(1, 10, recorded=100), res(2, 20, recorded=100), res(3, 25, cited=None, recorded=200)]
    assert history(steps) == [
        Row(P, Q, 0, "o", 20, OPEN, 1, 2, 100, 200),  # known from 100 until the re-resolution arrived
        Row(P, Q, 0, "o", 20, 25, 1, 2, 200, OPEN),  # then it ends where the re-resolution starts
    ]
    # a resolution observed before the one in force changes nothing from then on
    earlier = [*steps[:2], res(3, 15, cited=None, recorded=200)]
    assert history(earlier) == [Row(P, Q, 0, "o", 20, OPEN, 1, 2, 100, OPEN)]


def test_history_keeps_no_span_two_appends_of_one_instant_made_and_unmade() -> None:
    # both appends were recorded at the same microsecond (a clock that went back): no K sees between
    steps = [cit(1, 10, recorded=100), res(2, 20, recorded=100), res(3, 20, cited=None, recorded=100)]
    assert history(steps) == []
    first = delta([], steps[:2])
    assert first.opened == [Row(P, Q, 0, "o", 20, OPEN, 1, 2, 100, OPEN)]
    assert delta(steps[:2], steps[2:]).closed == [(Span(P, Q, 0, "o", 20, OPEN, 1, 2), 100)]


@given(
    st.lists(
        st.tuples(
            st.booleans(), st.integers(0, 6), st.integers(0, 2), st.sampled_from([P, Q, "2101.00003", None])
        ),
        max_size=8,
    ),
    st.lists(st.integers(0, 2), min_size=8, max_size=8),
)
def test_history_of_one_recorded_instant_is_the_replay(
    raw: list[tuple[bool, int, int, str | None]], recorded: list[int]
) -> None:
    """An observation's rows when its events share one recorded_us (history's short way) are what the
    replay one recorded_us at a time gives, and so for events recorded at several."""
    steps = [
        cit(i + 1, 10 * at, index) if is_cit else res(i + 1, 10 * at, cited)
        for i, (is_cit, at, index, cited) in enumerate(raw)
    ]
    assert history(steps) == replay(steps)
    spread = [s._replace(recorded_us=100 * r) for s, r in zip(steps, recorded, strict=False)]
    assert history(spread) == replay(spread)


# -- appends keep what the events give, and the record reads it exactly --------------------------

_CITING = ["2201.00001", "2201.00002", P]
_CITED = [P, Q, None]


@st.composite
def histories(draw: st.DrawFn) -> list[list[Event]]:
    """Batches of citations and (re-)resolutions of a few observations, at random instants."""
    batches: list[list[Event]] = [[paper(P, ts(0)), paper(Q, ts(0, 1))]]
    cited: set[int] = set()
    for _ in range(draw(st.integers(1, 6))):
        batch: list[Event] = []
        for _ in range(draw(st.integers(1, 4))):
            n = draw(st.integers(0, 4))
            at = ts(draw(st.integers(1, 30)))
            if n not in cited or draw(st.booleans()):
                batch.append(citation(oid_of(n), _CITING[n % 3], at, draw(st.integers(0, 3))))
                cited.add(n)
            else:
                target = draw(st.sampled_from(_CITED))
                status = "unresolved" if target is None else "verified_exact"
                batch.append(resolution(oid_of(n), at, status, cited_arxiv=target))
        batches.append(batch)
    return batches


class _Clock:
    """recorded_at that sometimes stands still (two appends in one microsecond)."""

    def __init__(self, stills: list[bool]) -> None:
        self.now = 1_786_000_000_000_000
        self.stills = iter(stills)

    def now_us(self) -> int:
        if not next(self.stills, False):
            self.now += 1000
        return self.now


@settings(
    max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(batches=histories(), stills=st.lists(st.booleans(), max_size=8), data=st.data())
def test_appended_spans_equal_the_events_and_give_the_record_of_every_event(
    new_db: NewDb,
    monkeypatch: pytest.MonkeyPatch,
    batches: list[list[Event]],
    stills: list[bool],
    data: st.DataObject,
) -> None:
    # buckets of 7 minutes: counts as of T sum some buckets and count inside T's own
    monkeypatch.setattr("ledger.storage.derived.spans.BUCKET_US", 7 * 60 * 1_000_000)
    ledger = Ledger(new_db(f"h{next(_names)}.db"), clock=_Clock(stills))
    try:
        for batch in batches:
            ledger.append(batch)
        assert ledger.verify().ok  # the stored rows are history() of every observation
        log = ledger.store.read_log()
        recorded = sorted({parse_ts(e.recorded_at) for e in log})
        for _ in range(4):
            t = parse_ts(ts(data.draw(st.integers(0, 32))))
            k = data.draw(st.sampled_from([None, *recorded, recorded[0] - 1]))
            memory = MemoryReader(log, t, k)
            with ledger.store.snapshot(t, k) as reader:
                for pid in (P, Q):
                    for cap in (100, 1):
                        assert reader.inbound(pid, cap) == memory.inbound(pid, cap)
    finally:
        ledger.close()


def _counter() -> Iterator[int]:
    n = 0
    while True:
        n += 1
        yield n


_names = _counter()


def test_an_older_ledger_gets_its_spans_when_opened(
    new_db: NewDb, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The migration leaves the rows to the store: they equal the ones appends would have kept."""
    monkeypatch.setattr("ledger.storage.derived.spans.BUCKET_US", 60 * 1_000_000)
    source = Ledger(new_db("source.db"))
    source.append([paper(P, ts(0)), paper(Q, ts(0, 1))])
    source.append([citation(oid_of(n), "2201.00001", ts(1, n), n) for n in range(3)])
    source.append([resolution(oid_of(n), ts(2, n), cited_arxiv=P) for n in range(3)])
    source.append([resolution(oid_of(1), ts(3), "unresolved", cited_arxiv=None)])
    source.ops.project(READ_BY_RECORDS)
    spans_sql = "SELECT * FROM inbound_spans ORDER BY observation_id, t_from, k_from"
    kept = rows(source.url, spans_sql)
    assert len(kept) == 4  # three resolved, one of them closed by the re-resolution
    old = new_db("old.db")
    build_old_ledger(old, version_before(old, "inbound_spans"), source)
    upgraded = Ledger(old)
    assert rows(old, spans_sql) == kept
    counts_sql = "SELECT * FROM inbound_counts WHERE starts <> 0 OR ends <> 0 ORDER BY cited, bucket"
    assert rows(old, counts_sql) == rows(source.url, counts_sql) != []
    assert rows(old, "SELECT count(*) FROM derived_pending") == [(0,)]
    assert upgraded.verify().ok
    t = parse_ts(ts(2, 5))
    assert upgraded.record_bytes(P, t)[0] == source.record_bytes(P, t)[0]


def test_a_resumed_verify_checks_the_spans_and_ids_of_what_it_walks(new_db: NewDb) -> None:
    """chain_status resumes from the last verified point: the observations appended since are
    checked (a forged span of one is caught); the rest was checked by the walk it resumes from."""
    from ledger.storage.verify import verify_store
    from tests.raw import edit

    ledger = Ledger(new_db())
    ledger.append([paper(P, ts(0)), citation(oid_of(1), "2201.00001", ts(1), 0)])
    assert verify_store(ledger.store, remember=ledger.clock).ok
    ledger.append([resolution(oid_of(1), ts(2), cited_arxiv=P)])
    ledger.ops.project(READ_BY_RECORDS)
    assert verify_store(ledger.store, resume=True).ok
    edit(ledger.url, "UPDATE inbound_spans SET reference_index = 9")
    report = verify_store(ledger.store, resume=True)
    assert not report.ok and "inbound spans of observation" in (report.reason or "")


@pytest.mark.parametrize(
    "at", ["1969-12-31T23:59:59.999999Z", "1969-12-31T00:00:00Z", "0001-01-01T00:00:00Z"]
)
def test_counts_of_spans_before_1970_are_bucketed_as_appends_bucket_them(new_db: NewDb, at: str) -> None:
    """The database counts the spans in floor-divided buckets, as spans.bucket_deltas does in Python
    (an integer division in SQL truncates toward zero: before the epoch that is the next bucket)."""
    ledger = Ledger(new_db("old.db"))
    ledger.append([paper(P, at), citation(oid_of(1), Q, at), resolution(oid_of(1), at, cited_arxiv=P)])
    ledger.ops.project(READ_BY_RECORDS)
    stored, counted = ledger.store.spans.count_rows()
    assert list(stored) == list(counted) != []
    assert ledger.verify().ok
    ledger.close()
