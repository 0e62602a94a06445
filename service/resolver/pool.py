"""Deciding on more than one core: the matcher run over batches in worker processes, each with its own
connection to the ledger and so its own catalogue. The flow (`run.resolve`) keeps selecting, comparing
and appending in the parent, in one order; a batch's decisions do not depend on which process made them,
since `resolve_many` keeps no state between calls."""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
import threading
from collections.abc import Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

from ledger.model.resolving import Decision, RefInput
from service.ledger import Ledger
from service.resolver.defaults import Resolver, default_resolver
from service.resolver.run import Summary, resolve

WORKERS = min(2, os.cpu_count() or 1)  # the machine's two cores (issue 30)

_worker: dict[str, Any] = {}


def _start(url: str, resolver: Resolver) -> None:
    ledger = Ledger(url, raise_alerts=False)
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


def _context() -> multiprocessing.context.BaseContext:
    """Fork from a process of one thread (the CLI): a worker starts at once, its imports done. From one
    of several (a server), spawn: a forked child would inherit locks other threads hold."""
    one = threading.active_count() == 1 and "fork" in multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if one else "spawn")


class DecidePool:
    """Worker processes that decide batches of references against one ledger's catalogue, each opening
    its own connection (a forked one never touches its parent's: it ends by os._exit)."""

    def __init__(self, url: str, resolver: Resolver, workers: int = WORKERS) -> None:
        self.workers = workers
        self._pool = ProcessPoolExecutor(
            workers,
            mp_context=_context(),
            initializer=_start,
            initargs=(url, resolver),
        )

    def submit(self, refs: Sequence[RefInput]) -> Future[list[Decision]]:
        """Decide these references in a worker."""
        return self._pool.submit(_decide, list(refs))

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
    with DecidePool(ledger.url, resolver) as pool:
        return resolve(ledger, papers, decide=resolver.decide, catalogue=catalogue, method=resolver.method,
                       dry_run=dry_run, workers=pool)  # fmt: skip
