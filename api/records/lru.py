"""A least-recently-used map bounded by the total size of what it holds: the record and timeline caches.

What it holds is keyed on the ledger head it was read at, so a key always means the same value; a value
larger than the whole bound is not held.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class SizedLRU(Generic[K, V]):
    """Values by key, least recently used first out once their sizes together pass `limit`."""

    def __init__(self, limit: int, size_of: Callable[[V], int]) -> None:
        self.limit = limit
        self._size_of = size_of
        self._items: OrderedDict[K, V] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        """The value held for exactly this key, if still held."""
        with self._lock:
            found = self._items.get(key)
            if found is not None:
                self._items.move_to_end(key)
            return found

    def put(self, key: K, value: V) -> None:
        """Hold `value` under `key`, dropping the least recently used past the limit."""
        size = self._size_of(value)
        if size > self.limit:
            return
        with self._lock:
            old = self._items.pop(key, None)
            self._size -= self._size_of(old) if old is not None else 0
            self._items[key] = value
            self._size += size
            while self._size > self.limit:
                _, dropped = self._items.popitem(last=False)
                self._size -= self._size_of(dropped)
