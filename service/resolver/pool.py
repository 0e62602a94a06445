"""Deciding on more than one core: the matcher run over batches in worker processes, each with its own
connection to the ledger and so its own catalogue. The flow (`run.resolve`) keeps selecting, comparing
and appending in the parent, in one order; a batch's decisions do not depend on which process made them,
since `resolve_many` keeps no state between calls."""

from __future__ import annotations

import contextlib
import gc
import logging
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any

from ledger.model.resolving import Decision, RefInput
from service.children import start_context
from service.ledger import Ledger
from service.resolver.defaults import Resolver, default_resolver
from service.resolver.run import Decided, Summary, resolve

_log = logging.getLogger("ledger.resolve")
WORKERS = min(2, os.cpu_count() or 1)  # the machine's two cores (issue 30)

_worker: dict[str, Any] = {}


def _start(url: str, resolver: Resolver) -> None:
    # a worker only searches the catalogue, then exits: it reads a SQLite file through a memory map
    ledger = Ledger(url, raise_alerts=False, mapped=True)
    _worker["decide"] = resolver.decide
    # the parent brought the catalogue up to the head before the run: this reads it as it stands
    _worker["catalogue"] = resolver.catalogue(ledger)


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
    with collector_paused():
        return list(_worker["decide"](refs, _worker["catalogue"]))


class _Decided:
    """A batch a worker decides, or, if the workers died meanwhile, the parent decides instead."""

    def __init__(self, future: Future[list[Decision]], instead: Callable[[], list[Decision]]) -> None:
        self._future = future
        self._instead = instead

    def result(self) -> list[Decision]:
        """The batch's decisions."""
        try:
            return self._future.result()
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
    ) -> None:
        self.workers = workers
        self._here = here
        self._broken = False
        self._pool = ProcessPoolExecutor(
            workers,
            mp_context=start_context(),
            initializer=_start,
            initargs=(url, resolver),
        )

    def submit(self, refs: Sequence[RefInput]) -> Decided:
        """Decide these references in a worker (in the parent once the workers have died)."""
        batch = list(refs)
        if not self._broken:
            try:
                return _Decided(self._pool.submit(_decide, batch), lambda: self._instead(batch))
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

    def __enter__(self) -> DecidePool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def resolve_on_cores(
    ledger: Ledger, papers: Sequence[str] | None, resolver: Resolver, *, dry_run: bool
) -> Summary:
    """`run.resolve` against the resolver's catalogue of this ledger, deciding on WORKERS processes
    when the resolver is the ledger's own (a double passed in stays here) and the run is over a batch."""
    # brought up to the head once, here, before any worker reads it
    catalogue = resolver.catalogue(ledger)
    if WORKERS < 2 or resolver != default_resolver():
        return resolve(ledger, papers, decide=resolver.decide, catalogue=catalogue, method=resolver.method,
                       dry_run=dry_run)  # fmt: skip

    def here(refs: list[RefInput]) -> list[Decision]:
        return resolver.decide(refs, catalogue)

    with DecidePool(ledger.url, resolver, here=here) as pool:
        return resolve(ledger, papers, decide=resolver.decide, catalogue=catalogue, method=resolver.method,
                       dry_run=dry_run, workers=pool)  # fmt: skip
