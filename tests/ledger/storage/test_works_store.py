"""The works and papers a source file names, looked up in the works index (ledger/works_store.py):
exactly what the full scan of every observation (works_known, papers_known) matches, as of any T."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.model.doi import arxiv_key, doi_key, work_keys
from ledger.model.events import CitedWork, Event
from ledger.model.facts import Fact
from ledger.model.instants import parse_ts
from ledger.storage import works_store
from ledger.storage.derived.keys import LONG_KEY
from ledger.storage.interface import Store
from ledger.storage.works_store import (
    checkable_works,
    papers_known,
    papers_matching,
    works_known,
    works_matching,
)
from service.ledger import Ledger
from tests.conftest import NewDb, examples
from tests.factories import PAPERS, citation, ledgers, oid_of, paper, resolution, ts
from tests.projections.test_record import _SETTINGS, Scratch, scratch  # noqa: F401 - test_record's fixture, shared
from tests.service.sources.test_sources_support import CITING, sample_events

LONG_DOI = "10.5555/" + "x" * LONG_KEY
OLD_STYLE = "math.AG/0601001"  # an arXiv id whose key loses the case of its subject class


def _work(
    work_id: str | None, *, doi: str | None = None, arxiv: str | None = None, pith: str | None = None
) -> CitedWork:
    return CitedWork(arxiv, doi, "crossref", pith, ts(0), "A work", None, work_id, 2020)


def rebound_events() -> list[Event]:
    """Observations whose current work changes over time: re-resolved elsewhere, to nothing, to a work
    with no work_id; a resolution observed before its citation; two citations at one instant."""
    events: list[Event] = [paper(CITING, ts(0)), paper(OLD_STYLE, ts(3), category=None)]

    def cite(n: int, at: int, w: CitedWork | None) -> None:
        events.append(citation(oid_of(n), CITING, ts(at), n, w))

    def resolve(n: int, at: int, w: CitedWork | None) -> None:
        events.append(resolution(oid_of(n), ts(at), cited=w))

    cite(0, 1, _work("w-a", doi="10.5555/A"))
    resolve(0, 3, _work("w-b", doi="10.5555/B"))  # re-bound elsewhere at 3
    cite(1, 1, _work("w-c", doi="https://doi.org/10.5555/C"))
    resolve(1, 3, None)  # resolved to nothing: the citation's work stays
    cite(2, 1, _work("w-d", doi="10.5555/D"))
    resolve(2, 3, _work(None, doi="10.5555/D"))  # the same DOI, but no work_id: no longer known
    cite(3, 1, _work("w-e", doi="10.5555/E"))
    resolve(3, 2, _work("w-f", arxiv="2310.04610v2"))
    resolve(3, 4, None)  # the latest resolution has no work: back to the citation's
    cite(4, 5, _work("w-g", doi="10.5555/G"))
    resolve(4, 2, _work("w-h", doi="10.5555/H"))  # observed before its citation: nothing until 5
    cite(5, 1, _work("w-i", doi="10.5555/I"))
    cite(5, 1, _work("w-j", doi="10.5555/J"))  # same instant, later seq: this one is current
    cite(6, 1, _work("w-long", doi=LONG_DOI))
    cite(7, 1, _work("w-twin", doi="10.5555/TWIN"))
    cite(8, 2, _work("w-twin", doi="doi:10.5555/twin", pith="hep-th/9901001"))
    cite(9, 1, _work("w-old", arxiv=OLD_STYLE.lower()))
    cite(10, 1, _work("w-none"))  # no key: known, never matched, not checkable
    return events


def _full_scan(store: Store, t: int) -> tuple[dict[str, list[str]], list[str], dict[str, str]]:
    """What the adapters matched before the index: every work and paper known as of T, in memory."""
    by_key: dict[str, set[str]] = {}
    checkable: set[str] = set()
    for w in works_known(store, t):
        keys = work_keys(w.doi, w.arxiv_id, w.pith_arxiv_id)
        for k in keys:
            by_key.setdefault(k, set()).add(w.work_id)
        if keys:
            checkable.add(w.work_id)
    papers: dict[str, str] = {}
    for a in papers_known(store, t):
        papers.setdefault(arxiv_key(a) or "", a)
    return {k: sorted(ids) for k, ids in by_key.items()}, sorted(checkable), papers


def _keys_named(events: Iterable[Event]) -> set[str]:
    """Every key the events' works and papers have, and a few they do not."""
    keys = {"10.5555/nowhere", "10.48550/arxiv.9999.99999", "10.48550/arxiv.math.ag/0601001"}
    for e in events:
        data = e.data
        w = getattr(data, "cited_work", None)
        if w is not None:
            keys |= work_keys(w.doi, w.arxiv_id, w.pith_arxiv_id)
        if hasattr(data, "arxiv_id") and isinstance(data.arxiv_id, str):
            keys.add(arxiv_key(data.arxiv_id) or "")
    return keys - {""}


