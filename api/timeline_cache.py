"""Timelines kept on (paper, ledger head): a hit only while the head is unchanged.

A timeline is a pure function of the events up to the head it was read at, so the same key always
means the same timeline; the slider's loads and repeated views of a paper with thousands of events
then skip its fold. Bounded by the instants held in total, least recently used first out.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from ledger.facts import Head
from projections.timeline import Timeline

Key = tuple[str, Head]
MAX_INSTANTS = 200_000  # about forty papers of 5,000 instants


class TimelineCache:
    """A least-recently-used map of timelines, bounded by their instants together."""

    def __init__(self, max_instants: int = MAX_INSTANTS) -> None:
        self.max_instants = max_instants
        self._items: OrderedDict[Key, Timeline] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def get(self, key: Key) -> Timeline | None:
        """The timeline read for exactly this paper at this head, if still held."""
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key: Key, timeline: Timeline) -> None:
        """Hold a timeline read at key's head."""
        size = max(1, len(timeline.instants))
        if size > self.max_instants:
            return
        with self._lock:
            old = self._items.pop(key, None)
            self._size -= max(1, len(old.instants)) if old is not None else 0
            self._items[key] = timeline
            self._size += size
            while self._size > self.max_instants:
                _, dropped = self._items.popitem(last=False)
                self._size -= max(1, len(dropped.instants))
