"""One group-commit transaction seen by each batch as if the earlier batches were already written.

The batches of a group stage their rows here; a batch that is refused raises before it stages
anything (append_batch inserts last), so nothing of it is kept and no savepoint is needed. The reads
an append makes (head, existing ids, citing papers, stream versions) answer from the store plus the
rows staged by earlier batches of the group, and all staged rows go to the store in one insert just
before COMMIT. A job sees only the append protocol (AppendTx).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TypeVar

from ledger.model.events import StoredEvent
from ledger.model.facts import Head
from ledger.storage.append import AppendTx, Needs, Rows
from ledger.storage.derived.spans import CITATION
from ledger.storage.sql import EventParams
from ledger.storage.writers import WriterRow

V = TypeVar("V")


class GroupTx:
    """The append protocol over a write transaction, with the group's staged rows laid over it."""

    def __init__(self, tx: AppendTx) -> None:
        self.tx = tx
        # what `prefetch` read for the whole group: each batch's lookups answer from it, one statement
        # each for the group instead of one for each batch (singles come in groups of up to 512)
        self._known: tuple[set[str], set[str], set[str]] = (set(), set(), set())
        self._stored: dict[str, StoredEvent] = {}
        self._stored_citing: dict[str, str] = {}
        self._stored_versions: dict[str, int] = {}
        self._head: tuple[Head, int] | None = None
        self._rows = Rows([], [], [])
        self._by_id: dict[str, EventParams] = {}  # event id -> its staged row
        self._citing: dict[str, str] = {}
        self._versions: dict[str, int] = {}
        self._job: Rows | None = None
        # who made each batch kept (ledger/storage/writers.py), written with the group's events
        self._writers: list[WriterRow] = []
        self._job_writers: list[WriterRow] = []

    def prefetch(self, needs: Sequence[Needs]) -> None:
        """Look up, in one statement each, what the group's batches will ask (before any stages)."""
        ids = sorted({i for n in needs for i in n.event_ids})
        oids = sorted({o for n in needs for o in n.observation_ids})
        streams = sorted({s for n in needs for s in n.streams})
        self._known = (set(ids), set(oids), set(streams))
        self._stored = self.tx.existing(ids) if ids else {}
        self._stored_citing = self.tx.citing_papers(oids) if oids else {}
        self._stored_versions = self.tx.stream_versions(streams) if streams else {}

    # -- the append protocol -------------------------------------------------------------

    def head(self) -> tuple[Head, int]:
        """The head after the batches staged so far (read from the store once per group)."""
        if self._head is None:
            self._head = self.tx.head()
        return self._head

    def existing(self, event_ids: Sequence[str]) -> dict[str, StoredEvent]:
        """Stored events under these ids, and those staged by earlier batches of the group."""
        staged = {i: _stored(self._by_id[i]) for i in event_ids if i in self._by_id}
        return _overlay(event_ids, self._known[0], self.tx.existing, self._stored, staged)

    def citing_papers(self, observation_ids: Sequence[str]) -> dict[str, str]:
        """observation_id -> citing paper, from the store and from staged citations."""
        return _overlay(
            observation_ids, self._known[1], self.tx.citing_papers, self._stored_citing, self._citing
        )

    def stream_versions(self, streams: Sequence[str]) -> dict[str, int]:
        """Current version of each stream, staged batches included."""
        return _overlay(
            streams, self._known[2], self.tx.stream_versions, self._stored_versions, self._versions
        )

    def insert(self, rows: Rows) -> None:
        """Stage a batch's events; they count once the batch returns (see `run`)."""
        self._job = rows

    def save_writers(self, rows: Sequence[WriterRow]) -> None:
        """Stage who made a batch; kept with its events, once the batch returns."""
        self._job_writers.extend(rows)

    # -- the group -----------------------------------------------------------------------

    def run(self, job: Callable[[GroupTx], V]) -> V:
        """Run one batch; keep what it staged only if it returned."""
        self._job, self._job_writers = None, []
        try:
            result = job(self)
        except BaseException:
            self._job, self._job_writers = None, []
            raise
        if self._job is not None:
            self._keep(self._job)
            self._job = None
        self._writers.extend(self._job_writers)
        self._job_writers = []
        return result

    def flush(self) -> None:
        """Write every staged event (one insert for the whole group); the caller commits."""
        if self._rows.events:
            self.tx.insert(self._rows)
            self._rows = Rows([], [], [])
        if self._writers:
            self.tx.save_writers(self._writers)  # type: ignore[attr-defined]
            self._writers = []

    def _keep(self, rows: Rows) -> None:
        if not rows.events:
            return
        self._rows.events.extend(rows.events)
        self._rows.keys.extend(rows.keys)
        self._rows.steps.extend(rows.steps)
        for row in rows.events:
            self._by_id[row[1]] = row
            self._versions[row[2]] = row[3]
        for step in rows.steps:
            if step.type == CITATION:
                assert step.citing is not None
                self._citing.setdefault(step.observation_id, step.citing)
        last = rows.events[-1]
        self._head = (Head(last[0], last[11]), last[8])


def _overlay(
    keys: Sequence[str],
    known: set[str],
    read: Callable[[list[str]], dict[str, V]],
    stored: Mapping[str, V],
    staged: Mapping[str, V],
) -> dict[str, V]:
    """What the store holds under these keys (read now only for those `prefetch` did not look up and
    the group did not stage), with what earlier batches of the group staged laid over it."""
    rest = [k for k in keys if k not in known and k not in staged]
    found = read(rest) if rest else {}
    found.update((k, stored[k]) for k in keys if k in stored and k not in staged)
    found.update((k, staged[k]) for k in keys if k in staged)
    return found


def _stored(row: EventParams) -> StoredEvent:
    """The envelope of a staged row (the parameters of the events INSERT)."""
    seq, event_id, stream, version, type_, observed_at, _, recorded_at, _, data, prev, h = row
    return StoredEvent(
        seq, event_id, stream, version, type_, observed_at, recorded_at, data.encode(), prev, h
    )


@contextmanager
def group(tx: AppendTx) -> Iterator[GroupTx]:
    """A GroupTx over `tx`, flushed when the block ends without an error."""
    g = GroupTx(tx)
    yield g
    g.flush()