def assert_same_as_full_scan(store: Store, t: int, keys: set[str]) -> None:
    """The lookups of `keys` (and of every key known) give what the full scan gives, as of t."""
    works, checkable, papers = _full_scan(store, t)
    asked = keys | works.keys() | papers.keys()
    assert works_matching(store, asked, t) == {k: works.get(k, []) for k in asked}
    assert checkable_works(store, t) == checkable
    assert papers_matching(store, asked, t) == {k: papers.get(k) for k in asked}


INSTANTS = [ts(0), ts(1), ts(2), ts(3), ts(4), ts(5), ts(6)]


@pytest.mark.parametrize("events", [sample_events, rebound_events], ids=["sample", "rebound"])
@pytest.mark.parametrize("at", INSTANTS)
def test_lookups_match_what_the_full_scan_matches(
    new_db: NewDb, events: Callable[[], list[Event]], at: str
) -> None:
    built = events()
    ledger = Ledger(new_db())
    ledger.append(built)
    assert_same_as_full_scan(ledger.store, parse_ts(at), _keys_named(built))


@pytest.mark.parametrize(
    ("at", "doi", "works"),
    [
        (ts(2), "10.5555/A", ["w-a"]),
        (ts(3), "10.5555/A", []),  # re-bound to w-b at ts(3)
        (ts(3), "10.5555/B", ["w-b"]),
        (ts(4), "https://doi.org/10.5555/c", ["w-c"]),  # a resolution to nothing keeps the citation's
        (ts(2), "10.5555/D", ["w-d"]),
        (ts(3), "10.5555/D", []),  # now displayed without a work_id
        (ts(2), "10.48550/arXiv.2310.04610", ["w-f"]),
        (ts(2), "10.5555/E", []),
        (ts(4), "10.5555/E", ["w-e"]),  # the latest resolution has no work
        (ts(4), "10.5555/H", []),  # its citation is not observed yet
        (ts(5), "10.5555/H", ["w-h"]),  # the resolution's work, not the citation's
        (ts(5), "10.5555/G", []),
        (ts(1), "10.5555/I", []),
        (ts(1), "10.5555/J", ["w-j"]),
        (ts(1), LONG_DOI.upper(), ["w-long"]),  # stored as its digest, confirmed exactly
        (ts(1), "10.5555/" + "x" * (LONG_KEY - 1) + "y", []),
        (ts(2), "10.5555/twin", ["w-twin"]),
        (ts(2), "10.48550/arxiv.hep-th/9901001v3", ["w-twin"]),
        (ts(0), "10.5555/twin", []),
    ],
)
def test_the_current_work_of_each_observation_is_what_matches(
    new_db: NewDb, at: str, doi: str, works: list[str]
) -> None:
    ledger = Ledger(new_db())
    ledger.append(rebound_events())
    key = doi_key(doi)
    assert key is not None
    assert works_matching(ledger.store, [key], parse_ts(at)) == {key: works}


@pytest.mark.parametrize(
    ("at", "key", "paper_id"),
    [
        (ts(2), "10.48550/arxiv.2101.00001", CITING),
        (ts(2), "10.48550/arxiv.math.ag/0601001", None),  # observed at ts(3)
        (ts(3), "10.48550/arxiv.math.ag/0601001", OLD_STYLE),
        (ts(3), "10.5555/A", None),  # not an arXiv DOI: no paper, no statement
    ],
)
def test_papers_are_looked_up_by_their_streams(
    new_db: NewDb, at: str, key: str, paper_id: str | None
) -> None:
    ledger = Ledger(new_db())
    ledger.append(rebound_events())
    assert papers_matching(ledger.store, [key], parse_ts(at)) == {key: paper_id}


def test_one_statement_per_chunk_of_keys(new_db: NewDb, monkeypatch: pytest.MonkeyPatch) -> None:
    ledger = Ledger(new_db())
    ledger.append(rebound_events())
    monkeypatch.setattr(works_store, "CHUNK", 2)
    store = ledger.store
    calls: list[int] = []
    lookup = store.works.work_facts

    def counted(index_keys: Sequence[str], as_of_us: int) -> list[Fact]:
        calls.append(len(index_keys))
        return lookup(index_keys, as_of_us)

    monkeypatch.setattr(store.works, "work_facts", counted)
    keys = [doi_key(f"10.5555/{c}") or "" for c in "ABCDE"]
    found = works_matching(store, keys, parse_ts(ts(2)))
    assert calls == [2, 2, 1]
    assert found == {keys[0]: ["w-a"], keys[1]: [], keys[2]: ["w-c"], keys[3]: ["w-d"], keys[4]: []}


_FEW = settings(_SETTINGS, max_examples=examples(25))


@_FEW
@given(events=ledgers(), cuts=st.lists(st.integers(0, 430), min_size=1, max_size=4))
def test_any_ledger_matches_as_the_full_scan(scratch: Scratch, events: list[Event], cuts: list[int]) -> None:  # noqa: F811
    with scratch.example() as new:
        ledger = new("works.db")
        ledger.append(events)
        for cut in cuts:
            keys = _keys_named(events) | {arxiv_key(p) or "" for p in PAPERS}
            assert_same_as_full_scan(ledger.store, parse_ts(ts(cut)), keys)
