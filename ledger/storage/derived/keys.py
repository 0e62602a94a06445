"""The lookup keys an event implies, and the levels of tables that hold them.

Idempotency needs every `event_id`, appends and diffs need every observation id (both written by the
append), source ingests need the works by the DOI and arXiv keys they match on (sources-v1.md), and
the standing checks' rows are found by work id (both written by the projector, ledger/storage/
projector.py): keys with no order in time (UUIDs, DOIs). A B-tree over such keys dirties about one
leaf page per key per append, and a SQLite commit writes every page it dirtied, so a 1000-event commit
into one big tree wrote thousands of pages and the append rate fell with the ledger's size. Here they
go to a small `*_recent` level whose few pages every commit rewrites, and move down, sorted, through
levels ten times bigger each (`MOVES`: the append whose seqs pass a multiple of a level's size moves
it into the next, so where the levels stand follows from the seqs alone). A move rewrites the level it
goes to once, so each key is written about five times per level over its life (a levelled LSM tree
with fan-out 10) and no append rewrites the big level more than once every `MOVES[-1]` events. Lookups
read every level (the `event_keys_all` and `check_works_all` views); `ledger verify` checks every row
against the events. On SQLite only the two big levels keep an index by seq (for verify's walk): a move
appends to it a range of seqs, where the small levels' would be rewritten by every commit. PostgreSQL,
whose commit writes no such pages, keeps one on every level (ledger/storage/schema.py).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from typing import Protocol

import msgspec

from ledger.model.doi import work_keys
from ledger.model.events import ChainLink, Glance

# the events whose rows each level but the last holds before they move to the next one, each size a
# multiple of the one before (a level moves only in an append that moved the one above it); the recent
# level's 5,000 events (about 10,000 keys, a hundred-odd pages) are what every commit rewrites
MOVES = (5_000, 50_000, 500_000)
# each derived table's levels, from the one appends write to the one that keeps the most
LEVELS = ("recent", "middle", "deep", "merged")


def level_table(table: str, level: str) -> str:
    """The table of `table`'s rows at `level` (the merged level keeps the plain name)."""
    return table if level == "merged" else f"{table}_{level}"


# the projections (ledger/storage/projector.py) that keep the works-index keys and the standing checks'
# per-work rows: what `projections` calls them
WORK_KEYS = "work_keys"
CHECK_WORKS = "check_works"

EVENT = "e:"
OBSERVATION = "o:"
WORK = "w:"
# a match key longer than this is stored as its digest: PostgreSQL refuses B-tree entries over about
# 2.7 kB, and a lookup confirms every candidate against the event's own cited work anyway
LONG_KEY = 256

_CITATION = "citation.observed"
_RESOLUTION = "resolution.observed"


_GLANCE = msgspec.json.Decoder(Glance)


def work_index_key(match_key: str) -> str:
    """The works-index key of a match key (ledger/model/doi.py): `w:` and the key, or its digest if long."""
    if len(match_key) <= LONG_KEY:
        return WORK + match_key
    return WORK + "#" + hashlib.sha256(match_key.encode()).hexdigest()


def link_keys(link: ChainLink) -> list[str]:
    """The keys an append writes for one stored event: its event id, then its observation id if any."""
    e = link.event
    return stored_keys(e.event_id, e.type, e.data)


def stored_keys(event_id: str, type_: str, data: bytes) -> list[str]:
    """The keys of an event with this id, type and stored data bytes (what `link_keys` reads)."""
    if type_ != _CITATION and type_ != _RESOLUTION:
        return [EVENT + event_id]
    return event_keys(event_id, _GLANCE.decode(data))


def stored_both(event_id: str, type_: str, data: bytes) -> tuple[list[str], list[str]]:
    """`stored_keys` and `stored_work_keys` of one event, its data decoded once."""
    if type_ != _CITATION and type_ != _RESOLUTION:
        return [EVENT + event_id], []
    refs = _GLANCE.decode(data)
    w = refs.cited_work
    if w is None or w.work_id is None:
        return event_keys(event_id, refs), []
    return event_keys(event_id, refs), cited_keys(w.doi, w.arxiv_id, w.pith_arxiv_id)


class Observed(Protocol):
    """A citation's or resolution's data, as far as its keys need it."""

    @property
    def observation_id(self) -> str | None: ...


def event_keys(event_id: str, refs: Observed | None = None) -> list[str]:
    """The keys an append writes for an event with this id and, for a citation or resolution, its data
    (decoded: the typed Struct an append holds, or what `link_keys` reads back from stored bytes)."""
    if refs is None:
        return [EVENT + event_id]
    assert refs.observation_id is not None  # a citation and a resolution name their observation
    return [EVENT + event_id, OBSERVATION + refs.observation_id]


def cited_keys(doi: str | None, arxiv_id: str | None, pith_arxiv_id: str | None) -> list[str]:
    """The works-index keys (sorted) of a cited work with a work_id and these identifiers: what the
    work-keys projection (ledger/storage/projector.py) writes for a citation or resolution citing it."""
    return list(_cited_keys(doi, arxiv_id, pith_arxiv_id))


# a pure function of the identifiers, and a work is cited again and again (a few hundred distinct works
# among 28,000 citations of one synthetic ledger): the projector and the walk ask for the same ones
@functools.lru_cache(maxsize=8192)
def _cited_keys(doi: str | None, arxiv_id: str | None, pith_arxiv_id: str | None) -> tuple[str, ...]:
    return tuple(sorted({work_index_key(k) for k in work_keys(doi, arxiv_id, pith_arxiv_id)}))


def link_work_keys(link: ChainLink) -> list[str]:
    """The works-index keys of one stored event (none unless it cites a work with a work_id)."""
    e = link.event
    return stored_work_keys(e.type, e.data)


def stored_work_keys(type_: str, data: bytes) -> list[str]:
    """`link_work_keys` of an event with this type and stored data bytes."""
    if type_ != _CITATION and type_ != _RESOLUTION:
        return []
    w = _GLANCE.decode(data).cited_work
    # only a work with a work_id can be known to a source ingest (ledger/storage/works_store.py)
    if w is None or w.work_id is None:
        return []
    return cited_keys(w.doi, w.arxiv_id, w.pith_arxiv_id)


def key_rows(links: Sequence[ChainLink]) -> list[tuple[str, int]]:
    """(key, seq) rows of the given events: the append's keys and the works-index keys."""
    return [(k, link.event.seq) for link in links for k in (*link_keys(link), *link_work_keys(link))]
