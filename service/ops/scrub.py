"""Scrubbing, as trusted storage does it (ZFS scrub, Ceph deep-scrub): walk the whole chain again.

A resumed verify (what each integrity report does) re-hashes only the events after the last verified
point; an event before it that is edited in place, with no rehash, stays unseen. A scrub pass walks
every event from seq 1 again, a batch per short read with pauses between batches, and records what it
found in the scrub_passes table (in memory when the database cannot be written), so /healthz and every
integrity answer can say when the chain was last walked in full, by whom, and whether it held.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ledger.model.facts import ScrubPass
from ledger.model.instants import Clock, format_recorded
from ledger.storage.verify import VerifyReport, verify_store, walk_paced

if TYPE_CHECKING:
    from ledger.storage.backend import Store

SCRUB, VERIFY, INTEGRITY = "scrub", "verify", "integrity"
# Events per read: a few milliseconds of work, so appends and readers never wait on a scrub.
BATCH = 2000
# Share of wall time a server's scrub spends walking (it sleeps the rest): half of one core at most.
SERVER_PACE = 0.5
# Longest wait between two looks at whether a pass is due, so one recorded meanwhile by another
# process (or `ledger scrub`) is seen, and a failed look is retried.
MAX_WAIT_S = 60.0
MIN_WAIT_S = 0.01

log = logging.getLogger("service.scrub")


class PassLog:
    """Where full walks are recorded: the database, or this process's memory when it cannot write."""

    def __init__(
        self,
        store: Store,
        clock: Clock,
        *,
        writable: bool = True,
        on_record: Callable[[ScrubPass], None] | None = None,
    ) -> None:
        self.store = store
        # when a pass starts and ends, and when a pass is due
        self.clock = clock
        self.writable = writable
        # told of every pass recorded, wherever it went (e.g. the API's metrics)
        self.on_record = on_record
        self._memory: ScrubPass | None = None
        self._lock = threading.Lock()

    def record(self, p: ScrubPass) -> bool:
        """Record a pass; True if it went to the database, False if it is kept in memory only."""
        saved = self.writable and self.store.scrub.save_pass(p)
        if not saved:
            with self._lock:
                self._memory = p
        if self.on_record is not None:
            self.on_record(p)
        return saved

    def in_memory(self, p: ScrubPass) -> bool:
        """Whether `p` could not be written to the database and lives in this process only."""
        with self._lock:
            return self._memory is p

    def last(self) -> ScrubPass | None:
        """The pass that finished last: the database's or this process's own, whichever is later."""
        recorded = self.store.scrub.last_pass()
        with self._lock:
            mine = self._memory
        if recorded is None or (mine is not None and mine.finished_us > recorded.finished_us):
            return mine
        return recorded


def pass_of(kind: str, report: VerifyReport, started_us: int, finished_us: int) -> ScrubPass:
    """The record of a full walk (from seq 1) that produced `report`."""
    return ScrubPass(
        kind,
        format_recorded(started_us),
        started_us,
        format_recorded(finished_us),
        finished_us,
        report.events_checked,
        report.head.seq,
        report.ok,
        report.first_bad_seq,
        report.reason,
    )


def scrub_pass(
    store: Store,
    passes: PassLog,
    *,
    batch: int = BATCH,
    pace: float = 1.0,
    stop: threading.Event | None = None,
    progress: Callable[[int], None] | None = None,
    every: int = 10000,
) -> ScrubPass | None:
    """Walk the whole chain once from seq 1 and record the pass; None if `stop` was set meanwhile.

    `pace` in (0, 1] is the share of wall time spent walking: after a batch that took t seconds it
    waits t * (1 - pace) / pace. A good pass also moves verify's resume point (when writable).
    """
    if not 0 < pace <= 1:
        raise ValueError(f"pace {pace} is not in (0, 1]")
    stop = stop or threading.Event()
    mark = time.monotonic()

    def between() -> bool:
        nonlocal mark
        walked = time.monotonic() - mark
        if pace < 1:
            stop.wait(walked * (1 - pace) / pace)
        mark = time.monotonic()
        return not stop.is_set()

    clock = passes.clock
    started = clock.now_us()
    remember = clock if passes.writable else None
    report = walk_paced(
        store, batch=batch, between=between, remember=remember, progress=progress, every=every
    )
    if report is None:
        return None
    p = pass_of(SCRUB, report, started, clock.now_us())
    passes.record(p)
    return p


