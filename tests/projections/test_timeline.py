"""The timeline projection (projections/timeline.py): its instants held to the record itself."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger.model import events as ev
from ledger.model.errors import NotFound
from ledger.model.instants import MAX_US, format_as_of, parse_ts
from projections import timeline as tl
from projections.memory import MemoryReader
from projections.timeline import Timeline, as_of_text, build_timeline, events_text
from service.ledger import Ledger
from tests.conftest import examples
from tests.factories import (
    PAPERS,
    check,
    citation,
    ledgers,
    measurement,
    notice,
    oid_of,
    paper,
    resolution,
    ts,
    work,
)
from tests.projections.test_record import Scratch, scratch  # noqa: F401 (the fixture)

if TYPE_CHECKING:
    pass

FIX_ID = "2509.02480"
P = "2101.00001"
Q = "2101.00002"


def _content(record: dict[str, Any] | None) -> Any:
    """What a record says, whatever instant it is as of (its as_of, the thesis date and the context
    digest, which covers the thesis, are the instant itself)."""
    if record is None:
        return None
    out = {k: v for k, v in record.items() if k not in ("as_of", "context_digest")}
    out["thesis"] = record["thesis"].split(", ", 1)[1]
    return out


def _record(ledger: Ledger, pid: str, t: int) -> dict[str, Any] | None:
    try:
        value: dict[str, Any] = msgspec.to_builtins(ledger.record(pid, t)[0])
        return value
    except NotFound:
        return None


def assert_instants_are_the_changes(ledger: Ledger, pid: str, timeline: Timeline) -> None:
    """Every listed instant changes the record, and nothing changes it between two listed instants."""
    at = [i.at_us for i in timeline.instants]
    assert at == sorted(set(at)), "instants are distinct and in order"
    for n, t in enumerate(at):
        here = _content(_record(ledger, pid, t))
        before = _content(_record(ledger, pid, t - 1))
        assert here is not None
        assert here != before, f"instant {format_as_of(t)} lists {timeline.instants[n].changes}: no change"
        until = at[n + 1] - 1 if n + 1 < len(at) else MAX_US
        assert _content(_record(ledger, pid, until)) == here, (
            f"a change after {format_as_of(t)} is not listed"
        )


def test_the_sample_record(imported_ledger: Ledger) -> None:
    timeline, head = imported_ledger.records.timeline(FIX_ID)
    assert head == imported_ledger.head()
    lines = [i.line() for i in timeline.instants]
    assert lines == [
        "2026-08-07T16:39:03.985890Z  the record begins: 56 outbound references, 0 inbound; first snapshot v1"
        "  (116 events, seq 1–129)",
        "2026-08-08T06:31:55.242210Z  retraction_watch checked  (event 131)",
        "2026-08-08T06:32:00.761636Z  crossref checked  (event 132)",
    ]
    assert_instants_are_the_changes(imported_ledger, FIX_ID, timeline)
    lanes = {lane.key: lane for lane in timeline.lanes}
    assert [k for k in lanes] == [
        "snapshots",
        "citations",
        "resolutions",
        "inbound",
        "notices",
        "check:crossref",
        "check:retraction_watch",
    ]
    # the references were observed and resolved before the paper's first snapshot: marked where they
    # were observed, and shown by the record from the instant it begins
    begins = timeline.instants[0].at_us
    assert len(lanes["citations"].marks) == len(lanes["resolutions"].marks) == 56
    assert all(m.at_us < begins and m.shown_at == begins for m in lanes["citations"].marks)
    coverage = {s.name: s.points for s in lanes["resolutions"].series}
    assert {g: p[-1][1] for g, p in coverage.items()} == {
        "verified_exact": 1,
        "verified_fuzzy": 8,
        "unresolved": 47,
        "other": 0,
        "pending": 0,
    }


def test_one_event(fresh_ledger: Ledger) -> None:
    fresh_ledger.append([paper(P, ts(0))])
    timeline, _ = fresh_ledger.records.timeline(P)
    assert [i.line() for i in timeline.instants] == [
        f"{format_as_of(parse_ts(ts(0)))}  the record begins: 0 outbound references, 0 inbound; "
        "first snapshot v1  (event 1)"
    ]
    assert_instants_are_the_changes(fresh_ledger, P, timeline)


def test_a_paper_never_observed(fresh_ledger: Ledger) -> None:
    fresh_ledger.append([paper(P, ts(0))])
    with pytest.raises(NotFound, match=r"arXiv:2101.00002 has never been observed in this ledger"):
        fresh_ledger.records.timeline(Q)


def test_what_each_instant_says(fresh_ledger: Ledger) -> None:
    w = work("w-1", ts(1), title="Cited work")
    fresh_ledger.append(
        [
            paper(P, ts(0), title="First"),
            citation(oid_of(1), P, ts(1), 0, w),
            citation(oid_of(2), P, ts(1), 1, None),
            resolution(oid_of(1), ts(2), "verified_fuzzy", cited=w),
            resolution(oid_of(1), ts(3), "verified_exact", cited=w),
            check("crossref", ts(4), ["w-1"], [notice("w-1", "retraction")]),
            check("crossref", ts(5), ["w-1"], []),
            measurement(P, ts(6), 3),
            measurement(P, ts(7), 5),
            paper(P, ts(8), title="Second", version=2),
        ]
    )
    timeline, _ = fresh_ledger.records.timeline(P)
    assert [list(i.changes) for i in timeline.instants] == [
        ["the record begins: 0 outbound references, 0 inbound", "first snapshot v1"],
        ["2 references observed"],
        ["reference 0 resolved: verified fuzzy"],
        ["reference 0 re-resolved: verified fuzzy → verified exact"],
        ["crossref checked", "crossref reports a retraction of “Cited work”"],
        ["crossref checked", "crossref no longer lists the retraction of “Cited work”"],
        ["openalex cited_by_count 3"],
        ["openalex cited_by_count 5 (was 3)"],
        ["snapshot v2 (title changed)"],
    ]
    assert timeline.instants[4].lanes == ("check:crossref", "notices")
    notices = next(lane for lane in timeline.lanes if lane.key == "notices").marks
    assert [(m.at_us, m.strong) for m in notices] == [(parse_ts(ts(4)), True), (parse_ts(ts(5)), False)]
    measured = next(lane for lane in timeline.lanes if lane.key == "measure:openalex:cited_by_count")
    assert measured.series[0].points == ((parse_ts(ts(6)), 3), (parse_ts(ts(7)), 5))
    assert_instants_are_the_changes(fresh_ledger, P, timeline)


def test_beyond_the_outbound_cap(fresh_ledger: Ledger) -> None:
    events: list[ev.Event] = [paper(P, ts(0))]
    events += [citation(oid_of(i), P, ts(1), i) for i in range(101)]
    fresh_ledger.append(events)
    last = oid_of(100)  # reference 100: counted, not shown
    fresh_ledger.append([resolution(last, ts(2), "verified_exact"), citation(oid_of(101), P, ts(3), 101)])
    fresh_ledger.append([citation(oid_of(102), P, ts(4), 0)])  # shown first: reference 99 leaves the page
    fresh_ledger.append([resolution(oid_of(99), ts(5), "unresolved")])  # not shown any more
    timeline, _ = fresh_ledger.records.timeline(P)
    changes = [list(i.changes) for i in timeline.instants]
    assert changes[1:] == [["101 references observed"], ["reference 101 observed"], ["reference 0 observed"]]
    assert_instants_are_the_changes(fresh_ledger, P, timeline)


def test_inbound_and_the_papers_the_record_shows(fresh_ledger: Ledger) -> None:
    fresh_ledger.append(
        [
            paper(P, ts(0)),
            paper(Q, ts(1)),
            citation(oid_of(1), P, ts(2), 0),
            resolution(oid_of(1), ts(3), cited_arxiv=Q),  # P cites Q
            paper(Q, ts(4), version=2),  # the cited paper's block moves
            citation(oid_of(2), Q, ts(5), 0),
            resolution(oid_of(2), ts(6), cited_arxiv=P),  # Q cites P: inbound
            paper(Q, ts(7), version=3),  # and now the citing paper's block moves too
            resolution(oid_of(2), ts(8), "unresolved"),  # no longer inbound
        ]
    )
    timeline, _ = fresh_ledger.records.timeline(P)
    assert [list(i.changes) for i in timeline.instants][2:] == [
        ["reference 0 resolved: verified exact"],
        ["cited paper arXiv:2101.00002 snapshot v2"],
        ["inbound +1 (now 1)"],
        ["cited paper arXiv:2101.00002 snapshot v3", "citing paper arXiv:2101.00002 snapshot v3"],
        ["inbound −1 (now 0)"],
    ]
    assert timeline.instants[-1].seqs == (9,)  # the event that ended it: the resolution away from P
    assert timeline.instants[-3].seqs == (6, 7)  # the citation and resolution of the state it began
    assert not timeline.inbound_by_day
    assert_instants_are_the_changes(fresh_ledger, P, timeline)


def test_many_inbound_are_counted_per_day(fresh_ledger: Ledger, monkeypatch: pytest.MonkeyPatch) -> None:
    day = datetime(2026, 1, 1, tzinfo=UTC)

    def at(days: int, hours: int) -> str:
        return (day + timedelta(days=days, hours=hours)).strftime("%Y-%m-%dT%H:%M:%SZ")

    events: list[ev.Event] = [paper(P, at(0, 0))]
    for n in range(6):  # two citations a day, over three days
        citing = f"2102.{n:05d}"
        events += [
            citation(oid_of(n), citing, at(n // 2, 1 + n), 0),
            resolution(oid_of(n), at(n // 2, 1 + n), cited_arxiv=P),
        ]
    fresh_ledger.append(events)
    monkeypatch.setattr(tl, "EXACT_INBOUND", 3)
    timeline, _ = fresh_ledger.records.timeline(P)
    assert timeline.inbound_by_day
    assert [list(i.changes) for i in timeline.instants][1:] == [
        ["the first of 2 inbound changes on 2026-01-01"],
        ["inbound +2 −0 on 2026-01-01 (now 2)"],
        ["the first of 2 inbound changes on 2026-01-02"],
        ["inbound +2 −0 on 2026-01-02 (now 4)"],
        ["the first of 2 inbound changes on 2026-01-03"],
        ["inbound +2 −0 on 2026-01-03 (now 6)"],
    ]
    # coarser, never wrong: each instant listed is still one where the record changed
    for n, instant in enumerate(timeline.instants):
        assert _content(_record(fresh_ledger, P, instant.at_us)) != _content(
            _record(fresh_ledger, P, instant.at_us - 1)
        ), n
    monkeypatch.setattr(tl, "EXACT_INBOUND", 2000)
    exact, _ = fresh_ledger.records.timeline(P)
    assert len(exact.instants) == 7 and not exact.inbound_by_day
    assert_instants_are_the_changes(fresh_ledger, P, exact)


def test_the_memory_reader_agrees(imported_ledger: Ledger) -> None:
    log = imported_ledger.store.read_log()
    assert build_timeline(MemoryReader(log, MAX_US), FIX_ID) == imported_ledger.records.timeline(FIX_ID)[0]


_SETTINGS = settings(
    max_examples=examples(25),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@_SETTINGS
@given(events=ledgers(), data=st.data())
def test_the_instants_are_exactly_where_the_record_changes(
    scratch: Scratch,  # noqa: F811
    events: list[ev.Event],
    data: Any,
) -> None:
    with scratch.example() as new:
        ledger = new("timeline.db")
        ledger.append(events)
        observed = [p for p in PAPERS if ledger.store.paper_history(p)]
        if not observed:
            with pytest.raises(NotFound):
                ledger.records.timeline(PAPERS[0])
            return
        pid = data.draw(st.sampled_from(observed))
        timeline, _ = ledger.records.timeline(pid)
        assert_instants_are_the_changes(ledger, pid, timeline)
        log = ledger.store.read_log()
        assert build_timeline(MemoryReader(log, MAX_US), pid) == timeline


@given(st.integers(parse_ts("0001-01-01T00:00:00Z"), MAX_US))
def test_as_of_text_is_the_records_spelling(us: int) -> None:
    assert as_of_text(us) == format_as_of(us)


@pytest.mark.parametrize(
    ("seqs", "text"),
    [
        ([], "no event of its own"),
        ([7], "event 7"),
        ([3, 4, 9], "events 3, 4, 9"),
        ([1, 2, 3, 56], "4 events, seq 1–56"),
    ],
)
def test_events_text(seqs: list[int], text: str) -> None:
    assert events_text(seqs) == text
