"""Record bytes cached on (paper, as_of, known_at, ledger head): a hit only while the head is unchanged.

A record is a pure function of the events up to the head it was built from, so the same key always
means the same bytes. "As of now" is never cached (now moves with every call); errors are not cached.
"""

from __future__ import annotations

import threading
from collections import OrderedDict

from ledger.facts import Head

Key = tuple[str, int, int | None, Head]
MAX_BYTES = 32 * 1024 * 1024


class RecordCache:
    """A least-recently-used map of canonical record bytes, bounded by their total size."""

    def __init__(self, max_bytes: int = MAX_BYTES) -> None:
        self.max_bytes = max_bytes
        self._items: OrderedDict[Key, bytes] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def get(self, key: Key) -> bytes | None:
        """The bytes built for exactly this paper, instants and head, if still held."""
        with self._lock:
            body = self._items.get(key)
            if body is not None:
                self._items.move_to_end(key)
            return body

    def put(self, key: Key, body: bytes) -> None:
        """Hold the bytes of a record built from the ledger at key's head."""
        if len(body) > self.max_bytes:
            return
        with self._lock:
            old = self._items.pop(key, None)
            self._size -= len(old) if old is not None else 0
            self._items[key] = body
            self._size += len(body)
            while self._size > self.max_bytes:
                _, dropped = self._items.popitem(last=False)
                self._size -= len(dropped)
