"""The screen says what each paper's record says: every verified reference whose cited work carries a
standing notice as of T (known at K), and nothing else; its pages and its changes add up to it."""

from __future__ import annotations

import uuid
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger.model import events as ev
from ledger.model.errors import InvalidEvent, NotFound
from ledger.model.instants import parse_ts
from service.ledger import Ledger
from service.screen import Query, check_kinds, check_limit, page_token, read_page, screen, screen_changes
from tests.conftest import examples
from tests.factories import (
    PAPERS,
    SOURCES,
    WORKS,
    check,
    citation,
    ledgers,
    notice,
    oid_of,
    paper,
    resolution,
    ts,
    work,
)

VERIFIED = ("verified_exact", "verified_fuzzy")


def _from_records(ledger: Ledger, t: int, k: int | None, kinds: Any = None, exact: bool = False) -> list[Any]:
    """(citing, reference index, observation, notice) of every flagged reference, read from the records."""
    wanted = ("verified_exact",) if exact else VERIFIED
    out = []
    for pid in sorted(PAPERS):
        try:
            record, _, _ = ledger.record(pid, t, k)
        except NotFound:
            continue
        for o in record.outbound:
            if o.resolution.status not in wanted:
                continue
            for n in o.standing_notice.events:
                if kinds is None or n.kind in kinds:
                    out.append((pid, o.citation.reference_index, o.observation_id, msgspec.to_builtins(n)))
    return out


def _from_screen(ledger: Ledger, query: Query, limit: int = 1000) -> list[Any]:
    out, token = [], None
    while True:
        page = screen(ledger.store, query, token, limit)
        out += [
            (i.flag.citing, i.flag.reference_index, i.flag.observation_id, msgspec.to_builtins(i.flag.notice))
            for i in page.items
        ]
        if page.next_page is None:
            return out
        token = page.next_page


@st.composite
def flagged_ledgers(draw: Any) -> list[ev.Event]:
    """Ledgers where flags are common: works cited early, verified more often than not, checked later
    (a source's checks naming the works or all of them, with notices or none), re-resolved now and then."""
    steps = iter(draw(st.permutations(range(10, 200))))
    events: list[ev.Event] = [
        paper(pid, ts(draw(st.integers(0, 60))), title=f"Paper {pid}") for pid in PAPERS[:3]
    ]
    for n in range(draw(st.integers(1, 10))):
        oid, citing = oid_of(n), draw(st.sampled_from(PAPERS))
        w = work(draw(st.sampled_from([*WORKS, None])), ts(draw(st.integers(0, 9))))
        first = next(steps)
        events.append(citation(oid, citing, ts(first), draw(st.integers(0, 3)), w))
        for _ in range(draw(st.integers(0, 3))):
            status = draw(st.sampled_from([*VERIFIED, *VERIFIED, "unresolved", "metadata_mismatch"]))
            cited = draw(st.sampled_from([w, None, work(draw(st.sampled_from(WORKS)), ts(5))]))
            events.append(resolution(oid, ts(first + 1 + next(steps)), status, cited=cited))
    for source in SOURCES:
        for _ in range(draw(st.integers(0, 3))):
            covered = draw(st.one_of(st.none(), st.lists(st.sampled_from(WORKS), unique=True, min_size=1)))
            pool = WORKS if covered is None else covered
            kinds = st.sampled_from(["retraction", "correction", "expression_of_concern"])
            notices = draw(
                st.lists(
                    st.builds(notice, st.sampled_from(pool), kinds),
                    unique_by=lambda x: (x.work_id, x.kind),
                    max_size=3,
                )
            )
            events.append(
                check(source, ts(next(steps)), None if covered is None else sorted(covered), notices)
            )
    return events


