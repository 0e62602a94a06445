"""Ledger-wide reads the source adapters and the diff need (works and papers known as of T).

The record's own reads live in tables/reader.py; these span every observation, so they are kept apart.
A source ingest looks up only the keys its file names, in the works index (derived/keys.py), a chunk
of keys per statement; `works_known` and `papers_known` read every observation and every paper, and
are the reference the lookups are tested against.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, NamedTuple, TypeVar

from ledger.model.doi import ARXIV_DOI_PREFIX, arxiv_key, work_keys
from ledger.model.events import CitedWork
from ledger.model.facts import Fact
from ledger.storage.derived.keys import work_index_key
from ledger.storage.sql import FAR_FUTURE

if TYPE_CHECKING:
    from ledger.storage.interface import Store

CHUNK = 500  # keys (or observations) per statement: a 50,000-row file is 100 statements
_CITATION = "citation.observed"
_RESOLUTION = "resolution.observed"
# the only upper-case letters an arXiv id may hold (model/codec.py ARXIV_RE): an old-style subject class
_SUBJECT_CLASS = re.compile(r"\.([a-z]{2})/")
W = TypeVar("W")


class KnownWork(NamedTuple):
    """A cited work with a work_id, as displayed by some observation: the keys it can be matched on."""

    work_id: str
    doi: str | None
    arxiv_id: str | None
    pith_arxiv_id: str | None


def displayed(from_citation: W | None, from_resolution: W | None) -> W | None:
    """The cited_work an observation displays (record-v1.md): the resolution's when it has one."""
    return from_resolution if from_resolution is not None else from_citation


def works_known(store: Store, as_of_us: int) -> list[KnownWork]:
    """Distinct cited works with a work_id in the current state (as of T) of every observation."""
    # one pass: the latest citation and the latest resolution of each observation as of T
    rows = store.works.latest_cited_works(as_of_us)
    cited: dict[str, str | None] = {}
    resolved: dict[str, str | None] = {}
    for oid, type_, work in rows:
        (cited if type_ == _CITATION else resolved)[oid] = work
    out: set[KnownWork] = set()
    for oid, from_citation in cited.items():
        raw = displayed(from_citation, resolved.get(oid))
        if raw is None:
            continue
        w = json.loads(raw)
        if w.get("work_id") is not None:
            out.add(KnownWork(w["work_id"], w.get("doi"), w.get("arxiv_id"), w.get("pith_arxiv_id")))
    return sorted(out, key=lambda w: (w.work_id, w.doi or "", w.arxiv_id or "", w.pith_arxiv_id or ""))


def current_works(facts: Iterable[Fact]) -> set[KnownWork]:
    """The works with a work_id the observations of `facts` (all their citations and resolutions as
    of T) display: the same rule as works_known, over decoded events."""
    latest: dict[tuple[str, str], Fact] = {}
    for f in facts:
        at = (f.data.observation_id, f.type)
        seen = latest.get(at)
        # latest: greatest observed_us, a tie to the later seq
        if seen is None or (f.observed_us, f.seq) > (seen.observed_us, seen.seq):
            latest[at] = f
    out: set[KnownWork] = set()
    for (oid, type_), f in latest.items():
        if type_ != _CITATION:
            continue  # an observation counts from its citation, as in works_known
        resolution = latest.get((oid, _RESOLUTION))
        resolved: CitedWork | None = None if resolution is None else resolution.data.cited_work
        w = displayed(f.data.cited_work, resolved)
        if w is not None and w.work_id is not None:
            out.add(KnownWork(w.work_id, w.doi, w.arxiv_id, w.pith_arxiv_id))
    return out


def _keys_of(w: KnownWork) -> set[str]:
    return work_keys(w.doi, w.arxiv_id, w.pith_arxiv_id)


def works_matching(store: Store, match_keys: Iterable[str], as_of_us: int) -> dict[str, list[str]]:
    """For each match key (ledger/model/doi.py), the work_ids of the works known as of T having it, sorted.

    The index gives every observation that ever had a work under the key as of T; each one's current
    work is then read from its own events, so a work re-bound elsewhere by a later resolution, or
    only cited after T, does not match: exactly what the works of `works_known` would match.
    """
    found: dict[str, set[str]] = {k: set() for k in match_keys}
    for chunk in _chunks(sorted(found)):
        wanted = set(chunk)
        facts = store.works.work_facts(sorted({work_index_key(k) for k in chunk}), as_of_us)
        for w in current_works(facts):
            for k in _keys_of(w) & wanted:
                found[k].add(w.work_id)
    return {k: sorted(ids) for k, ids in found.items()}


def checkable_works(store: Store, as_of_us: int) -> list[str]:
    """work_ids of the works known as of T that have a key to match on, sorted: the index's range of
    keyed works, each observation's current work confirmed from its events (not every observation)."""
    out: set[str] = set()
    for chunk in _chunks(store.works.work_observations(as_of_us)):
        facts = store.works.observation_facts(chunk, -FAR_FUTURE, as_of_us)
        out.update(w.work_id for w in current_works(facts) if _keys_of(w))
    return sorted(out)


def papers_known(store: Store, as_of_us: int) -> list[str]:
    """arXiv ids of the papers with a paper.observed snapshot as of T, sorted."""
    return store.works.paper_ids(as_of_us)


def papers_matching(store: Store, match_keys: Iterable[str], as_of_us: int) -> dict[str, str | None]:
    """For each match key, the paper known as of T whose arXiv DOI it is (the least id if several), else
    None: the ids that can have that key are looked up by their streams."""
    found: dict[str, str | None] = dict.fromkeys(match_keys)
    arxiv = sorted(k for k in found if k.startswith(ARXIV_DOI_PREFIX))
    for chunk in _chunks(arxiv):
        ids = {i for k in chunk for i in _ids_of(k)}
        for paper in store.works.papers_among(sorted(ids), as_of_us):
            key = arxiv_key(paper)
            if key in found and found[key] is None:  # sorted: the least id, as papers_known's first
                found[key] = paper
    return found


def _ids_of(key: str) -> set[str]:
    """The arXiv ids whose key this is. A stored id passed check_arxiv (no version, no spaces), so its
    key is the prefix and the id lower-cased: only a subject class's case is lost."""
    lower = key.removeprefix(ARXIV_DOI_PREFIX)
    return {lower, _SUBJECT_CLASS.sub(lambda m: "." + m[1].upper() + "/", lower)}


def observation_events(
    store: Store, observation_ids: Sequence[str], after_us: int, until_us: int
) -> list[Fact]:
    """Citations and resolutions of the given observations observed in (after, until], in seq order."""
    if not observation_ids:
        return []
    return store.works.observation_facts(observation_ids, after_us, until_us)


def _chunks(items: Sequence[str]) -> Iterator[Sequence[str]]:
    for i in range(0, len(items), CHUNK):
        yield items[i : i + CHUNK]
