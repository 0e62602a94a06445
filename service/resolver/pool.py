"""Deciding on more than one core: the matcher run over batches in worker processes, each with its own
connection to the ledger and so its own catalogue. The flow (`run.resolve`) keeps selecting, comparing
and appending in the parent, in one order; a batch's decisions do not depend on which process made them,
since `resolve_many` keeps no state between calls."""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool
from types import TracebackType
from typing import TYPE_CHECKING, NamedTuple

from ledger.model.resolving import Decision, RefInput
from ledger.storage.interface import CatalogueTables
from service.children import start_context
from service.ledger import Ledger
from service.resolver.bounds import CHUNK, Cancelled, Gate
from service.resolver.defaults import Resolver, default_resolver
from service.resolver.run import Decide, Decided, Summary, resolve

if TYPE_CHECKING:
    from multiprocessing.synchronize import Event as ProcessEvent

_log = logging.getLogger("ledger.resolve")
WORKERS = min(2, os.cpu_count() or 1)  # two at most: each opens its own connection and catalogue
LOOK_S = 0.2  # how often a parent waiting on a worker looks whether its run was stopped
GRACE_S = 2.0  # how long stopped workers have to end by themselves before they are terminated


class _Worker(NamedTuple):
    """What a worker process decides with: the matcher, the run's stop flag and its own catalogue."""

    decide: Decide
    stop: ProcessEvent
    catalogue: CatalogueTables


# the worker process's own, set once as it starts
_worker: list[_Worker] = []


