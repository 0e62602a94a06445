"""The lookup keys an event implies, and the levels of tables that hold them.

Idempotency needs every `event_id`, records need every observation id and cited arXiv id, and the
standing checks' rows are found by work id: keys with no order in time (UUIDs, arXiv ids). A B-tree
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

from collections.abc import Sequence

import msgspec

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

_CITATION = "citation.observed"
_RESOLUTION = "resolution.observed"


class _Refs(msgspec.Struct):
    observation_id: str
    cited_arxiv_id: str | None = None


_REFS = msgspec.json.Decoder(_Refs)


def link_keys(link: ChainLink) -> list[str]:
    """The keys of one stored event: its event id, then its observation id and cited arXiv id if any."""
    e = link.event
    keys = [EVENT + e.event_id]
    if e.type == _CITATION or e.type == _RESOLUTION:
        refs = _REFS.decode(e.data)
        keys.append(OBSERVATION + refs.observation_id)
        if e.type == _RESOLUTION and refs.cited_arxiv_id is not None:
            keys.append(CITED + refs.cited_arxiv_id)
    return keys


def key_rows(links: Sequence[ChainLink]) -> list[tuple[str, int]]:
    """(key, seq) rows of the given events."""
    return [(k, link.event.seq) for link in links for k in link_keys(link)]
