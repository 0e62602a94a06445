"""The works-index keys and the standing checks' per-work rows are projections: the append writes
neither, the projector writes both, and every reader of them answers the same whatever the projector's
lag, folding the events past each one's position (both backends)."""

from __future__ import annotations

from typing import Any

import pytest

from ledger.model import events as ev
from ledger.model.doi import work_keys
from ledger.model.instants import parse_ts
from ledger.storage.derived.keys import CHECK_WORKS, WORK_KEYS, work_index_key
from ledger.storage.projector import (
    CHECK_WORKS_PROJECTION,
    READ_BY_RECORDS,
    WORK_KEYS_PROJECTION,
    catch_up,
)
from ledger.storage.verify import verify_store
from service.ledger import Ledger
from tests.conftest import NewDb
from tests.factories import check, citation, notice, oid_of, paper, resolution, ts
from tests.old_layout import build_old_ledger, version_before
from tests.raw import edit, one, rows

P, Q, C = "2101.00001", "2101.00002", "2201.00001"


def _work(work_id: str | None, doi: str | None = None, arxiv: str | None = None) -> ev.CitedWork:
    return ev.CitedWork(arxiv, doi, "crossref", None, ts(0), "A work", None, work_id, 2024)


W1 = _work("w-1", doi="https://doi.org/10.5555/A.1")
W2 = _work("w-2", arxiv="2101.00002v3")
W3 = _work("w-3", doi="10.5555/b.2", arxiv=P)
NO_ID = _work(None, doi="10.5555/c.3")  # no work_id: no keys
WORKS = ["w-1", "w-2", "w-3", "w-9"]


def _history() -> list[list[ev.Event]]:
    """Citations and resolutions of keyed works, then standing checks (per work and of every work,
    some listing notices, one observed before the others), in several appends."""
    return [
        [paper(P, ts(0)), paper(Q, ts(0, 1)), paper(C, ts(0, 2))],
        [citation(oid_of(n), C, ts(1, n), n, (W1, W2, W3, NO_ID)[n]) for n in range(4)],
        [check("crossref", ts(2), ["w-1", "w-2"], [notice("w-1")])],
        [
            resolution(oid_of(0), ts(3), cited_arxiv=P, cited=W1),
            resolution(oid_of(1), ts(3, 1), cited_arxiv=Q, cited=W2),
            resolution(oid_of(2), ts(3, 2), cited_arxiv=P, cited=W3),
            resolution(oid_of(3), ts(3, 3), "unresolved", cited=NO_ID),
        ],
        [check("crossref", ts(5), ["w-1", "w-2", "w-3"], [notice("w-1"), notice("w-3", "correction")])],
        [check("retraction_watch", ts(6), None, [notice("w-2")])],
        [resolution(oid_of(2), ts(7), cited_arxiv=Q, cited=W1)],
        [check("crossref", ts(8), ["w-1"], [])],
        [check("retraction_watch", ts(4), ["w-3"], [notice("w-3", "expression_of_concern")])],
        [citation(oid_of(9), P, ts(9), 0, W3)],
    ]


class _Clock:
    """The same history gets the same recorded_us in every ledger of a test."""

    def __init__(self) -> None:
        self.now = 1_796_000_000_000_000

    def now_us(self) -> int:
        self.now += 1_000
        return self.now


def _ledger(db: str) -> Ledger:
    # a lag no append reaches: the projector runs only when the test says
    ledger = Ledger(db, projector_max_lag=1_000_000, clock=_Clock())
    for batch in _history():
        ledger.append(batch)
    return ledger


_AS_OF = [ts(1, 2), ts(2), ts(3, 1), ts(4, 5), ts(5), ts(6, 1), ts(7), ts(8), ts(20)]


def _keys(w: ev.CitedWork) -> list[str]:
    return sorted(work_index_key(k) for k in work_keys(w.doi, w.arxiv_id, w.pith_arxiv_id))


def _answers(ledger: Ledger) -> list[Any]:
    """What every reader of the two projections answers, at each instant and known-by the test uses."""
    store = ledger.store
    recorded = sorted({parse_ts(e.recorded_at) for e in store.read_log()})
    out: list[Any] = []
    for at in map(parse_ts, _AS_OF):
        for known in (None, *recorded[1::2]):
            for pid in (P, Q, C):
                out.append(ledger.record_bytes(pid, at, known)[0])
            with store.snapshot(at, known) as reader:
                works = [(w, since) for w in WORKS for since in (parse_ts(ts(0)), parse_ts(ts(4, 5)))]
                out.append(reader.work_checks(works))
                out.append(reader.notice_rows(WORKS))
                out.append(reader.notice_rows(["w-2"]))
                out.append(reader.check_history(WORKS))
                out.append(reader.check_history(["w-3"]))
        for keys in (_keys(W1), _keys(W2), _keys(W3), ["w:10.5555/nothing"], _keys(W1) + _keys(W2)):
            out.append(store.works.work_facts(keys, at))
        out.append(store.works.work_observations(at))
    out.append(store.works.current_checks(WORKS))
    return out


def _positions(ledger: Ledger) -> tuple[int, int]:
    spans = ledger.store.spans
    return spans.projection_position(WORK_KEYS), spans.projection_position(CHECK_WORKS)


