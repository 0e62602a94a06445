"""The Ledger: one object the CLI and the API share. It appends, imports, reads the record as of T and
verifies; the rest is done by the services it holds, one per capability (`records`, `log`, `alerts`,
`works`, `collections`, `intake`, `ops`), each keeping the store to itself. A door calls these and
never the store."""

from __future__ import annotations

import os
import time
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, TypeVar

from ledger.model.claims import refuse_claims
from ledger.model.codec import canonical, check_rules, check_types
from ledger.model.events import Event
from ledger.model.facts import Head
from ledger.model.importer import Batch, parse_input
from ledger.model.instants import SYSTEM_CLOCK, Clock
from ledger.model.record_types import Record
from ledger.storage.append import AppendResult as AppendResult
from ledger.storage.append import Encoded as Encoded
from ledger.storage.append import append_batch, needs_of
from ledger.storage.backend import Store, Unsupported, open_store
from ledger.storage.backend import is_pg_url as is_pg_url
from ledger.storage.group_commit import GroupCommitter, GroupObserver
from ledger.storage.interface import CatalogueTables, WriteTx
from ledger.storage.interface import side_path as side_path
from ledger.storage.projector import (
    READ_BY_RECORDS,
    catch_up,
    lowest_position,
)
from ledger.storage.state.alerts import Alert as Alert
from ledger.storage.verify import VerifyReport
from ledger.storage.writers import WriteBy as WriteBy
from ledger.storage.writers import WriterRow as WriterRow
from ledger.storage.writers import by_cli as by_cli
from ledger.storage.writers import by_token as by_token
from ledger.storage.writers import writer_rows
from service.alerts.watching import Alerts
from service.catalogue import Catalogue
from service.collections import Collections
from service.log import Log
from service.ops.operations import Operations
from service.ops.projector import max_lag, project_leased
from service.records import Chain as Chain
from service.records import Evidence as Evidence
from service.records import PaperView as PaperView
from service.records import Records
from service.writes import Intake

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
        _APPENDED.pop().ops.project(READ_BY_RECORDS)


@contextmanager
def writing_as(by: WriteBy) -> Iterator[None]:
    """Within the block, this thread's appends (through any Ledger) record `by` as their writer."""
    token = _WRITING.set(by)
    try:
        yield
    finally:
        _WRITING.reset(token)


T = TypeVar("T")


def as_writer(by: WriteBy, work: Callable[[], T]) -> Callable[[], T]:
    """`work` run with `by` as the writer of its appends, in whatever thread calls it."""

    def run() -> T:
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
        projector_lease: bool = False,
    ) -> None:
        db = path or default_db()
        # how far the projections a record reads may fall behind before an append projects the lag
        self._max_lag = max_lag() if projector_max_lag is None else projector_max_lag
        # reads that take the spans as stored (a timeline, a record's pages past the cap) bring them to
        # the head first, as a search does its index; a read-only server writes nothing
        self._project_on_read = project_on_read
        # a server's worker projects only under the projector's lease, or waits for its holder
        self._projector_lease = projector_lease
        # what "now" is, in UTC microseconds: when an append is recorded, a record's default as_of, and
        # every instant the services of this ledger compare or record (tests pass one they advance)
        self.clock: Clock = clock or SYSTEM_CLOCK
        self.url = str(db)
        self._path = None if is_pg_url(db) else Path(db)
        # mapped: a SQLite file read through a memory map (a process that searches a large catalogue).
        # The service floor's own: a door reaches it only through the services below (tests/test_doors.py)
        self.store: Store = open_store(db, synchronous=synchronous, mapped=mapped)
        # concurrent writers (API threads) share transactions; a lone script needs no writer thread
        self._committer = GroupCommitter(self.store) if group_commit else None
        # called after each append of this process commits (e.g. to wake the API's SSE notifier)
        self._commit_listeners: list[Callable[[], None]] = []
        # the watches' alerts raised right after each append (a server raises them in a thread instead)
        self._raise_alerts = raise_alerts
        self._group_observer: GroupObserver | None = None
        # the services, one per capability: what a door calls instead of the store
        # (each takes this ledger's clock: what it records or compares as now)
        self.collections = Collections(self.store, self.clock)
        self.records = Records(self.store, self.clock, self._fresh, self.collections)
        self.log = Log(self.store, self.clock)
        self.alerts = Alerts(self.store, self.clock)
        self.works = Catalogue(self.store)
        self.intake = Intake(self.collections, self._append_by, self._on_commit, self._on_group_commit)
        self.ops = Operations(self.store, self.clock)

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

    def _on_commit(self, listener: Callable[[], None]) -> None:
        self._commit_listeners.append(listener)

    def _on_group_commit(self, observer: GroupObserver) -> None:
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
        """The resolver's catalogue (resolver-v1.md), first brought up to the head (`works.tables()`)."""
        return self.works.tables()

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
        encoded: Sequence[Encoded] | None = None,
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
        `encoded`, one per event: what the check that passed these events made of them (their data's
        canonical bytes, ids and instants), appended as it is instead of made again.
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

        # the group's transaction is a whole write transaction (save_writers below), but
        # GroupCommitter.submit names only its append protocol
        def batch(tx: Any) -> AppendResult:
            # the writer goes in the batch's own transaction: committed with its events or not at all
            got = append_batch(tx, events, expected_versions, places, clock=self.clock, encoded=encoded)
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
            self.alerts.raise_new()
        return result

    def _append_by(self, events: Sequence[Event], by: WriteBy | None) -> AppendResult:
        return self.append(events, by=by)

    def _keep_up(self, head: int) -> None:
        """Back-pressure: an appender that finds the record's projections more than the allowed lag
        behind projects the lag itself (a reader folds at most that many events)."""
        if head - lowest_position(self.store, READ_BY_RECORDS) > self._max_lag:
            self._project(head, self._max_lag)

    def _fresh(self) -> None:
        """Bring the record's projections to the head before a read that does not fold the events past
        them (left as they are on a ledger that cannot be written, or opened not to write)."""
        if not self._project_on_read:
            return
        head = self.store.head().seq
        if lowest_position(self.store, READ_BY_RECORDS) < head:
            self._project(head, 0)

    def _project(self, head: int, within: int) -> None:
        """Bring the record's projections within `within` events of `head`: a server's worker under the
        lease (or by waiting for its holder), any other process itself."""
        if self._projector_lease:
            project_leased(self.store, READ_BY_RECORDS, head, within, clock=self.clock)
        else:
            catch_up(self.store, READ_BY_RECORDS)

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
        """The record as of T (default now) and K and a way to read every event it was built from, in one
        consistent read held until the block ends (`records.evidence`; `chain()` is read in it too)."""
        with self.records.evidence(arxiv_id, as_of_us, known_us, pages=pages, chain=chain) as ev:
            yield ev

    def record_bytes(
        self, arxiv_id: str, as_of_us: int | None = None, known_us: int | None = None
    ) -> tuple[bytes, Head]:
        """The record as canonical JSON bytes, and the head it was computed from."""
        record, _, head = self.record(arxiv_id, as_of_us, known_us)
        return canonical(record), head

    def verify(self, progress: Callable[[int], None] | None = None) -> VerifyReport:
        """Recompute the whole chain, the check_works index, the stored Merkle nodes and the checkpoint."""
        return self.log.verify(progress)
