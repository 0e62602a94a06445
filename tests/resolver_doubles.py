"""Small honest stand-ins for the resolver's matcher and catalogue (the real ones are
service/resolver/match.py and the catalogue store): a catalogue over a list of works, and a matcher
that decides by identifier, then by exact normalised title."""

from __future__ import annotations

import re
import uuid
from collections.abc import Sequence
from typing import Any

from ledger.model.codec import decode_data
from ledger.model.doi import arxiv_key, doi_key
from ledger.model.events import CitedWork, PaperData, WorkObserved
from ledger.model.resolving import Decision, RefInput
from ledger.model.works import Author, CatalogueWork, Evidence, RunnerUp, WorkData
from service.resolver.defaults import Resolver
from tests.factories import citation, paper, resolution, ts

METHOD = "double/1"
CITING, CITED, OTHER = "2101.00001", "2101.00002", "2101.00003"
OIDS = [str(uuid.UUID(int=i + 1)) for i in range(4)]
DOI = "10.1000/known"


def cited(title: str | None, doi: str | None = None, work_id: str | None = None) -> CitedWork:
    """A cited work as a parser gave it: a title, perhaps a DOI, perhaps a work_id."""
    return CitedWork(None, doi, "raw_reference", None, "2026-01-01T00:00:00Z", title, None, work_id, 2024)


def key_of(w: CatalogueWork) -> str | None:
    """A work's match key: its DOI's, else its arXiv id's."""
    return doi_key(w.doi) or arxiv_key(w.arxiv_id)


def norm(title: str | None) -> str:
    """A title lower-cased, its non-letters dropped."""
    return re.sub(r"[^a-z0-9]", "", (title or "").lower())


class ListCatalogue:
    """CatalogueTables over a list of works (the latest per key is the caller's business)."""

    def __init__(self, works: Sequence[CatalogueWork] = ()) -> None:
        self.works = list(works)

    def catalogue_by_keys(self, keys: Sequence[str]) -> list[list[CatalogueWork]]:
        return [[w for w in self.works if key_of(w) == k] for k in keys]

    def catalogue_search(self, texts: Sequence[str], limit: int) -> list[list[CatalogueWork]]:
        return [[w for w in self.works if norm(w.title) and norm(w.title) in norm(t)][:limit] for t in texts]

    def catalogue_by_volume_page(
        self, pairs: Sequence[tuple[str, str]], limit: int
    ) -> list[list[CatalogueWork]]:
        return [[] for _ in pairs]


class LiveCatalogue(ListCatalogue):
    """A ListCatalogue of the ledger's papers as they stand at each call (as the catalogue store reads
    the database), plus some works of its own."""

    def __init__(self, ledger: Any, extra: Sequence[CatalogueWork] = ()) -> None:
        self.ledger = ledger
        self.extra = list(extra)

    @property
    def works(self) -> list[CatalogueWork]:  # type: ignore[override]
        return [*paper_works(self.ledger), *self.extra]


def paper_works(ledger: Any) -> list[CatalogueWork]:
    """The ledger's papers as catalogue works (source "arxiv"), each at its paper.observed event."""
    out = []
    for e in ledger.store.read_log(type="paper.observed"):
        d: PaperData = decode_data(e.type, e.data)
        out.append(CatalogueWork(seq=e.seq, observed_at=e.observed_at, source="arxiv", type=None, doi=None,
                                 arxiv_id=d.arxiv_id, title=d.title, authors=(), container=None, year=None,
                                 volume=None, issue=None, first_page=None))  # fmt: skip
    return out


def doi_work(seq: int, observed_at: str, doi: str, title: str, year: int = 2020) -> CatalogueWork:
    """A crossref work with a DOI, standing at catalogue event `seq`."""
    return CatalogueWork(seq=seq, observed_at=observed_at, source="crossref", type="journal-article", doi=doi,
                         arxiv_id=None, title=title, authors=("Smith",), container="J. Tests", year=year,
                         volume="1", issue="2", first_page="3")  # fmt: skip


def _evidence(method: str, w: CatalogueWork | None, score: int, runner: CatalogueWork | None) -> Evidence:
    ru = None if runner is None else RunnerUp(runner.seq, runner.doi, runner.arxiv_id, score // 2)
    agreed = ["title"] if w is not None else []
    return Evidence(method, None if w is None else w.seq, score, agreed, [], ru)


def decide(inputs: Sequence[RefInput], catalogue: Any) -> list[Decision]:
    """By identifier (the displayed work's DOI or arXiv id, or the reference's DOI), else one work whose
    normalised title equals the reference's: verified_exact; else unresolved."""
    out = []
    for ref in inputs:
        cited = ref.cited
        key = None
        if cited is not None:
            key = doi_key(cited.doi) or arxiv_key(cited.arxiv_id)
        if key is None and ref.reference is not None and isinstance(ref.reference.DOI, str):
            key = doi_key(ref.reference.DOI)
        if key is not None:
            found = catalogue.catalogue_by_keys([key])[0]
            if found:
                out.append(Decision("verified_exact", found[0], _evidence("identifier", found[0], 100, None)))
                continue
        title = None if cited is None else cited.title
        if title is None and ref.reference is not None and isinstance(ref.reference.article_title, str):
            title = ref.reference.article_title
        found = [w for w in catalogue.catalogue_search([title or ""], 10)[0] if norm(w.title) == norm(title)]
        if len(found) == 1:
            out.append(Decision("verified_exact", found[0], _evidence("title", found[0], 90, None)))
        else:
            runner = found[0] if found else None
            out.append(Decision("unresolved", None, _evidence("title", None, 0, runner)))
    return out


def seed_world(ledger: Any) -> None:
    """The tests' shared ledger: CITING cites CITED's title, a DOI the catalogue knows, a line naming no
    work and a title nobody knows (the last already unresolved, by no resolver link)."""
    ledger.append([
        paper(CITING, ts(0), title="The citing paper"),
        paper(CITED, ts(0), title="Attention Is All You Need"),
        paper(OTHER, ts(0), title="Another paper"),
        citation(OIDS[0], CITING, ts(1), 0, cited("Attention is all you need.")),
        citation(OIDS[1], CITING, ts(1), 1, cited("A known work", doi=DOI)),
        citation(OIDS[2], CITING, ts(1), 2, cited("Accessed: 2025-06")),
        citation(OIDS[3], CITING, ts(1), 3, cited("Nothing anyone holds")),
        resolution(OIDS[3], ts(2), "unresolved", resolver="no resolver link"),
    ])  # fmt: skip


def known_work(at: Any) -> CatalogueWork:
    """DOI's work, "A known work", standing at the stored event `at` (a work.observed on the real
    catalogue)."""
    return doi_work(at.seq, at.observed_at, DOI, "A known work")


def known_work_event(ledger: Any) -> Any:
    """Append DOI's work.observed ("A known work", as known_work describes it) and give its stored
    envelope: the catalogue event a resolution naming DOI's work points at."""
    data = WorkData(DOI, "crossref", "A known work", [Author("Smith", None)], "J. Tests", 2020, "1", "2", "3",
                    "journal-article", None)  # fmt: skip
    seq = ledger.append([WorkObserved(observed_at=ts(0), data=data)]).items[0].seq
    return ledger.store.envelopes([seq])[0]


def live_resolver(at: Any) -> Resolver:
    """The double's resolver over the ledger's papers as they stand at each run, plus known_work(at)."""
    return Resolver(decide, METHOD, lambda ledger: LiveCatalogue(ledger, [known_work(at)]))
