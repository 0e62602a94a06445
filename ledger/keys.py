"""The lookup keys an event implies, and the levels of tables that hold them.

Idempotency needs every `event_id`, records need every observation id and cited arXiv id, source
ingests need the works by the DOI and arXiv keys they match on (sources-v1.md), and the standing
checks' rows are found by work id: keys with no order in time (UUIDs, arXiv ids). A B-tree
over such keys dirties about one leaf page per key per append, so each 1000-event commit wrote
thousands of pages and the append rate fell with the ledger's size. Here they go to small `*_recent`
tables whose pages stay few and hot. The append whose seqs pass a multiple of `MERGE_EVENTS` moves
their rows, sorted, into the `*_middle` level, and the one that passes a multiple of `MIDDLE_EVENTS`
moves those on into the merged level (`event_keys`, `check_works`), so where the levels stand follows
from the seqs alone. A move touches each leaf page of the level it goes to at most once, and the big
level is rewritten only every `MIDDLE_EVENTS` events (the write amplification of a three-level LSM
tree). Lookups read all three (the `event_keys_all` and `check_works_all` views); `ledger verify`
checks every row against the events.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import msgspec

from .doi import work_keys
from .events import ChainLink

# events whose rows the recent level holds before they move to the middle one (bench/floor.py
# measured 100,000 keys as the point past which the recent level's own pages grow costly), and
# events the middle level holds before its rows move to the merged level (a multiple of the first:
# the middle level moves only in an append that moved the recent one)
MERGE_EVENTS = 25_000
MIDDLE_EVENTS = 250_000
# each derived table's levels, from the one appends write to the one that keeps the most
LEVELS = ("recent", "middle", "merged")


def level_table(table: str, level: str) -> str:
    """The table of `table`'s rows at `level` (the merged level keeps the plain name)."""
    return table if level == "merged" else f"{table}_{level}"


EVENT = "e:"
OBSERVATION = "o:"
CITED = "c:"
WORK = "w:"
# a match key longer than this is stored as its digest: PostgreSQL refuses B-tree entries over about
# 2.7 kB, and a lookup confirms every candidate against the event's own cited work anyway
LONG_KEY = 256

_CITATION = "citation.observed"
_RESOLUTION = "resolution.observed"


class _Work(msgspec.Struct):
    work_id: str | None = None
    doi: str | None = None
    arxiv_id: str | None = None
    pith_arxiv_id: str | None = None


class _Refs(msgspec.Struct):
    observation_id: str
    cited_arxiv_id: str | None = None
    cited_work: _Work | None = None


_REFS = msgspec.json.Decoder(_Refs)


def work_index_key(match_key: str) -> str:
    """The works-index key of a match key (ledger/doi.py): `w:` and the key, or its digest if long."""
    if len(match_key) <= LONG_KEY:
        return WORK + match_key
    return WORK + "#" + hashlib.sha256(match_key.encode()).hexdigest()


def link_keys(link: ChainLink) -> list[str]:
    """The keys of one stored event: its event id, then its observation id and cited arXiv id if any,
    then the works-index keys of its cited work when that has a work_id (sorted)."""
    e = link.event
    keys = [EVENT + e.event_id]
    if e.type == _CITATION or e.type == _RESOLUTION:
        refs = _REFS.decode(e.data)
        keys.append(OBSERVATION + refs.observation_id)
        if e.type == _RESOLUTION and refs.cited_arxiv_id is not None:
            keys.append(CITED + refs.cited_arxiv_id)
        w = refs.cited_work
        # only a work with a work_id can be known to a source ingest (ledger/works_store.py)
        if w is not None and w.work_id is not None:
            keys += sorted({work_index_key(k) for k in work_keys(w.doi, w.arxiv_id, w.pith_arxiv_id)})
    return keys


def key_rows(links: Sequence[ChainLink]) -> list[tuple[str, int]]:
    """(key, seq) rows of the given events."""
    return [(k, link.event.seq) for link in links for k in link_keys(link)]
