"""Reading records: a paper's record as of T with the events behind it, its timeline, and the papers,
envelopes and writers the pages list. The store stays inside; a door calls these methods."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import NamedTuple, Protocol

from ledger.model.errors import NotFound
from ledger.model.events import StoredEvent
from ledger.model.facts import CheckRow, Fact, Head, ScrubPass, SourceHead
from ledger.model.instants import MAX_US, Clock, format_recorded
from ledger.model.record_types import Record
from ledger.storage.interface import CheckHistoryRow, RecordReader, Store
from ledger.storage.writers import WriterRow
from projections.diff import Changes, record_changes
from projections.readings import Sides, resolution_sides
from projections.record import Built, build_record
from projections.timeline import Timeline, build_timeline
from service.alerts.paper_notices import PaperNotice, alerts_in
from service.collections import Collections
from service.screen import Page, Query, screen, screen_changes


class InboundPages(Protocol):
    """What an Evidence reads past the record: the seqs of its hidden inbound observations."""

    def inbound_seqs(self, arxiv_id: str, offset: int, limit: int) -> list[tuple[int, int]]: ...


class Evidence:
    """A record, the head it was read at, and its inbound observations past the cap, page by page."""

    def __init__(
        self, built: Built, head: Head, reader: InboundPages, broken: ScrubPass | None = None
    ) -> None:
        self.built = built
        self.head = head
        self._reader = reader
        # the last full walk when it found the chain broken (if the read asked), read with the record
        self.broken = broken

    @property
    def hidden(self) -> int:
        """Inbound observations the record counts but does not show."""
        return self.built.inbound_total - len(self.built.record.inbound)

    def hidden_seqs(self, offset: int, limit: int) -> list[int]:
        """The seqs of the citations and resolutions of hidden observations offset..offset+limit (in the
        record's order), sorted."""
        start = len(self.built.record.inbound) + offset
        pairs = self._reader.inbound_seqs(self.built.record.paper.arxiv_id, start, limit)
        return sorted(s for pair in pairs for s in pair)

    def all_seqs(self, page: int = 5000) -> list[int]:
        """Every seq the record was built from, sorted: the shown events and every hidden page."""
        seqs = set(self.built.seqs)
        for offset in range(0, self.hidden, page):
            seqs.update(self.hidden_seqs(offset, page))
        return sorted(seqs)


class PaperView(NamedTuple):
    """A paper as a page shows it: its timeline, its record as of T (None before its first snapshot),
    the head both were read at, (when asked) the notices in force as of T and the sources checked, and T."""

    timeline: Timeline
    record: Record | None
    head: Head
    held: tuple[list[PaperNotice], list[str]] | None
    as_of_us: int  # the instant read as of (now, when none was asked for)
    # each outbound reference's latest resolution from a source and from the ledger, as of T
    sides: dict[str, Sides] | None = None
    # the last full walk of the chain when it found it broken (asked for with `chain`), read with the rest
    broken: ScrubPass | None = None


class _OwnStream:
    """A record's reads as of T whose paper stream was read already, and whose sources' latest checks
    are read once for the record and its notices; the rest are `reader`'s."""

    def __init__(self, reader: RecordReader, arxiv_id: str, own: list[Fact]) -> None:
        self._reader = reader
        self._id = arxiv_id
        self._own = own
        self._heads: list[SourceHead] | None = None

    def source_heads(self) -> list[SourceHead]:
        """The latest standing check of every source as of T, read on first use."""
        if self._heads is None:
            self._heads = self._reader.source_heads()
        return self._heads

    def paper_stream(self, arxiv_id: str) -> list[Fact]:
        """The paper's own stream, as read (another paper's from the reader)."""
        return self._own if arxiv_id == self._id else self._reader.paper_stream(arxiv_id)

    def inbound(self, arxiv_id: str, limit: int) -> tuple[int, list[Fact]]:
        """The reader's inbound observations of the paper (see RecordReader.inbound)."""
        return self._reader.inbound(arxiv_id, limit)

    def snapshots(self, arxiv_ids: Sequence[str]) -> list[Fact]:
        """The reader's paper.observed events of these papers."""
        return self._reader.snapshots(arxiv_ids)

    def work_checks(self, works: Sequence[tuple[str, int]]) -> list[CheckRow]:
        """The reader's latest checks covering these works."""
        return self._reader.work_checks(works)

    def check_history(self, work_ids: Sequence[str]) -> list[CheckHistoryRow]:
        """The reader's standing checks covering these works."""
        return self._reader.check_history(work_ids)


# what a read asks of the chain alongside it: the last full walk, when it found the chain broken
Chain = Callable[[], ScrubPass | None]


class Records:
    """The reads a record, a paper page, the index and the integrity report make."""

    def __init__(
        self, store: Store, clock: Clock, fresh: Callable[[], None], collections: Collections
    ) -> None:
        self._store = store
        self._clock = clock
        self._collections = collections
        # brings the record's projections to the head before a read that takes them as stored
        self._fresh = fresh
        # reads are a local file's (microseconds): the event loop may do a small one itself
        self.local: bool = store.local

    @contextmanager
    def evidence(
        self,
        arxiv_id: str,
        as_of_us: int | None = None,
        known_us: int | None = None,
        *,
        pages: bool = True,
        chain: Chain | None = None,
    ) -> Iterator[Evidence]:
        """The record as of T (default now) and K, and a way to read every event it was built from, in
        one consistent read of the ledger (held until the block ends). The observations past the cap are
        read page by page from the spans as stored, so they are first projected to the head, unless
        `pages` is False (the record alone is wanted). `chain()` is read in the same read."""
        if pages:
            self._fresh()
        t = self._clock.now_us() if as_of_us is None else as_of_us
        with self._store.snapshot(t, known_us) as reader:
            head = reader.head()
            try:
                built = build_record(reader, arxiv_id, t)
            except NotFound as e:
                raise self._not_found(arxiv_id, e) from None
            yield Evidence(built, head, reader, None if chain is None else chain())

    def _not_found(self, arxiv_id: str, e: NotFound) -> NotFound:
        """The record's NotFound, saying when the paper was first observed (or that it never was)."""
        history = self._store.paper_history(arxiv_id)
        first = min(history, key=lambda f: (f.observed_us, f.seq)) if history else None
        msg = e.message + (
            f"; it was first observed at {first.observed_at}"
            if first
            else "; it has never been observed in this ledger"
        )
        return NotFound(
            msg, details={"arxiv_id": arxiv_id, "first_observed_at": first.observed_at if first else None}
        )

    def timeline(self, arxiv_id: str) -> tuple[Timeline, Head]:
        """The paper's timeline, known now (projections/timeline.py), and the head it was read at."""
        self._fresh()
        with self._store.snapshot(MAX_US) as reader:
            return build_timeline(reader, arxiv_id), reader.head()

    def timeline_and_record(
        self,
        arxiv_id: str,
        as_of_us: int | None = None,
        *,
        strict: bool = False,
        cached: Callable[[Head], Timeline | None] | None = None,
        alerts: bool = False,
        chain: Chain | None = None,
    ) -> PaperView:
        """The timeline and the record as of T (default now), in one consistent read, and its head;
        with `alerts`, the notices in force as of T (service.alerts.paper_notices.paper_alerts). Before
        the paper's first snapshot the record is None, or (`strict`) the record's NotFound is raised.
        `cached(head)` may give the timeline already read at that head; `chain()` (the last full walk,
        when broken) is read in the same read, so the page's head and its chain banner agree."""
        self._fresh()
        t = self._clock.now_us() if as_of_us is None else as_of_us
        with self._store.snapshot(MAX_US) as reader:
            head = reader.head()
            timeline = None if cached is None else cached(head)
            # the paper's stream read once: the record and the alerts take the part observed by T
            own = reader.paper_stream(arxiv_id)
            at_t = _OwnStream(reader.at(t), arxiv_id, [f for f in own if f.observed_us <= t])
            try:
                record: Record | None = build_record(at_t, arxiv_id, t).record
            except NotFound as e:
                if strict:
                    raise self._not_found(arxiv_id, e) from None
                record = None
            held = alerts_in(at_t, arxiv_id, at_t.paper_stream(arxiv_id)) if alerts else None
            if timeline is None:
                timeline = build_timeline(reader, arxiv_id, own)
            sides = resolution_sides(at_t.paper_stream(arxiv_id))
            broken = None if chain is None else chain()
            return PaperView(timeline, record, head, held, t, sides, broken)

    def changes(
        self, arxiv_id: str, from_us: int, to_us: int, *, chain: Chain | None = None
    ) -> tuple[Changes, Head, ScrubPass | None]:
        """What changed in the paper's record from FROM to TO (projections/diff.py), the head it was read
        at and what `chain()` says of the chain, all in one consistent read of the ledger."""
        with self._store.snapshot(to_us) as reader:
            head = reader.head()
            try:
                changed = record_changes(reader, self._store, arxiv_id, from_us, to_us)
            except NotFound as e:
                raise self._not_found(arxiv_id, e) from None
            return changed, head, None if chain is None else chain()

    def papers(self, limit: int = 100, offset: int = 0) -> list[str]:
        """The ledger's papers, most events first, a page at a time."""
        return self._store.papers(limit, offset)

    def paper_history(self, arxiv_id: str) -> list[Fact]:
        """Every observation of the paper itself, in seq order (empty: never observed)."""
        return self._store.paper_history(arxiv_id)

    def envelopes(self, seqs: Sequence[int]) -> list[StoredEvent]:
        """The stored envelopes of these seqs that the ledger holds, in seq order."""
        return self._store.envelopes(seqs)

    def writers_of(self, seqs: Iterable[int]) -> dict[int, WriterRow]:
        """The recorded writer of each of these seqs that has one."""
        return self._store.writers.writers_of(seqs)

    def screen(self, query: Query, page: str | None, limit: int) -> Page:
        """A page of the screen (service/screen.py `screen`)."""
        return screen(self._store, query, page, limit)

    def screen_changes(self, query: Query, from_us: int, page: str | None, limit: int) -> Page:
        """A page of what became flagged or cleared from `from_us` to the query's T."""
        return screen_changes(self._store, query, from_us, page, limit)

    def collection_members(self, name: str, known_us: int | None) -> frozenset[str]:
        """The papers of collection `name` as the ledger knew them at K (recorded time; None: now), as of
        the head now: the one place a screen asks for a collection's members. NotFound naming
        `collection` for one not made by then."""
        members = self._collections.members(name, known_us, upto_seq=self._store.head().seq)
        if members is None:
            when = "" if known_us is None else f" known at {format_recorded(known_us)}"
            raise NotFound(f"no collection {name[:80]!r}{when}", details={"collection": name[:80]})
        return members
