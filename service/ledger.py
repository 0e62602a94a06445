"""The Ledger: one object the CLI and the API share (append, import, record as of T, verify)."""

from __future__ import annotations

import os
import time
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, NamedTuple

from ledger.model.claims import refuse_claims
from ledger.model.codec import canonical, check_rules, check_types
from ledger.model.errors import NotFound
from ledger.model.events import Event
from ledger.model.facts import Fact, Head, ScrubPass, SourceHead
from ledger.model.importer import Batch, parse_input
from ledger.model.instants import MAX_US, SYSTEM_CLOCK, Clock
from ledger.model.record_types import Record
from ledger.storage.append import AppendResult, append_batch, needs_of
from ledger.storage.backend import Store, Unsupported, is_pg_url, open_store
from ledger.storage.backend import copy_ledger as copy_ledger
from ledger.storage.group_commit import GroupCommitter, GroupObserver
from ledger.storage.interface import CatalogueTables as CatalogueTables
from ledger.storage.interface import WriteTx
from ledger.storage.interface import side_path as side_path
from ledger.storage.projector import PROJECTIONS, READ_BY_RECORDS, SPANS, Projection, catch_up
from ledger.storage.state.alerts import Alert as Alert
from ledger.storage.verify import VerifyReport, verify_store
from ledger.storage.writers import WriteBy as WriteBy
from ledger.storage.writers import WriterRow as WriterRow
from ledger.storage.writers import by_cli as by_cli
from ledger.storage.writers import by_token as by_token
from ledger.storage.writers import writer_rows
from projections.diff import Changes, record_changes
from projections.readings import Sides, resolution_sides
from projections.record import Built, build_record
from projections.timeline import Timeline, build_timeline
from service.alerts.alerts import PaperNotice, alerts_in, raise_new
from service.collections import Changed, CollectionData, Collections
from service.ops.projector import max_lag


class Evidence:
    """A record, the head it was read at, and its inbound observations past the cap, page by page."""

    def __init__(self, built: Built, head: Head, reader: Any, broken: ScrubPass | None = None) -> None:
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
    the head both were read at, (when asked) the notices held as of T and the sources checked, and T."""

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
    """A record reader whose paper stream was read already, and whose sources' latest checks are read
    once for the record and its notices (the rest of its reads go to `reader`)."""

    def __init__(self, reader: Any, arxiv_id: str, own: list[Fact]) -> None:
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

    def __getattr__(self, name: str) -> Any:
        return getattr(self._reader, name)


# what a read asks of the chain alongside it: the last full walk, when it found the chain broken
Chain = Callable[[], ScrubPass | None]

# the ledgers this process appended to since their projections were last brought up (project_appended)
_APPENDED: weakref.WeakSet[Ledger] = weakref.WeakSet()

# who the appends of this context are made for (a request's token, the CLI's user): set by the door
_WRITING: ContextVar[WriteBy | None] = ContextVar("ledger_writing", default=None)


def forget_appended() -> None:
    """Forget the ledgers appended to so far: a command starting in a process that appended before it
    (a test run, a program calling the CLI) projects only the ledgers it appends to itself."""
    _APPENDED.clear()


def project_appended() -> None:
    """Bring the projections a record reads up to the head of every ledger this process appended to:
    what a command runs before it exits, so a ledger with no server never waits on a projector."""
    while _APPENDED:
        _APPENDED.pop().project(READ_BY_RECORDS)


@contextmanager
def writing_as(by: WriteBy) -> Iterator[None]:
    """Within the block, this thread's appends (through any Ledger) record `by` as their writer."""
    token = _WRITING.set(by)
    try:
        yield
    finally:
        _WRITING.reset(token)


def as_writer(by: WriteBy, work: Callable[[], Any]) -> Callable[[], Any]:
    """`work` run with `by` as the writer of its appends, in whatever thread calls it."""

    def run() -> Any:
        with writing_as(by):
            return work()

    return run


def default_db() -> str:
    """$LEDGER_DB (a path or a postgresql:// URL), else ./ledger.db."""
    return os.environ.get("LEDGER_DB") or "ledger.db"


