"""A watch on a collection (service/alerts/alerts.py): alerts for the works its members cite, the
membership taken at the time each notice is raised."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ledger.model.errors import InvalidEvent, NotFound
from ledger.model.events import Event
from service.alerts import alerts as al
from service.alerts.watch_spec import parse_watch
from service.alerts.watches import watch_json
from service.collections import CollectionLimits, change_data
from service.ledger import Ledger
from tests.conftest import NewDb
from tests.factories import check, citation, notice, oid_of, paper, ts, work

P1, P2, P3 = "2101.00001", "2101.00002", "2101.00003"
LIMITS = CollectionLimits()


def _alerts(ledger: Ledger, watch_id: str) -> list[dict[str, Any]]:
    return [json.loads(a.body) for a in ledger.store.alerts.alerts(watch_id, 0, 1000)]


def _seen(ledger: Ledger, watch_id: str) -> list[tuple[str, str]]:
    return sorted((a["work"]["work_id"], a["notice"]["kind"]) for a in _alerts(ledger, watch_id))


@pytest.fixture
def papers(new_db: NewDb) -> Ledger:
    """Three papers, each citing its own work (w-1, w-2, w-3), and a collection holding P1."""
    ledger = Ledger(new_db())
    events: list[Event] = []
    for i, p in enumerate((P1, P2, P3), 1):
        events += [paper(p, ts(i)), citation(oid_of(i), p, ts(i), 0, work(f"w-{i}", ts(i)))]
    ledger.append(events)
    ledger.intake.change_collection(change_data("office", [P1], [], LIMITS))
    return ledger


def _change(ledger: Ledger, add: list[str], remove: list[str]) -> None:
    ledger.intake.change_collection(change_data("office", add, remove, LIMITS))


def test_a_collection_watch_is_told_of_notices_on_works_its_members_cite(papers: Ledger) -> None:
    watch, covered = al.add_watch(papers.store, papers.clock, parse_watch({"collection": "office"}))
    assert covered == ["w-1"] and watch.kind == "collection" and watch.target == "office"
    papers.append([check("crossref", ts(10), None, [notice("w-1"), notice("w-2", "correction")])])
    got = _alerts(papers, watch.id)
    # w-2: not a member's
    assert [(a["work"]["work_id"], a["notice"]["kind"]) for a in got] == [("w-1", "retraction")]
    assert got[0]["watch"] == {"id": watch.id, "kind": "collection", "target": "office"}
    assert got[0]["citing"][0]["arxiv_id"] == P1
    assert got[0]["links"]["record"].startswith(f"/paper/{P1}/citation-record?")
    assert watch_json(watch)["collection"] == "office"


def test_a_paper_joining_brings_the_notices_its_works_hold_and_one_leaving_takes_them(papers: Ledger) -> None:
    watch, _ = al.add_watch(papers.store, papers.clock, parse_watch({"collection": "office"}))
    papers.append([check("crossref", ts(10), None, [notice("w-2", "correction")])])
    assert _seen(papers, watch.id) == []
    _change(papers, [P2], [])
    assert _seen(papers, watch.id) == [("w-2", "correction")]  # held already: raised as P2 joins
    _change(papers, [], [P1])
    papers.append([check("crossref", ts(11), None, [notice("w-1"), notice("w-2", "correction")])])
    assert _seen(papers, watch.id) == [("w-2", "correction")]  # P1 left before w-1's notice came
    covered = {w for w, _ in papers.store.alerts.covered(watch.id)}
    assert covered == {"w-2"}
    # a paper of the collection cites a new work later: it is covered as a paper watch's would be
    papers.append([citation(oid_of(9), P2, ts(12), 1, work("w-9", ts(12)))])
    papers.append([check("retraction_watch", ts(13), ["w-9"], [notice("w-9")])])
    assert ("w-9", "retraction") in _seen(papers, watch.id)


def test_a_change_and_a_notice_in_one_page_are_raised_in_log_order(papers: Ledger) -> None:
    watch, _ = al.add_watch(papers.store, papers.clock, parse_watch({"collection": "office"}))
    quiet = Ledger(papers.url, raise_alerts=False)  # appends whose alerts are raised later, in one pass
    quiet.append([check("crossref", ts(10), None, [notice("w-3", "correction")])])  # P3 not a member yet
    quiet.intake.change_collection(change_data("office", [P3], [P1], LIMITS))
    quiet.append([check("crossref", ts(11), None, [notice("w-1"), notice("w-3", "correction")])])
    al.raise_new(papers.store, papers.clock)
    # w-3's notice was held when P3 joined (raised then); w-1's came after P1 left (none)
    assert _seen(papers, watch.id) == [("w-3", "correction")]
    quiet.close()


def test_a_watch_on_a_collection_never_made_or_badly_named_is_refused(papers: Ledger) -> None:
    with pytest.raises(NotFound, match="no collection 'nobody'"):
        al.add_watch(papers.store, papers.clock, parse_watch({"collection": "nobody"}))
    assert papers.store.alerts.watches() == []
    with pytest.raises(InvalidEvent, match="bad collection name") as bad:
        parse_watch({"collection": "a b"})
    assert bad.value.where == "collection"
    with pytest.raises(InvalidEvent, match="exactly one of"):
        parse_watch({"collection": "office", "arxiv_id": P1})
    with pytest.raises(InvalidEvent, match="a string") as typed:
        parse_watch({"collection": 3})
    assert typed.value.where == "collection"


def test_a_watch_made_while_the_raiser_lags_takes_the_changes_it_has_not_raised_yet(papers: Ledger) -> None:
    other, _ = al.add_watch(
        papers.store, papers.clock, parse_watch({"arxiv_id": P3})
    )  # the raiser runs for it
    quiet = Ledger(papers.url, raise_alerts=False)
    quiet.append([check("crossref", ts(10), None, [notice("w-2", "correction")])])
    quiet.intake.change_collection(change_data("later", [P2], [], LIMITS))  # made after the raiser's cursor
    watch, covered = al.add_watch(papers.store, papers.clock, parse_watch({"collection": "later"}))
    assert covered == []  # its member joins when the raiser reaches the change
    al.raise_new(papers.store, papers.clock)
    assert _seen(papers, watch.id) == [("w-2", "correction")]
    assert _seen(papers, other.id) == []
    quiet.close()