def _start(url: str, resolver: Resolver, stop: ProcessEvent) -> None:
    # a worker only searches the catalogue, then exits: it reads a SQLite file through a memory map
    ledger = Ledger(url, raise_alerts=False, mapped=True)
    # the parent brought the catalogue up to the head before the run: this reads it as it stands
    _worker.append(_Worker(resolver.decide, stop, resolver.catalogue(ledger)))


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cycle collector off for a while (in a process of one thread: it is the whole process's).
    Deciding a batch makes many small objects and no cycles, and the collector's passes over them cost
    about a sixth of the time."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _decide(refs: Sequence[RefInput]) -> list[Decision]:
    # in parts, looking between two whether the run was stopped: a stopped run's worker ends soon
    out: list[Decision] = []
    worker = _worker[0]
    with collector_paused():
        for i in range(0, len(refs), CHUNK):
            if worker.stop.is_set():
                raise Cancelled("the run was stopped")
            out.extend(worker.decide(refs[i : i + CHUNK], worker.catalogue))
    return out


def gated(decide: Decide, gate: Gate | None) -> Decide:
    """`decide` in parts of CHUNK references, each charged to the gate before it is decided (the same
    decisions: a reference's decision does not depend on the others of its batch)."""
    if gate is None:
        return decide

    def parts(refs: Sequence[RefInput], catalogue: CatalogueTables) -> list[Decision]:
        out: list[Decision] = []
        for i in range(0, len(refs), CHUNK):
            part = refs[i : i + CHUNK]
            gate.spend(len(part))
            out.extend(decide(part, catalogue))
        return out

    return parts


class _Decided:
    """A batch a worker decides, or, if the workers died meanwhile, the parent decides instead."""

    def __init__(
        self,
        future: Future[list[Decision]],
        instead: Callable[[], list[Decision]],
        cancel: threading.Event | None,
    ) -> None:
        self._future = future
        self._instead = instead
        self._cancel = cancel

    def result(self) -> list[Decision]:
        """The batch's decisions (Cancelled once the run was stopped, without waiting for them)."""
        try:
            if self._cancel is None:
                return self._future.result()
            while True:
                try:
                    return self._future.result(timeout=LOOK_S)
                except FutureTimeout:
                    if self._cancel.is_set():
                        raise Cancelled("the resolve was stopped") from None
        except BrokenProcessPool:
            return self._instead()


class DecidePool:
    """Worker processes that decide batches of references against one ledger's catalogue, each opening
    its own connection (a forked one never touches its parent's: it ends by os._exit).

    A worker that dies (killed, out of memory) breaks the pool; with `here` given, the batches it left
    and every later one are decided in the parent instead, so the run ends as it would have: a worker
    only decides, the parent appends, and the same batch gives the same decisions anywhere."""

    def __init__(
        self,
        url: str,
        resolver: Resolver,
        workers: int = WORKERS,
        here: Callable[[list[RefInput]], list[Decision]] | None = None,
        gate: Gate | None = None,
    ) -> None:
        self.workers = workers
        self._here = here
        self._broken = False
        self._gate = gate
        context = start_context()
        # set when the run is stopped: each worker looks at it between two parts of a batch
        self._stop = context.Event()
        self._pool = ProcessPoolExecutor(
            workers,
            mp_context=context,
            initializer=_start,
            initargs=(url, resolver, self._stop),
        )

    def submit(self, refs: Sequence[RefInput]) -> Decided:
        """Decide these references in a worker (in the parent once the workers have died), charged to
        the run's gate first (a pacing gate waits here for its budget)."""
        batch = list(refs)
        if self._gate is not None:
            self._gate.spend(len(batch))
        if not self._broken:
            cancel = None if self._gate is None else self._gate.cancel
            try:
                return _Decided(self._pool.submit(_decide, batch), lambda: self._instead(batch), cancel)
            except BrokenProcessPool:
                pass
        made: Future[list[Decision]] = Future()
        made.set_result(self._instead(batch))
        return made

    def _instead(self, batch: list[RefInput]) -> list[Decision]:
        if self._here is None:
            raise BrokenProcessPool("a resolver worker stopped")
        if not self._broken:
            self._broken = True
            _log.warning("a resolver worker stopped; the rest of the run is decided in this process")
        return self._here(batch)

    def close(self) -> None:
        """Stop the workers (after the batches submitted are decided)."""
        self._pool.shutdown(wait=True, cancel_futures=True)

    def stop(self) -> None:
        """Stop the workers now, their batches undecided: told first, terminated after GRACE_S."""
        self._stop.set()
        # the pool's own processes, read before shutdown forgets them
        processes = list(getattr(self._pool, "_processes", {}).values())
        self._pool.shutdown(wait=False, cancel_futures=True)
        for p in processes:
            p.join(GRACE_S)
        for p in processes:
            if p.is_alive():
                p.terminate()
                p.join(GRACE_S)

    def __enter__(self) -> DecidePool:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if kind is None:
            self.close()
        else:
            # a failed or stopped run waits for no batch
            self.stop()


def resolve_on_cores(
    ledger: Ledger,
    papers: Sequence[str] | None,
    resolver: Resolver,
    *,
    dry_run: bool,
    gate: Gate | None = None,
) -> Summary:
    """`run.resolve` against the resolver's catalogue of this ledger, deciding on WORKERS processes
    when the resolver is the ledger's own (a double passed in stays here) and the run is over a batch.
    With a gate, each part decided is charged to it first, and the run stops (Cancelled, its workers
    with it) once the gate is cancelled; what was appended before stays, each batch whole."""
    # brought up to the head once, here, before any worker reads it
    catalogue = resolver.catalogue(ledger)
    decide = gated(resolver.decide, gate)
    if WORKERS < 2 or resolver != default_resolver():
        return resolve(ledger, papers, decide=decide, catalogue=catalogue, method=resolver.method,
                       dry_run=dry_run)  # fmt: skip

    def here(refs: list[RefInput]) -> list[Decision]:
        return resolver.decide(refs, catalogue)

    with DecidePool(ledger.url, resolver, here=here, gate=gate) as pool:
        return resolve(ledger, papers, decide=decide, catalogue=catalogue, method=resolver.method,
                       dry_run=dry_run, workers=pool)  # fmt: skip
