"""What running a ledger asks of it: the pass log and the walks that fill it, the chain's status, the
projector, the status and table figures, and a copy into another ledger with its signed state. The
store stays inside."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from ledger.model.facts import Head, ScrubPass
from ledger.model.instants import Clock
from ledger.storage.backend import copy_ledger
from ledger.storage.interface import Store
from ledger.storage.projector import PROJECTIONS, Projection, catch_up
from ledger.tlog.checkpoint import Checkpointer
from service.ops.backup import copy_private
from service.ops.projector import run_projector
from service.ops.scrub import INTEGRITY, PassLog, chain_status, run_scrubber, scrub_pass
from service.ops.status import Status, read_status


class Operations:
    """The running of one ledger."""

    def __init__(self, store: Store, clock: Clock) -> None:
        self._store = store
        # when a walk starts and ends, a status is read and the projector's lease runs out
        self._clock = clock

    def passes(
        self, *, writable: bool = True, on_record: Callable[[ScrubPass], None] | None = None
    ) -> PassLog:
        """A log of full walks (kept in this process's memory when it may not write)."""
        return PassLog(self._store, self._clock, writable=writable, on_record=on_record)

    def chain_status(
        self,
        passes: PassLog,
        *,
        remember: bool = True,
        kind: str = INTEGRITY,
        progress: Callable[[int], None] | None = None,
        every: int = 10000,
    ) -> dict[str, Any]:
        """The chain part of an integrity report: walked from the last verified point, the rest vouched
        for by the last full walk (service/ops/scrub.py `chain_status`)."""
        return chain_status(self._store, passes, remember=remember, kind=kind, progress=progress, every=every)

    def scrub(
        self,
        passes: PassLog,
        *,
        pace: float = 1.0,
        progress: Callable[[int], None] | None = None,
        every: int = 10000,
    ) -> ScrubPass | None:
        """Walk the whole chain once from seq 1 and record the pass."""
        return scrub_pass(self._store, passes, pace=pace, progress=progress, every=every)

    def run_scrubber(
        self, passes: PassLog, interval_s: float, stop: threading.Event, *, since_us: int | None = None
    ) -> None:
        """Until `stop`: a paced walk whenever the last recorded one is `interval_s` old."""
        run_scrubber(self._store, passes, interval_s, stop, since_us=since_us)

    def run_projector(self, stop: threading.Event) -> None:
        """Until `stop`: follow the log with every projection while this process holds the lease."""
        run_projector(self._store, stop, clock=self._clock)

    def status(self, passes: PassLog | None = None) -> Status:
        """The ledger's status read from its database; `passes` adds a server's in-memory walks."""
        return read_status(self._store, self._clock, passes)

    def stats(self) -> dict[str, int]:
        """Rows in each table."""
        return self._store.stats()

    def project(self, projections: Sequence[Projection] = PROJECTIONS) -> int:
        """Bring these projections (default: every one) up to the head; the lowest seq they reached (less
        than the head on a ledger that cannot be written)."""
        return catch_up(self._store, projections)

    def projection_positions(self) -> dict[str, int]:
        """Each projection's position: the last seq whose events its rows hold (verify checks them
        against the events up to there)."""
        return {p.name: p.position(self._store) for p in PROJECTIONS}

    def copy_into(
        self, target: Operations, batch: int = 2000, progress: Callable[[int], None] | None = None
    ) -> Head:
        """Copy every event verbatim (same seq, recorded_at, hashes) into an empty ledger; its head."""
        return copy_ledger(self._store, target._store, batch=batch, progress=progress)

    def carry_side_state(self, target: Operations) -> list[str]:
        """Give the target the signing key and token file where it has none, and the last signed
        checkpoint when both sign with the same key (checked against the copied tree before it is kept)."""
        return carry_side_state(self._store, target._store)

    def close_connection(self) -> None:
        """Close this thread's connection (a thread of its own that ends)."""
        self._store.close()


def carry_side_state(src: Store, dst: Store) -> list[str]:
    """`Operations.carry_side_state` between two stores."""
    carried: list[str] = []
    for suffix in (".key", ".tokens"):
        origin, target = src.tree.side_file(suffix), dst.tree.side_file(suffix)
        if not target.exists() and copy_private(origin, target):
            carried.append(str(target))
    src_key, dst_key = Checkpointer.for_db(src).key_path, Checkpointer.for_db(dst).key_path
    same_key = src_key.exists() and dst_key.exists() and src_key.read_bytes() == dst_key.read_bytes()
    note = src.tree.last_checkpoint()
    if note is not None and same_key and dst.tree.last_checkpoint() is None:
        with dst.tree.signing():
            dst.tree.save_checkpoint(note)
        Checkpointer.for_db(dst).latest()  # refuses (ChainBroken) if the copy does not extend it
        carried.append("the last signed checkpoint")
    return carried