class Ledger:
    """A ledger over one store."""

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        synchronous: str = "FULL",
        group_commit: bool = False,
        raise_alerts: bool = True,
        clock: Clock | None = None,
        mapped: bool = False,
        projector_max_lag: int | None = None,
        project_on_read: bool = True,
    ) -> None:
        db = path or default_db()
        # how far the projections a record reads may fall behind before an append projects the lag
        self._max_lag = max_lag() if projector_max_lag is None else projector_max_lag
        # reads that take the spans as stored (a timeline, a record's pages past the cap) bring them to
        # the head first, as a search does its index; a read-only server writes nothing
        self._project_on_read = project_on_read
        # what "now" is, in UTC microseconds: when an append is recorded, a record's default as_of, and
        # every instant the services of this ledger compare or record (tests pass one they advance)
        self.clock: Clock = clock or SYSTEM_CLOCK
        self.url = str(db)
        self._path = None if is_pg_url(db) else Path(db)
        # mapped: a SQLite file read through a memory map (a process that searches a large catalogue)
        self.store: Store = open_store(db, synchronous=synchronous, mapped=mapped)
        # concurrent writers (API threads) share transactions; a lone script needs no writer thread
        self._committer = GroupCommitter(self.store) if group_commit else None
        # called after each append of this process commits (e.g. to wake the API's SSE notifier)
        self._commit_listeners: list[Callable[[], None]] = []
        # the watches' alerts raised right after each append (a server raises them in a thread instead)
        self._raise_alerts = raise_alerts
        self._group_observer: GroupObserver | None = None

    @property
    def path(self) -> Path:
        """The SQLite file (Unsupported on PostgreSQL, which has no file)."""
        if self._path is None:
            raise Unsupported("a PostgreSQL ledger has no database file (its location is Ledger.url)")
        return self._path

    def close(self) -> None:
        """Stop the group-commit writer (if any) and close this thread's connection."""
        if self._committer is not None:
            self._committer.close()
        self.store.close()

    def on_commit(self, listener: Callable[[], None]) -> None:
        """Call `listener()`, in the committing thread, after each append through this object commits."""
        self._commit_listeners.append(listener)

    def on_group_commit(self, observer: GroupObserver) -> None:
        """Call `observer(batches, seconds)` after each write transaction of this object commits: how many
        batches shared it (1 without group commit) and its time from BEGIN to COMMIT."""
        self._group_observer = observer
        if self._committer is not None:
            self._committer.observer = observer

    def _committed(self) -> None:
        for listener in list(self._commit_listeners):
            listener()

    def head(self) -> Head:
        """The last seq and hash."""
        return self.store.head()

    @property
    def catalogue(self) -> CatalogueTables:
        """The resolver's catalogue (resolver-v1.md), first brought up to the head (a ledger that cannot
        be written is read as far as it reaches)."""
        catalogue = self.store.catalogue
        head = self.store.head().seq
        if catalogue.catalogue_indexed() < head:
            catalogue.index_catalogue(head)
        return catalogue

    def catalogue_work_data(self, dois: Sequence[str]) -> dict[str, bytes]:
        """The data (canonical bytes) of the latest work.observed of each of these normalised DOIs the
        ledger holds (what a works ingest compares with, so that a re-ingest appends nothing)."""
        self.catalogue  # noqa: B018 - brought up to the head first
        return self.store.catalogue.latest_work_data(dois)

    def append(
        self,
        events: Sequence[Event],
        expected_versions: Mapping[str, int] | None = None,
        places: Sequence[str] | None = None,
        *,
        typed: bool = False,
        within: Callable[[WriteTx, AppendResult], None] | None = None,
        checked_at: int | None = None,
        resolver_events: bool = False,
        by: WriteBy | None = None,
    ) -> AppendResult:
        """Validate every event, then append them as one atomic batch.

        `typed=True` skips re-checking types of events that a strict decoder already produced.
        `within(tx, result)` runs in the batch's transaction before it commits (what is written with the
        batch, e.g. an ingest's receipt); when it raises, nothing of the batch is written.
        `checked_at` says the events' rules were checked at that instant of this ledger's clock (a file's
        first pass): they are checked again only if the clock is now before it.
        `resolver_events`: the batch may hold resolutions claiming the ledger's resolver or a person
        (ledger/model/claims.py), as the resolver's own appends and a ledger being moved do; otherwise
        those are refused. `by` (else the context's `writing_as`) is recorded as the batch's writer, in
        its transaction (ledger/storage/writers.py); with neither, no writer is recorded.
        """
        if not resolver_events:
            refuse_claims(events, places)
        by = by or _WRITING.get()
        now = self.clock.now_us()
        # the only rule that moves with the clock is "not too far in the future": what held at an
        # earlier instant holds now
        if checked_at is None or now < checked_at:
            for i, e in enumerate(events):
                where = places[i] if places is not None else f"events[{i}]"
                if not typed:
                    check_types(e, where)
                check_rules(e, where, now)

        def batch(tx: Any) -> AppendResult:
            # the writer goes in the batch's own transaction: committed with its events or not at all
            got = append_batch(tx, events, expected_versions, places, clock=self.clock)
            if by is not None and got.appended:
                tx.save_writers(writer_rows((i.seq for i in got.items if not i.duplicate), by))
            return got

        # a batch with more to write takes a transaction of its own: a group's would stage its events
        if self._committer is not None and within is None:
            result: AppendResult = self._committer.submit(batch, needs_of(events, expected_versions))
        else:
            began = time.perf_counter()
            with self.store.write() as tx:
                result = batch(tx)
                if within is not None:
                    within(tx, result)
            if self._group_observer is not None:
                self._group_observer(1, time.perf_counter() - began)
        self._committed()
        if result.appended:
            _APPENDED.add(self)
            self._keep_up(result.head.seq)
        if self._raise_alerts and result.appended:
            raise_new(self.store, self.clock)
        return result

    @property
    def collections(self) -> Collections:
        """The ledger's collections (service/collections.py): their members as known at any instant."""
        return Collections(self.store, self.clock)

    def change_collection(self, data: CollectionData, by: WriteBy | None = None) -> Changed:
        """Append one change of a collection, `by` (else the context's writer) recorded as its writer."""
        return self.collections.change(lambda events: self.append(events, by=by), data)

    def _keep_up(self, head: int) -> None:
        """Back-pressure: an appender that finds the record's projections more than the allowed lag
        behind projects the lag itself (a reader folds at most that many events)."""
        if head - self.store.tables.projection_position(SPANS) > self._max_lag:
            catch_up(self.store, READ_BY_RECORDS)

    def _fresh(self) -> None:
        """Bring the record's projections to the head before a read that does not fold the events past
        them (left as they are on a ledger that cannot be written, or opened not to write)."""
        if self._project_on_read:
            tables = self.store.tables
            if tables.projection_position(SPANS) < self.store.head().seq:
                catch_up(self.store, READ_BY_RECORDS)

    def projection_positions(self) -> dict[str, int]:
        """Each projection's position: the last seq whose events its rows hold (verify checks them
        against the events up to there)."""
        return {p.name: p.position(self.store) for p in PROJECTIONS}

    def project(self, projections: Sequence[Projection] = PROJECTIONS) -> int:
        """Bring these projections (default: every one) up to the head; the lowest seq they reached (less
        than the head on a ledger that cannot be written)."""
        return catch_up(self.store, projections)

    def append_batch(self, batch: Batch, *, resolver_events: bool = False) -> AppendResult:
        """Append a parsed batch (record decomposition, NDJSON, or POST /events body); a record's
        refusals name the place in the record."""
        if not resolver_events:
            refuse_claims(batch.events, batch.places, record=batch.kind == "record")
        # the claims were checked just above, naming a record's own places: not again in append
        return self.append(
            batch.events, batch.expected_versions, batch.places, typed=True, resolver_events=True
        )

    def import_bytes(self, raw: bytes, *, force: bool = False, resolver_events: bool = False) -> AppendResult:
        """A record JSON or NDJSON envelopes -> one batch."""
        return self.append_batch(parse_input(raw, force=force), resolver_events=resolver_events)

    def record(
        self, arxiv_id: str, as_of_us: int | None = None, known_us: int | None = None
    ) -> tuple[Record, list[int], Head]:
        """The record as of T (default now) and K, the seqs of the events it shows, and the head read."""
        # no page past the cap is read: the record folds the events past the spans' position itself
        with self.evidence(arxiv_id, as_of_us, known_us, pages=False) as ev:
            return ev.built.record, ev.built.seqs, ev.head

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
        t = self.clock.now_us() if as_of_us is None else as_of_us
        with self.store.snapshot(t, known_us) as reader:
            head = reader.head()
            try:
                built = build_record(reader, arxiv_id, t)
            except NotFound as e:
                raise self._not_found(arxiv_id, e) from None
            yield Evidence(built, head, reader, None if chain is None else chain())

    def _not_found(self, arxiv_id: str, e: NotFound) -> NotFound:
        """The record's NotFound, saying when the paper was first observed (or that it never was)."""
        history = self.store.paper_history(arxiv_id)
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
        with self.store.snapshot(MAX_US) as reader:
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
        with `alerts`, the notices held as of T too (service.alerts.paper_alerts). Before the paper's
        first snapshot the record is None, or (`strict`) the record's NotFound is raised.
        `cached(head)` may give the timeline already read at that head; `chain()` (the last full walk,
        when broken) is read in the same read, so the page's head and its chain banner agree."""
        self._fresh()
        t = self.clock.now_us() if as_of_us is None else as_of_us
        with self.store.snapshot(MAX_US) as reader:
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
        with self.store.snapshot(to_us) as reader:
            head = reader.head()
            try:
                changed = record_changes(reader, self.store, arxiv_id, from_us, to_us)
            except NotFound as e:
                raise self._not_found(arxiv_id, e) from None
            return changed, head, None if chain is None else chain()

    def record_bytes(
        self, arxiv_id: str, as_of_us: int | None = None, known_us: int | None = None
    ) -> tuple[bytes, Head]:
        """The record as canonical JSON bytes, and the head it was computed from."""
        record, _, head = self.record(arxiv_id, as_of_us, known_us)
        return canonical(record), head

    def verify(self, progress: Callable[[int], None] | None = None) -> VerifyReport:
        """Recompute the whole chain, the check_works index, the stored Merkle nodes and the checkpoint."""
        return verify_store(self.store, progress)