def due_in(last: ScrubPass | None, interval_s: float, now: int, since_us: int | None = None) -> float:
    """Seconds until the next pass is due (0 or less: now); with `since_us` (a server's start), a pass
    that began before it does not count: an edit made while no server ran is found at start-up."""
    if last is None or (since_us is not None and last.started_us < since_us):
        return 0.0
    return interval_s - (now - last.finished_us) / 1e6


def run_scrubber(
    store: Store,
    passes: PassLog,
    interval_s: float,
    stop: threading.Event,
    *,
    pace: float = SERVER_PACE,
    batch: int = BATCH,
    since_us: int | None = None,
) -> None:
    """Until `stop` is set: run a pass whenever the last recorded one is `interval_s` old or began before
    `since_us` (the server's start), unless another process holds the scrub lock. Meant for its own
    thread; closes that thread's connection at the end."""
    try:
        while not stop.is_set():
            try:
                wait = _scrub_if_due(store, passes, interval_s, stop, pace, batch, since_us)
            except Exception:  # the database may be back later: keep the thread, say why, retry
                log.exception("scrub failed; retrying later")
                wait = min(interval_s, MAX_WAIT_S)
            stop.wait(max(MIN_WAIT_S, wait))
    finally:
        store.close()


def _scrub_if_due(
    store: Store,
    passes: PassLog,
    interval_s: float,
    stop: threading.Event,
    pace: float,
    batch: int,
    since_us: int | None = None,
) -> float:
    """One look: scrub if due and no other process is at it; the seconds to wait before the next look."""
    wait = due_in(passes.last(), interval_s, passes.clock.now_us(), since_us=since_us)
    if wait > 0:
        return min(wait, MAX_WAIT_S)
    if not passes.writable:
        # its passes live in this process's memory, where no other process reads them: it walks for
        # itself, and takes no lock (that would leave the other processes of the server without a pass)
        p = scrub_pass(store, passes, batch=batch, pace=pace, stop=stop)
    else:
        with store.scrub.exclusive("scrub", create=True) as mine:
            # re-read under the lock: another process may have recorded a pass since the look above
            if not mine or due_in(passes.last(), interval_s, passes.clock.now_us(), since_us=since_us) > 0:
                return min(interval_s, MAX_WAIT_S)
            p = scrub_pass(store, passes, batch=batch, pace=pace, stop=stop)
    if p is not None and not p.ok:
        log.error("scrub: the chain is broken at seq %s: %s", p.first_bad_seq, p.reason)
    return min(interval_s, MAX_WAIT_S)


def chain_status(
    store: Store,
    passes: PassLog,
    *,
    remember: bool = True,
    kind: str = INTEGRITY,
    progress: Callable[[int], None] | None = None,
    every: int = 10000,
) -> dict[str, Any]:
    """The chain part of an integrity report (and of `ledger verify --resume`): what this call walked,
    what it trusted and on what grounds.

    It walks from the last verified point; what lies before that point is vouched for by the last
    recorded full walk, which this names. With none recorded, this call walks everything itself (and
    records that, as `kind`). `ok` is this walk's result and the last full walk's: a break either found
    is named.
    """
    at = passes.clock if remember else None
    last = passes.last()
    if last is None:
        started = passes.clock.now_us()
        report = verify_store(store, progress, remember=at, every=every)
        last = pass_of(kind, report, started, passes.clock.now_us())
        passes.record(last)
    else:
        report = verify_store(store, progress, resume=True, remember=at, every=every)
    out = report.to_dict()
    out["last_full_walk"] = last.to_dict()
    if not last.ok and last.first_bad_seq is not None:
        earlier = report.first_bad_seq is None or last.first_bad_seq < report.first_bad_seq
        if earlier:
            out["ok"] = False
            out["first_bad_seq"] = last.first_bad_seq
            out["reason"] = (
                f"the last full walk of the chain ({last.kind}, finished at {last.finished_at}) found it "
                f"broken at seq {last.first_bad_seq}: {last.reason}"
            )
    return out
