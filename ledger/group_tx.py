"""One group-commit transaction seen by each batch as if the earlier batches were already written.

The batches of a group stage their rows here; a batch that is refused raises before it stages
anything (append_batch inserts last), so nothing of it is kept and no savepoint is needed. The reads
an append makes (head, existing ids, citing papers, stream versions) answer from the store plus the
rows staged by earlier batches of the group, and all staged rows go to the store in one insert just
before COMMIT. A job sees only the append protocol (AppendTx).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import msgspec

from .append import AppendTx
from .events import ChainLink, StoredEvent
from .facts import CheckWorkRow, Head

_CITATION = "citation.observed"


class _Oid(msgspec.Struct):
    observation_id: str


_OID = msgspec.json.Decoder(_Oid)


class GroupTx:
    """The append protocol over a write transaction, with the group's staged rows laid over it."""

    def __init__(self, tx: AppendTx) -> None:
        self.tx = tx
        self._head: tuple[Head, int] | None = None
        self._links: list[ChainLink] = []
        self._checks: list[CheckWorkRow] = []
        self._by_id: dict[str, StoredEvent] = {}
        self._citing: dict[str, str] = {}
        self._versions: dict[str, int] = {}
        self._job: tuple[list[ChainLink], list[CheckWorkRow]] | None = None

    # -- the append protocol -------------------------------------------------------------

    def head(self) -> tuple[Head, int]:
        """The head after the batches staged so far (read from the store once per group)."""
        if self._head is None:
            self._head = self.tx.head()
        return self._head

    def existing(self, event_ids: Sequence[str]) -> dict[str, StoredEvent]:
        """Stored events under these ids, and those staged by earlier batches of the group."""
        found: dict[str, StoredEvent] = self.tx.existing(event_ids)
        found.update((i, self._by_id[i]) for i in event_ids if i in self._by_id)
        return found

    def citing_papers(self, observation_ids: Sequence[str]) -> dict[str, str]:
        """observation_id -> citing paper, from the store and from staged citations."""
        unknown = [o for o in observation_ids if o not in self._citing]
        found: dict[str, str] = self.tx.citing_papers(unknown) if unknown else {}
        found.update((o, self._citing[o]) for o in observation_ids if o in self._citing)
        return found

    def stream_versions(self, streams: Sequence[str]) -> dict[str, int]:
        """Current version of each stream, staged batches included."""
        found: dict[str, int] = self.tx.stream_versions(streams)
        found.update((s, self._versions[s]) for s in streams if s in self._versions)
        return found

    def insert(self, links: Sequence[ChainLink], checks: Sequence[CheckWorkRow]) -> None:
        """Stage a batch's events; they count once the batch returns (see `run`)."""
        self._job = (list(links), list(checks))

    # -- the group -----------------------------------------------------------------------

    def run(self, job: Any) -> Any:
        """Run one batch; keep what it staged only if it returned."""
        self._job = None
        try:
            result = job(self)
        except BaseException:
            self._job = None
            raise
        if self._job is not None:
            self._keep(*self._job)
            self._job = None
        return result

    def flush(self) -> None:
        """Write every staged event (one insert for the whole group); the caller commits."""
        if self._links:
            self.tx.insert(self._links, self._checks)
            self._links, self._checks = [], []

    def _keep(self, links: list[ChainLink], checks: list[CheckWorkRow]) -> None:
        if not links:
            return
        self._links.extend(links)
        self._checks.extend(checks)
        for link in links:
            e = link.event
            self._by_id[e.event_id] = e
            self._versions[e.stream] = e.stream_version
            if e.type == _CITATION:
                self._citing.setdefault(_OID.decode(e.data).observation_id, e.stream.removeprefix("paper:"))
        last = links[-1]
        self._head = (Head(last.event.seq, last.event.hash), last.recorded_us)


@contextmanager
def group(tx: AppendTx) -> Iterator[GroupTx]:
    """A GroupTx over `tx`, flushed when the block ends without an error."""
    g = GroupTx(tx)
    yield g
    g.flush()
