"""The change proposed for ledger/store.py (owned elsewhere): SQLiteReader.source_heads by index seeks.

The current statement numbers every standing check of every source with a window function, so its
cost grows with the number of checks in the ledger. This one finds each source stream by a skip-scan
(one seek per source) and its latest check as of T and K by a backward seek on
events_stream_type_time; same rows, same order, still one statement.
"""

from __future__ import annotations

from typing import Any

from ledger.facts import SourceHead

SOURCE_HEADS = (
    "WITH RECURSIVE s(stream) AS ("
    "  SELECT min(stream) FROM events WHERE stream >= 'source:' AND stream < 'source;'"
    "  UNION ALL"
    "  SELECT (SELECT min(stream) FROM events WHERE stream > s.stream AND stream < 'source;')"
    "  FROM s WHERE s.stream IS NOT NULL) "
    "SELECT substr(e.stream, 8), e.observed_at, e.observed_us, e.seq FROM s JOIN events e ON e.seq = ("
    "  SELECT seq FROM events WHERE stream = s.stream AND type = 'standing.checked'"
    "  AND observed_us <= ? AND recorded_us <= ? ORDER BY observed_us DESC, seq DESC LIMIT 1) "
    "ORDER BY e.stream"
)


def source_heads(self: Any) -> list[SourceHead]:
    """Statement 4: the latest standing check of every source (drop-in for SQLiteReader.source_heads)."""
    return [SourceHead(*r) for r in self.conn.execute(SOURCE_HEADS, (self.t, self.k))]
