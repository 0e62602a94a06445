"""The adapters' work and paper indexes (service/sources/base.py): the events and summary of an ingest
are those of matching against every work and paper known as of T, whatever the chunk of rows."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Iterable
from typing import Any

import pytest

import service.sources as sources
from ledger.model.doi import arxiv_key, doi_key
from ledger.model.events import Event, StandingChecked
from ledger.model.instants import parse_ts
from ledger.model.jsonvalue import JsonInObject
from ledger.storage.interface import Store
from service.ledger import Ledger
from service.sources import SourceFile, base, counts, crossref, parse_source, retraction_watch
from service.sources.base import PaperIndex, Parsed, WorkIndex
from tests.conftest import NewDb
from tests.factories import oid_of, resolution, ts
from tests.ledger.storage.test_works_store import LONG_DOI, OLD_STYLE, _full_scan, _work, rebound_events
from tests.service.sources.test_sources_support import SOURCES_DIR, sample_events


class FullScanWorks(WorkIndex):
    """The index of before: every work known as of T, read from every observation, held in memory."""

    def __init__(self, store: Store, as_of_us: int) -> None:
        self.works, self.keyed, _ = _full_scan(store, as_of_us)

    def load(self, dois: Iterable[Any]) -> None:
        pass

    def match(self, doi: Any) -> list[str]:
        key = doi_key(doi) if isinstance(doi, str) else None
        return self.works.get(key, []) if key else []

    def checkable(self) -> list[str]:
        return self.keyed


class FullScanPapers(PaperIndex):
    """The paper index of before: every paper known as of T, in memory."""

    def __init__(self, store: Store, as_of_us: int) -> None:
        _, _, self.papers = _full_scan(store, as_of_us)

    def load(self, dois: Iterable[Any] = (), arxiv_ids: Iterable[Any] = ()) -> None:
        pass

    def _get(self, key: str | None) -> str | None:
        return self.papers.get(key) if key else None


REBOUND_DOIS = [
    "10.5555/A", "10.5555/b", "HTTPS://DOI.ORG/10.5555/C", "10.5555/D", "10.5555/E",
    "10.48550/arXiv.2310.04610v3", "10.5555/G", "doi: 10.5555/H", "10.5555/I", "10.5555/J", LONG_DOI,
    "10.5555/twin", "10.48550/arxiv.hep-th/9901001", "10.48550/arXiv.math.ag/0601001", "", "unavailable",
    "10.5555/nowhere",
]  # fmt: skip


def _rw_csv(dois: list[str]) -> bytes:
    out = io.StringIO()
    w = csv.writer(out)
    w.writerow(retraction_watch.REQUIRED)
    for i, doi in enumerate(dois * 2):  # every DOI twice: a key looked up in two chunks
        nature = ["Retraction", "Correction", "Bogus"][i % 3]
        w.writerow(
            [str(i), f"https://example.org/{i}", f"{i % 12 + 1}/1/2020", f"10.5555/n.{i}", doi, nature, "+R;"]
        )
    return out.getvalue().encode()


def _crossref(dois: list[str]) -> bytes:
    items: list[Any] = [
        {"DOI": d, "title": ["big"] * 50, "updated-by": [{"type": "retraction", "DOI": f"10.5555/n.{i}"}]}
        for i, d in enumerate(dois * 2)
    ]
    items.insert(3, "not an object")
    return json.dumps({"status": "ok", "message": {"items": items}}).encode()


def _openalex(ids: list[str]) -> bytes:
    results = [{"doi": f"https://doi.org/10.48550/arXiv.{a}", "cited_by_count": i} for i, a in enumerate(ids)]
    results += [{"ids": {"doi": "10.5555/A"}, "cited_by_count": 1}, {"doi": None, "cited_by_count": 2}]
    return json.dumps({"results": results * 2}).encode()


def _semantic_scholar(ids: list[str]) -> bytes:
    items: list[Any] = [
        {"paperId": f"p{i}", "externalIds": {"ArXiv": a}, "citationCount": i} for i, a in enumerate(ids)
    ]
    items += [
        None,
        7,
        {"paperId": "d", "externalIds": {"DOI": "10.48550/arXiv.2101.00001"}, "citationCount": 3},
    ]
    return json.dumps(items).encode()


PAPER_IDS = ["2101.00001", "2310.04610v2", OLD_STYLE.lower(), "hep-th/9901001", "9999.99999"]


def _fixture(name: str) -> Callable[[], bytes]:
    return lambda: (SOURCES_DIR / name).read_bytes()


FILES: list[Any] = [
    pytest.param("retraction-watch", _fixture("retraction_watch.csv"), id="rw-fixture"),
    pytest.param("retraction-watch", lambda: _rw_csv(REBOUND_DOIS), id="rw-rebound"),
    pytest.param("crossref", _fixture("crossref_works.json"), id="crossref-fixture"),
    pytest.param("crossref", _fixture("crossref_work.json"), id="crossref-one-work"),
    pytest.param("crossref", lambda: _crossref(REBOUND_DOIS), id="crossref-rebound"),
    pytest.param("openalex", _fixture("openalex_works.json"), id="openalex-fixture"),
    pytest.param("openalex", lambda: _openalex(PAPER_IDS), id="openalex-papers"),
    pytest.param("semantic-scholar", lambda: _semantic_scholar(PAPER_IDS), id="s2-papers"),
]
CHUNKS = [(retraction_watch, "CHUNK"), (crossref, "CHUNK"), (counts, "CHUNK")]


def _parsed(ledger: Ledger, source: str, body: bytes, at: str) -> tuple[list[Event], list[str], JsonInObject]:
    p: Parsed = parse_source(ledger, SourceFile(source, body, at))
    return p.events, p.places, p.summary.to_dict()


@pytest.mark.parametrize(("source", "body"), FILES)
@pytest.mark.parametrize("events", [sample_events, rebound_events], ids=["sample", "rebound"])
def test_an_ingest_matches_as_the_full_scan_did(
    new_db: NewDb,
    monkeypatch: pytest.MonkeyPatch,
    source: str,
    body: Callable[[], bytes],
    events: Callable[[], list[Event]],
) -> None:
    ledger = Ledger(new_db())
    ledger.append(events())
    data = body()
    for at in (ts(0), ts(2), ts(3), ts(4), ts(6)):
        with monkeypatch.context() as m:
            m.setattr(sources, "WorkIndex", FullScanWorks)
            m.setattr(sources, "PaperIndex", FullScanPapers)
            before = _parsed(ledger, source, data, at)
        assert _parsed(ledger, source, data, at) == before
        with monkeypatch.context() as m:
            for module, name in CHUNKS:
                m.setattr(module, name, 2)  # chunks that split a file's rows, and a DOI's two rows
            assert _parsed(ledger, source, data, at) == before


def test_a_rebound_work_is_not_matched_and_its_new_one_is(new_db: NewDb) -> None:
    ledger = Ledger(new_db())
    ledger.append(rebound_events())
    body = _rw_csv(["10.5555/A", "10.5555/B"])  # A: a retraction and a skipped row; B: two notices
    early, late = (_parsed(ledger, "retraction-watch", body, at)[0][0] for at in (ts(2), ts(3)))
    assert isinstance(early, StandingChecked) and isinstance(late, StandingChecked)
    assert [n.work_id for n in early.data.notices] == ["w-a"]
    assert [n.work_id for n in late.data.notices] == ["w-b", "w-b"]  # re-bound at ts(3)
    assert "w-a" in (early.data.work_ids or []) and "w-a" not in (late.data.work_ids or [])


def test_the_indexes_answer_keys_they_were_not_loaded_with(new_db: NewDb) -> None:
    ledger = Ledger(new_db())
    ledger.append(rebound_events())
    t = parse_ts(ts(3))
    works, papers = WorkIndex(ledger.store, t), PaperIndex(ledger.store, t)
    works.load(["10.5555/B"])
    assert works.match("10.5555/C") == ["w-c"] and works.match("10.5555/B") == ["w-b"]
    assert works.match(None) == [] and works.match(" ") == []
    papers.load(dois=["10.48550/arxiv.2101.00001"])
    assert papers.by_arxiv("math.ag/0601001v2") == OLD_STYLE and papers.by_doi(7) is None
    assert arxiv_key(OLD_STYLE) == "10.48550/arxiv.math.ag/0601001"


def test_an_append_during_a_parse_is_not_seen_by_its_later_chunks(
    new_db: NewDb, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = new_db()
    ledger, other = Ledger(db), Ledger(db)
    ledger.append(rebound_events())
    body = _rw_csv(["10.5555/B", "10.5555/C"])
    before = _parsed(ledger, "retraction-watch", body, ts(6))
    monkeypatch.setattr(retraction_watch, "CHUNK", 1)
    lookup = base.works_matching
    appended: list[int] = []

    def then_append(store: Store, keys: Iterable[str], t: int) -> dict[str, list[str]]:
        found = lookup(store, keys, t)
        if not appended:  # after the first row's lookup: w-b re-bound to w-z, back-dated before T
            rebind = resolution(oid_of(0), ts(5), cited=_work("w-z", doi="10.5555/Z"))
            appended.append(other.append([rebind]).appended)
        return found

    monkeypatch.setattr(base, "works_matching", then_append)
    assert _parsed(ledger, "retraction-watch", body, ts(6)) == before
    assert appended == [1]
    # the next ingest sees it: w-b is no longer known, w-z is
    check = _parsed(ledger, "retraction-watch", body, ts(6))[0][0]
    assert isinstance(check, StandingChecked) and check.data.work_ids is not None
    assert "w-b" not in check.data.work_ids and "w-z" in check.data.work_ids
