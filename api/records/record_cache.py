"""Record bytes cached on (paper, as_of, known_at, ledger head): a hit only while the head is unchanged.

A record is a pure function of the events up to the head it was built from, so the same key always
means the same bytes. "As of now" is never cached (now moves with every call); errors are not cached.
"""

from __future__ import annotations

from api.records.lru import SizedLRU
from ledger.model.facts import Head

Key = tuple[str, int, int | None, Head]
MAX_BYTES = 32 * 1024 * 1024


class RecordCache(SizedLRU[Key, bytes]):
    """A least-recently-used map of canonical record bytes, bounded by their total size."""

    def __init__(self, max_bytes: int = MAX_BYTES) -> None:
        super().__init__(max_bytes, len)
