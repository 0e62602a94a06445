"""Timelines kept on (paper, ledger head): a hit only while the head is unchanged.

A timeline is a pure function of the events up to the head it was read at, so the same key always
means the same timeline; the slider's loads and repeated views of a paper with thousands of events
then skip its fold. Bounded by the instants held in total, least recently used first out.
"""

from __future__ import annotations

from api.records.lru import SizedLRU
from ledger.model.facts import Head
from projections.timeline import Timeline

Key = tuple[str, Head]
MAX_INSTANTS = 200_000  # about forty papers of 5,000 instants


def _instants(timeline: Timeline) -> int:
    return max(1, len(timeline.instants))


class TimelineCache(SizedLRU[Key, Timeline]):
    """A least-recently-used map of timelines, bounded by their instants together."""

    def __init__(self, max_instants: int = MAX_INSTANTS) -> None:
        super().__init__(max_instants, _instants)
