"""Ledger-wide reads the source adapters and the diff need (works and papers known as of T).

The record's own reads live in sql_store.py; these span every observation, so they are kept apart.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

from .facts import Fact

if TYPE_CHECKING:
    from .interface import Store


class KnownWork(NamedTuple):
    """A cited work with a work_id, as displayed by some observation: the keys it can be matched on."""

    work_id: str
    doi: str | None
    arxiv_id: str | None
    pith_arxiv_id: str | None


def works_known(store: Store, as_of_us: int) -> list[KnownWork]:
    """Distinct cited works with a work_id in the current state (as of T) of every observation."""
    # one pass: the latest citation and the latest resolution of each observation as of T
    rows = store.tables.latest_cited_works(as_of_us)
    cited: dict[str, str | None] = {}
    resolved: dict[str, str | None] = {}
    for oid, type_, work in rows:
        (cited if type_ == "citation.observed" else resolved)[oid] = work
    out: set[KnownWork] = set()
    for oid, from_citation in cited.items():
        # the displayed rule of record-v1.md: the resolution's cited_work when it has one
        raw = resolved.get(oid) or from_citation
        if raw is None:
            continue
        w = json.loads(raw)
        if w.get("work_id") is not None:
            out.add(KnownWork(w["work_id"], w.get("doi"), w.get("arxiv_id"), w.get("pith_arxiv_id")))
    return sorted(out, key=lambda w: (w.work_id, w.doi or "", w.arxiv_id or "", w.pith_arxiv_id or ""))


def papers_known(store: Store, as_of_us: int) -> list[str]:
    """arXiv ids of the papers with a paper.observed snapshot as of T, sorted."""
    return store.tables.paper_ids(as_of_us)


def observation_events(
    store: Store, observation_ids: Sequence[str], after_us: int, until_us: int
) -> list[Fact]:
    """Citations and resolutions of the given observations observed in (after, until], in seq order."""
    if not observation_ids:
        return []
    return store.tables.observation_facts(observation_ids, after_us, until_us)
