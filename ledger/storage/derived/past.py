"""What the events past the inbound spans' position say about inbound observations, kept per store.

A record folds in the observations whose events lie past the spans' position (ledger/storage/projector.py).
Only some of them can change one paper's inbound list: those a resolution past the position names it in,
and those whose stored span names it, which all live in the streams of citing papers that have events
past the position (every event of an observation is in its citing paper's stream). This index holds, for
the citation and resolution events past one position, the observations each resolution names a paper
in, and the citing papers: a record reads only the new events since the last read (one probe when there
are none), instead of every event past the position each time. It holds at most the projector's lag.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

# one event past the position, as the record's statement returns it: "seq,observation,citing,cited"
# (cited empty for a citation or an unresolved resolution), rows separated by a space
ROW_SEP = " "
FIELD_SEP = ","


@dataclass
class Past:
    """The citation and resolution events in (position, upto]: who each resolution names, and the
    citing papers."""

    position: int
    upto: int
    by_cited: dict[str, set[str]] = field(default_factory=dict)
    citing: set[str] = field(default_factory=set)

    def add(self, rows: str | None, head: int) -> None:
        """Take in the rows of events past `upto` (those at or before it are held already)."""
        for row in (rows or "").split(ROW_SEP):
            if not row:
                continue
            seq, oid, citing, cited = row.split(FIELD_SEP)
            if int(seq) <= self.upto:
                continue
            self.citing.add(citing)
            if cited:
                self.by_cited.setdefault(cited, set()).add(oid)
        self.upto = max(self.upto, head)


@dataclass(frozen=True)
class Touching:
    """What one paper's record folds in: the observations a resolution past the position names it in,
    and the citing papers whose stored spans of it must be read from their events instead."""

    named: list[str]
    citing: list[str]

    def __bool__(self) -> bool:
        return bool(self.citing)


class PastIndex:
    """The `Past` of the latest position a read has seen, shared by a store's threads."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._past: Past | None = None

    def held(self) -> Past | None:
        """What is held now (a read asks for the events past its `upto` at its `position`)."""
        with self._lock:
            return self._past

    def touching(self, base: Past | None, position: int, head: int, rows: str | None, cited: str) -> Touching:
        """Take in a read's rows: the events past `base.upto` when its position is `base`'s, else every
        one past `position`; then what the paper `cited` folds in. A read of an older head than what is
        held sees more observations than it must: folding those in from their events changes nothing."""
        with self._lock:
            if base is not None and base.position == position:
                past = base
            else:
                past = Past(position, position)
                if self._past is None or position > self._past.position:
                    self._past = past
            past.add(rows, head)
            return Touching(sorted(past.by_cited.get(cited, ())), sorted(past.citing))
