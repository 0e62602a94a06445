"""The lookup keys an event implies, and the two-level table that holds them.

Idempotency needs every `event_id`, and records need every observation id and every cited arXiv id:
three keys with no order in time (UUIDs, arXiv ids). A B-tree over such keys, on the events table,
dirties about one leaf page per key per append, so each 1000-event commit wrote thousands of pages
and the append rate fell with the ledger's size. Here the keys go to `event_keys_recent`, a small
tree whose pages stay few and hot; once it covers `MERGE_EVENTS` events they move, sorted, into
`event_keys` in one statement, which touches each of its leaf pages at most once. Lookups read both
(the `event_keys_all` view). `ledger verify` checks both against the events, key by key.
"""

from __future__ import annotations

import msgspec

from .events import ChainLink

# events whose keys are kept in the recent level before they are merged (bench/floor.py measured
# 100,000 keys as the point past which the recent level's own pages grow costly)
MERGE_EVENTS = 25_000

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


def key_rows(links: list[ChainLink]) -> list[tuple[str, int]]:
    """(key, seq) rows of the given events."""
    return [(k, link.event.seq) for link in links for k in link_keys(link)]