def _instants(events: list[ev.Event]) -> list[int]:
    us = sorted({parse_ts(e.observed_at) for e in events})
    return [us[0] - 1, *us[:: max(1, len(us) // 6)], us[-1]]


@settings(
    max_examples=examples(15), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(events=st.one_of(ledgers(), flagged_ledgers()), cut=st.integers(0, 100), data=st.data())
def test_screen_is_what_the_records_say(new_db: Any, events: list[ev.Event], cut: int, data: Any) -> None:
    """Over random ledgers appended in two batches, at several T and at both K, with and without the
    filters: the screen's flags, page after page, are the records' verified references' notices."""
    ledger = Ledger(new_db(f"{uuid.uuid4().hex}.db"))
    try:
        split = len(events) * cut // 100
        ledger.append(events[:split])
        k1 = ledger.head().seq and ledger.store.verifying.recorded_us_at(ledger.head().seq)
        ledger.append(events[split:])
        kinds = data.draw(st.sampled_from([None, frozenset({"retraction"}), frozenset({"correction"})]))
        exact = data.draw(st.booleans())
        limit = data.draw(st.sampled_from([1, 2, 1000]))
        for t in _instants(events):
            for k in (None, k1 or None):
                want = _from_records(ledger, t, k, kinds, exact)
                got = _from_screen(ledger, Query(None, t, k, kinds, exact), limit)
                assert got == want
                if want:
                    some = frozenset({want[0][0]})
                    only = [w for w in want if w[0] in some]
                    assert _from_screen(ledger, Query(some, t, k, kinds, exact), limit) == only
    finally:
        ledger.close()


@settings(
    max_examples=examples(10), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(events=st.one_of(ledgers(), flagged_ledgers()), data=st.data())
def test_changes_are_the_difference_of_two_screens(new_db: Any, events: list[ev.Event], data: Any) -> None:
    """What became flagged between two instants is the later screen less the earlier one; what was
    cleared, the earlier less the later; and each change names events of the later state."""
    ledger = Ledger(new_db(f"{uuid.uuid4().hex}.db"))
    try:
        ledger.append(events)
        instants = _instants(events)
        a = data.draw(st.sampled_from(instants))
        b = data.draw(st.sampled_from([t for t in instants if t >= a]))

        def keyed(rows: list[Any]) -> set[Any]:
            return {(c, r, o, msgspec.json.encode({k: v for k, v in n.items() if k != "observed_at"}))
                    for c, r, o, n in rows}  # fmt: skip

        before, after = keyed(_from_records(ledger, a, None)), keyed(_from_records(ledger, b, None))
        got: dict[str, set[Any]] = {"flagged": set(), "cleared": set()}
        token = None
        while True:
            page = screen_changes(ledger.store, Query(None, b), a, token, 3)
            for i in page.items:
                n = msgspec.to_builtins(i.flag.notice)
                got[str(i.change)].add(
                    (*i.key[:3], msgspec.json.encode({k: v for k, v in n.items() if k != "observed_at"}))
                )
                assert i.events or i.change == "cleared"
            if page.next_page is None:
                break
            token = page.next_page
        assert got["flagged"] == after - before
        assert got["cleared"] == before - after
    finally:
        ledger.close()


def test_a_screen_shows_the_notice_when_it_was_learned_and_who_resolved(fresh_ledger: Ledger) -> None:
    """One retracted work cited by two papers: each reference, its resolver, the notice and the seqs;
    known at an instant before the check was recorded, nothing is flagged."""
    w = work("w-1", ts(1), title="A retracted study")
    fresh_ledger.append([
        paper("2101.00001", ts(0), title="Citing one"),
        paper("2101.00002", ts(0), title="Citing two"),
        citation("00000000-0000-4000-8000-000000000001", "2101.00001", ts(1), 3, w),
        resolution("00000000-0000-4000-8000-000000000001", ts(2), "verified_fuzzy", cited=w),
        citation("00000000-0000-4000-8000-000000000002", "2101.00002", ts(1), 0, w),
        resolution("00000000-0000-4000-8000-000000000002", ts(2), "unresolved"),
    ])  # fmt: skip
    before = fresh_ledger.head()
    recorded_before = fresh_ledger.store.verifying.recorded_us_at(before.seq)
    fresh_ledger.append([check("retraction_watch", ts(5), ["w-1"], [notice("w-1")])])
    page = screen(fresh_ledger.store, Query(None, parse_ts(ts(6))), None, 10)
    assert [(i.flag.citing, i.flag.reference_index, i.flag.status) for i in page.items] == [
        ("2101.00001", 3, "verified_fuzzy")
    ]
    item = page.items[0]
    assert item.flag.resolver_source == "local_arxiv"
    assert item.flag.notice.kind == "retraction" and item.flag.check_seq == before.seq + 1
    assert page.titles == {"2101.00001": "Citing one"}
    assert page.learned[("w-1", "retraction_watch", next(iter(page.learned))[2])][1] == before.seq + 1
    assert page.head.seq == before.seq + 1
    known_before = screen(fresh_ledger.store, Query(None, parse_ts(ts(6)), recorded_before), None, 10)
    assert known_before.items == [] and known_before.head.seq == before.seq + 1
    # before the check's observed instant, nothing either
    assert screen(fresh_ledger.store, Query(None, parse_ts(ts(4))), None, 10).items == []


def test_a_later_check_without_the_notice_clears_it(fresh_ledger: Ledger) -> None:
    """A source's later check that covers the work and lists no notice clears it; the change names it."""
    w = work("w-1", ts(1))
    oid = "00000000-0000-4000-8000-000000000001"
    fresh_ledger.append([
        paper("2101.00001", ts(0)),
        citation(oid, "2101.00001", ts(1), 0, w),
        resolution(oid, ts(2), cited=w),
        check("crossref", ts(3), None, [notice("w-1", "correction")]),
        check("crossref", ts(5), ["w-1"], []),
    ])  # fmt: skip
    assert len(screen(fresh_ledger.store, Query(None, parse_ts(ts(4))), None, 10).items) == 1
    assert screen(fresh_ledger.store, Query(None, parse_ts(ts(6))), None, 10).items == []
    page = screen_changes(fresh_ledger.store, Query(None, parse_ts(ts(6))), parse_ts(ts(4)), None, 10)
    assert [(i.change, i.events) for i in page.items] == [("cleared", (5,))]
    page = screen_changes(fresh_ledger.store, Query(None, parse_ts(ts(4))), parse_ts(ts(2)), None, 10)
    assert [(i.change, i.events) for i in page.items] == [("flagged", (4,))]


@pytest.mark.parametrize(
    ("token", "reason"),
    [("!!", "not a page token"), (page_token(("a", 1, "o", 0))[:-2], "not a page token"),
     ("W10", "not a page token"), ("x" * 3000, "at most 2048")],
)  # fmt: skip
def test_a_bad_page_token_is_refused_naming_page(token: str, reason: str) -> None:
    with pytest.raises(InvalidEvent, match=reason) as e:
        read_page(token)
    assert e.value.where == "page"


def test_page_tokens_round_trip() -> None:
    key = ("hep-th/9901001", 12, "00000000-0000-4000-8000-000000000001", 2)
    assert read_page(page_token(key)) == key


def test_kinds_and_limits_are_checked() -> None:
    assert check_kinds(["retraction"]) == frozenset({"retraction"})
    assert check_kinds([]) is None
    with pytest.raises(InvalidEvent, match="'retracted' is no notice kind") as e:
        check_kinds(["retracted"])
    assert e.value.where == "kind"
    assert check_limit(None, 500) == 100
    assert check_limit(None, 20) == 20
    with pytest.raises(InvalidEvent, match="LEDGER_SCREEN_PAGE_MAX"):
        check_limit(501, 500)
    with pytest.raises(InvalidEvent, match="not within"):
        check_limit(0, 500)


def test_from_after_to_is_refused_naming_from(fresh_ledger: Ledger) -> None:
    with pytest.raises(InvalidEvent, match="is after to") as e:
        screen_changes(fresh_ledger.store, Query(None, parse_ts(ts(1))), parse_ts(ts(2)), None, 10)
    assert e.value.where == "from"


@settings(max_examples=examples(200), deadline=None)
@given(token=st.one_of(st.text(max_size=60), st.binary(max_size=40).map(lambda b: page_token_of_bytes(b))))
def test_any_page_token_is_a_key_or_refused_naming_page(token: str) -> None:
    """Whatever a client sends as `page`, it reads as a key that names where a page ended, or is
    refused naming `page`; nothing else escapes."""
    try:
        key = read_page(token)
    except InvalidEvent as e:
        assert e.where == "page"
        return
    assert key is None or read_page(page_token(key)) == key


def page_token_of_bytes(raw: bytes) -> str:
    """Bytes spelled as a token is (URL-safe base64 without padding): JSON or not."""
    import base64

    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


_PRINTABLE = st.text(st.characters(whitelist_categories=("L", "N", "P")), max_size=40)


@given(key=st.tuples(_PRINTABLE, st.integers(0, 2**53), _PRINTABLE, st.integers(0, 100)))
def test_every_key_round_trips_through_its_token(key: tuple[str, int, str, int]) -> None:
    assert read_page(page_token(key)) == key


@pytest.mark.parametrize("text", ["\x00", "\ud800", "a" * 201])
def test_a_token_naming_what_sql_cannot_hold_is_refused(text: str) -> None:
    import base64
    import json as json_

    raw = json_.dumps([text, 0, "o", 0]).encode()
    with pytest.raises(InvalidEvent, match="not a page token"):
        read_page(base64.urlsafe_b64encode(raw).decode())
