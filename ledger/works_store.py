"""Ledger-wide reads the source adapters and the diff need (works and papers known as of T).

The record's own reads live in store.py; these span every observation, so they are kept apart.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import NamedTuple

from .codec import decode_data
from .facts import Fact
from .store import SQLiteStore


class KnownWork(NamedTuple):
    """A cited work with a work_id, as displayed by some observation: the keys it can be matched on."""

    work_id: str
    doi: str | None
    arxiv_id: str | None
    pith_arxiv_id: str | None


def works_known(store: SQLiteStore, as_of_us: int) -> list[KnownWork]:
    """Distinct cited works with a work_id in the current state (as of T) of every observation."""
    # One pass: the latest citation and the latest resolution of each observation as of T
    # (greatest observed_us, ties to the later seq), with only their cited_work extracted.
    rows = store._conn().execute(
        "SELECT observation_id, type, cited_work FROM ("
        "  SELECT observation_id, type, json_extract(data, '$.cited_work') AS cited_work,"
        "   row_number() OVER (PARTITION BY observation_id, type"
        "   ORDER BY observed_us DESC, seq DESC) AS rn"
        "  FROM events WHERE observation_id IS NOT NULL AND observed_us <= ?"
        ") WHERE rn = 1",
        (as_of_us,),
    )
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


def papers_known(store: SQLiteStore, as_of_us: int) -> list[str]:
    """arXiv ids of the papers with a paper.observed snapshot as of T, sorted."""
    rows = store._conn().execute(
        "SELECT DISTINCT substr(stream, 7) FROM events "
        "WHERE type = 'paper.observed' AND observed_us <= ? ORDER BY 1",
        (as_of_us,),
    )
    return [r[0] for r in rows]


def observation_events(
    store: SQLiteStore, observation_ids: Sequence[str], after_us: int, until_us: int
) -> list[Fact]:
    """Citations and resolutions of the given observations observed in (after, until], in seq order."""
    if not observation_ids:
        return []
    rows = store._conn().execute(
        "SELECT seq, type, observed_at, observed_us, data FROM events "
        "WHERE observation_id IN (SELECT value FROM json_each(?)) "
        "AND observed_us > ? AND observed_us <= ? ORDER BY seq",
        (json.dumps(list(observation_ids)), after_us, until_us),
    )
    return [Fact(s, t, oa, ous, decode_data(t, d.encode())) for s, t, oa, ous, d in rows]
