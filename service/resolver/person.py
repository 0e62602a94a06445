"""A person's resolution (resolver-v1.md): set an observation's match to a DOI or an arXiv id, or
clear it, named in `resolver_source` as `person:NAME`; the resolver never changes it afterwards."""

from __future__ import annotations

import unicodedata
from typing import NamedTuple

from ledger.model.doi import arxiv_key, doi_key
from ledger.model.errors import InvalidEvent, NotFound
from ledger.model.events import CitedWork, ResolutionData, ResolutionObserved
from ledger.model.ids import normalise_arxiv
from ledger.model.instants import format_recorded
from ledger.model.jsonvalue import JsonIn
from ledger.model.works import CatalogueWork, Evidence
from ledger.storage.interface import CatalogueTables
from ledger.storage.sql import FAR_FUTURE
from projections.record import observations
from service.ledger import AppendResult, Ledger
from service.resolver.names import check_script
from service.resolver.run import PERSON_PREFIX, arxiv_paper, cited_work, match_key, work_ids

MAX_NAME = 100


class PersonChoice(NamedTuple):
    """What a person asked: a DOI, an arXiv id, or neither (clear the match)."""

    by: str
    doi: str | None = None
    arxiv_id: str | None = None


def check_name(name: JsonIn, where: str = "by") -> str:
    """A person's name as given: 1 to MAX_NAME printable characters, no control characters."""
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_NAME:
        raise InvalidEvent(where, f"a person's name, 1 to {MAX_NAME} characters")
    if any(unicodedata.category(c).startswith("C") for c in name):
        raise InvalidEvent(where, "a person's name holds no control or unassigned characters")
    return name.strip()


def choice(by: JsonIn, doi: JsonIn = None, arxiv_id: JsonIn = None, clear: bool = False) -> PersonChoice:
    """A person's choice, checked: a name in one script, not the resolver's (names.py), and exactly
    one of a DOI, an arXiv id and clearing."""
    name = check_name(by)
    check_script(name, "by")
    if sum((doi is not None, arxiv_id is not None, clear)) != 1:
        raise InvalidEvent("doi", "give exactly one of doi, arxiv_id and none (clear the match)")
    if doi is not None:
        key = doi_key(doi) if isinstance(doi, str) else None
        if key is None or not key.startswith("10.") or "/" not in key:
            raise InvalidEvent(
                "doi", "a DOI: 10.<prefix>/<suffix> (a doi: or https://doi.org/ prefix is fine)"
            )
        return PersonChoice(name, doi=key)
    if arxiv_id is not None:
        if not isinstance(arxiv_id, str):
            raise InvalidEvent("arxiv_id", "an arXiv id, a string: NNNN.NNNNN or archive/NNNNNNN")
        return PersonChoice(name, arxiv_id=normalise_arxiv(arxiv_id, "arxiv_id"))
    return PersonChoice(name)


def _known(catalogue: CatalogueTables, key: str) -> CatalogueWork | None:
    """The catalogue's work under this match key (the latest event of it), or None."""
    found = [w for w in catalogue.catalogue_by_keys([key])[0] if match_key(w.doi, w.arxiv_id) == key]
    return max(found, key=lambda w: w.seq) if found else None


def person_resolution(
    ledger: Ledger, observation_id: str, asked: PersonChoice, catalogue: CatalogueTables
) -> ResolutionObserved:
    """The resolution a person's choice makes for an observation (NotFound when there is none):
    verified_exact naming the catalogue's work when the catalogue knows the work; verified_fuzzy naming
    only the identifier (and the title the reference displays) when it does not; unresolved, with the
    displayed work's identifiers taken off, when the person clears the match."""
    now = ledger.clock.now_us()
    facts = ledger.store.works.observation_facts([observation_id], -FAR_FUTURE, now)
    obs = observations(facts).get(observation_id)
    if obs is None:
        raise NotFound(f"no observation {observation_id!r}", details={"observation_id": observation_id})
    shown: CitedWork | None = obs.cit.data.cited_work
    if obs.res is not None and obs.res.data.cited_work is not None:
        shown = obs.res.data.cited_work
    source = PERSON_PREFIX + asked.by
    at = format_recorded(now)
    key = doi_key(asked.doi) or arxiv_key(asked.arxiv_id)
    if key is None:
        cleared = None
        if shown is not None:
            cleared = CitedWork(None, None, source, None, at, shown.title, shown.venue, None, shown.year)
        data = ResolutionData(observation_id, "unresolved", source, cleared, None)
        return ResolutionObserved(observed_at=at, data=data)
    work = _known(catalogue, key)
    if work is not None:
        ids = work_ids(ledger, [work], now)
        cited = cited_work(work, ids[key])
        evidence = Evidence("person", work.seq, 0, [], [], None)
        data = ResolutionData(observation_id, "verified_exact", source, cited, arxiv_paper(work), evidence)
        return ResolutionObserved(observed_at=at, data=data)
    stub = CatalogueWork(seq=0, observed_at=at, source=source, type=None, doi=asked.doi,
                         arxiv_id=asked.arxiv_id, title=None if shown is None else shown.title, authors=(),
                         container=None if shown is None else shown.venue,
                         year=None if shown is None else shown.year, volume=None, issue=None,
                         first_page=None)  # fmt: skip
    cited = cited_work(stub, work_ids(ledger, [stub], now)[key])
    data = ResolutionData(observation_id, "verified_fuzzy", source, cited, asked.arxiv_id)
    return ResolutionObserved(observed_at=at, data=data)


def resolve_by_person(
    ledger: Ledger, observation_id: str, asked: PersonChoice, catalogue: CatalogueTables
) -> AppendResult:
    """Append a person's resolution of one observation."""
    return ledger.append([person_resolution(ledger, observation_id, asked, catalogue)], resolver_events=True)