def test_the_append_writes_neither_and_the_projector_writes_both(new_db: NewDb) -> None:
    ledger = _ledger(new_db())
    try:
        db = ledger.url
        head = ledger.head().seq
        # the append's rows: each event's id key, each citation's and resolution's observation key
        observed = one(
            db, "SELECT count(*) FROM events WHERE type IN ('citation.observed', 'resolution.observed')"
        )
        assert one(db, "SELECT count(*) FROM event_keys_all") == head + observed
        assert one(db, "SELECT count(*) FROM event_keys_all WHERE key LIKE 'w:%'") == 0
        assert one(db, "SELECT count(*) FROM check_works_all") == 0
        assert _positions(ledger) == (0, 0)
        assert ledger.ops.project(READ_BY_RECORDS) == head
        assert _positions(ledger) == (head, head)
        keyed = rows(db, "SELECT DISTINCT key FROM event_keys_all WHERE key LIKE 'w:%' ORDER BY key")
        assert [k for (k,) in keyed] == sorted(set(_keys(W1) + _keys(W2) + _keys(W3)))
        # a row per covered work of each check, one '*' row for the check of every work
        assert one(db, "SELECT count(*) FROM check_works_all") == 2 + 3 + 1 + 1 + 1
        assert rows(db, "SELECT count(*) FROM check_works_all WHERE work_id = '*'") == [(1,)]
        assert verify_store(ledger.store).ok
    finally:
        ledger.close()


@pytest.mark.parametrize(
    ("work_keys_at", "check_works_at"),
    [(0, 0), (4, 4), (8, 8), (12, 3), (3, 12), (14, 16), (None, 0), (0, None)],
)
def test_every_reader_answers_the_same_whatever_the_projectors_lag(
    new_db: NewDb, work_keys_at: int | None, check_works_at: int | None
) -> None:
    """With either projection anywhere behind the head (None: at it), the records, the checks of a
    work, the notices, the alert pages' history and the works lookups are those read once both are at
    the head: the readers fold in the events past each position."""
    ledger = _ledger(new_db())
    try:
        head = ledger.head().seq
        at = tuple(head if x is None else x for x in (work_keys_at, check_works_at))
        catch_up(ledger.store, [WORK_KEYS_PROJECTION], upto=at[0])
        catch_up(ledger.store, [CHECK_WORKS_PROJECTION], upto=at[1])
        assert _positions(ledger) == at
        behind = _answers(ledger)
        assert verify_store(ledger.store).ok  # each projection checked up to its own position
        ledger.ops.project(READ_BY_RECORDS)
        assert _positions(ledger) == (head, head)
        assert behind == _answers(ledger)
    finally:
        ledger.close()


def test_the_notices_a_lagging_read_folds_in_are_there(new_db: NewDb) -> None:
    """The fold is not vacuous: with nothing projected the latest checks and their notices are read,
    from the events alone."""
    ledger = _ledger(new_db())
    try:
        assert _positions(ledger) == (0, 0)
        with ledger.store.snapshot(parse_ts(ts(20)), None) as reader:
            got = {(r.work_id, r.source): (r.seq, r.notices) for r in reader.work_checks([("w-3", 0)])}
        assert sorted(got) == [("w-3", "crossref"), ("w-3", "retraction_watch")]
        assert [n["kind"] for n in got["w-3", "crossref"][1]] == ["correction"]
        facts = ledger.store.works.work_facts(_keys(W3), parse_ts(ts(20)))
        assert {f.data.observation_id for f in facts} == {oid_of(2), oid_of(9)}
    finally:
        ledger.close()


def test_verify_checks_each_projection_up_to_its_position(new_db: NewDb) -> None:
    """A works-index key for an event past the projection's position is not one the events give (the
    projector would write it again); a missing one before it is a gap: both are named."""
    ledger = _ledger(new_db())
    try:
        catch_up(ledger.store, READ_BY_RECORDS, upto=8)
        assert verify_store(ledger.store).ok
        late = ledger.head().seq  # the last citation cites W3: its keys are the projector's to write
        edit(
            ledger.url, "INSERT INTO event_keys_recent (key, seq) VALUES (?, ?)", params=(_keys(W3)[0], late)
        )
        report = verify_store(ledger.store)
        assert not report.ok and report.first_bad_seq == late
        assert "derived index rows" in (report.reason or "")
    finally:
        ledger.close()
    ledger = _ledger(new_db("other.db"))
    try:
        ledger.ops.project(READ_BY_RECORDS)
        levels = ("check_works", "check_works_deep", "check_works_middle", "check_works_recent")
        edit(ledger.url, *(f"DELETE FROM {t} WHERE work_id = '*'" for t in levels))
        report = verify_store(ledger.store)
        assert not report.ok and report.first_bad_seq == 14  # the check of every work
    finally:
        ledger.close()


def test_a_ledger_of_the_layout_before_counts_its_keys_and_check_rows_as_projected(new_db: NewDb) -> None:
    """Its appends wrote the `w:` keys and the check rows: the upgrade sets both positions to its head,
    the rows stay as they were, and projecting again adds none."""
    source = _ledger(new_db("source.db"))
    try:
        source.ops.project(READ_BY_RECORDS)
        old = new_db("old.db")
        build_old_ledger(old, version_before(old, "work_projections"), source)
        keys = "SELECT key, seq FROM event_keys_all ORDER BY key, seq"
        checks = (
            "SELECT work_id, source, observed_us, seq, recorded_us, notices FROM check_works_all "
            "ORDER BY 1, 2, 3, 4"
        )
        held = rows(old, keys), rows(old, checks)
        assert held == (rows(source.url, keys), rows(source.url, checks))
        upgraded = Ledger(old)
        try:
            head = upgraded.head().seq
            assert _positions(upgraded) == (head, head) and head == source.head().seq
            upgraded.ops.project(READ_BY_RECORDS)
            assert (rows(old, keys), rows(old, checks)) == held
            assert verify_store(upgraded.store).ok
            assert _answers(upgraded) == _answers(source)
        finally:
            upgraded.close()
    finally:
        source.close()
