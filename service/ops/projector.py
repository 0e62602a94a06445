"""Who runs the projector (ledger/storage/projector.py), and how far behind it may fall.

A server's workers share one projector: each tries the lease row every `poll` seconds, and the one
holding it advances every projection a bounded step at a time. Each batch of a step checks and renews
the lease in its own transaction, so a long healthy step keeps it, a worker that dies hands over after
one lease's length, and a step that lost it (it outlasted the lease and another worker took over)
stops before its next write and says so in the log. A holder with nothing left to do lets its lease
run out, so a worker's request that must project (`project_leased`: an append past the allowed lag, a read
that projects first) takes it at once; while another holder works, the request waits for it instead,
so the server never runs two projectors at once. Outside a server the process that appended projects
itself (the CLI before it exits; any appender once the projector is more than
LEDGER_PROJECTOR_MAX_LAG events behind), so a ledger with no server never waits on one.
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from collections.abc import Sequence

from ledger.model.errors import LedgerError
from ledger.model.instants import Clock
from ledger.storage.interface import Store
from ledger.storage.projector import (
    BATCH,
    PROJECTIONS,
    Lease,
    LeaseLost,
    Logged,
    Projection,
    lapse_lease,
    lease_holder,
    lowest_position,
    release_lease,
    take_lease,
)

log = logging.getLogger("ledger.projector")

ENV_MAX_LAG = "LEDGER_PROJECTOR_MAX_LAG"
DEFAULT_MAX_LAG = 10_000
MAX_MAX_LAG = 1_000_000  # a record read folds at most this many events: past it, reads grow unbounded
LEASE_S = 30.0  # a holder that stops renewing is replaced after this long
POLL_S = 0.5  # how often a worker looks for new events (or for a lease to take)
STEP = 4 * BATCH  # events a holder applies to one projection between two renewals
WAIT_POLL_S = 0.02  # how often a request waiting on the holder looks at the positions again


class SettingError(LedgerError, ValueError):
    """A setting of the projector is not a value it takes."""

    code = "bad_setting"


def max_lag(raw: str | None = None) -> int:
    """LEDGER_PROJECTOR_MAX_LAG (events; default 10,000): how far a record's projections may fall
    behind the head before an appender projects the lag itself."""
    text = os.environ.get(ENV_MAX_LAG) if raw is None else raw
    if text is None or not text.strip():
        return DEFAULT_MAX_LAG
    value = int(text.strip()) if text.strip().isdigit() and len(text.strip()) <= 9 else 0
    if not 1 <= value <= MAX_MAX_LAG:
        raise SettingError(
            f"{ENV_MAX_LAG} must be a whole number of events from 1 to {MAX_MAX_LAG:,}, got {text!r}"
        )
    return value


def project_step(
    store: Store, projections: Sequence[Projection] = PROJECTIONS, lease: Lease | None = None
) -> bool:
    """Advance each projection at most STEP events toward the head, each batch under `lease` if given
    (LeaseLost once it is not held); whether any is still behind."""
    head = store.head().seq
    behind = False
    for p in projections:
        at = p.position(store)
        if at < head:
            reached = p.advance(store, min(head, at + STEP), lease=lease)
            behind = behind or reached < head
    return behind


def _behind(store: Store, projections: Sequence[Projection]) -> bool:
    """Whether any of these projections is behind the head (reads only)."""
    head = store.head().seq
    return any(p.position(store) < head for p in projections)


def run_projector(
    store: Store,
    stop: threading.Event,
    *,
    holder: str | None = None,
    poll_s: float = POLL_S,
    lease_s: float = LEASE_S,
    clock: Clock,
    projections: Sequence[Projection] = PROJECTIONS,
) -> None:
    """Until `stop` is set: while this process holds the lease, follow the log with every projection.
    Meant for its own thread; gives the lease up and closes that thread's connection at the end."""
    me = holder or f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
    lease = Lease(me, int(lease_s * 1_000_000), clock)
    try:
        while not stop.is_set():
            behind = False
            try:
                # an idle ledger costs reads only: the lease is a write transaction, taken when there
                # is something to project
                while (
                    _behind(store, projections)
                    and take_lease(store, me, clock.now_us(), lease.ttl_us)
                    and not stop.is_set()
                ):
                    behind = project_step(store, projections, lease)
                    if not behind:
                        # caught up: a request that must project takes the lease without waiting
                        lapse_lease(store, me, clock.now_us())
                        break
            except LeaseLost as lost:  # another worker follows the log now, or this one will again
                log.warning("%s", lost, extra={"fields": {"projector": "lease_lost", **(lost.details or {})}})
                behind = False
            except Exception:  # the database may be back later: keep the thread, say why, retry
                log.exception("projector failed; retrying later")
            stop.wait(0 if behind else poll_s)
    finally:
        try:
            release_lease(store, me)
        except Exception:  # the lease then expires on its own
            log.exception("projector lease not released")
        store.close()


def project_leased(
    store: Store,
    projections: Sequence[Logged],
    head: int,
    within: int,
    *,
    clock: Clock,
    lease_s: float = LEASE_S,
    poll_s: float = WAIT_POLL_S,
) -> bool:
    """A server worker's request that must project (back-pressure, a read that projects first): until
    these projections are within `within` events of `head`, either take the lease when it is free or run
    out and project them to `head` under it (each batch checking it, as the runner's do), or wait for
    its holder. Whether they got there: False once no position moved for two lease lengths (a holder
    alive but failing; a dead one's lease runs out first and is taken)."""
    # a name of its own: releasing it never drops the lease of this worker's runner
    me = f"{os.getpid()}-{uuid.uuid4().hex[:8]}"
    lease = Lease(me, int(lease_s * 1_000_000), clock)
    seen, since = -1, time.monotonic()
    while (at := lowest_position(store, projections)) < head - within:
        if at != seen:
            seen, since = at, time.monotonic()
        elif time.monotonic() - since > 2 * lease_s:
            log.warning("projections stuck at %d (head %d): the request goes on without them", at, head)
            return False
        free = lease_holder(store, clock.now_us()) is None  # a read first: a take is a write transaction
        if free and take_lease(store, me, clock.now_us(), lease.ttl_us):
            try:
                for p in projections:
                    p.advance(store, head, lease=lease)
            except LeaseLost as lost:  # outlasted its lease: the new holder goes on
                log.warning("%s", lost, extra={"fields": {"projector": "lease_lost", **(lost.details or {})}})
                continue
            finally:
                lapse_lease(store, me, clock.now_us())
            # a ledger that cannot be written stops short: it is not waited on again
            return lowest_position(store, projections) >= head - within
        time.sleep(poll_s)
    return True
