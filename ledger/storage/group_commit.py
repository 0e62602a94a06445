"""Group commit: concurrent appends share one transaction and one fsync, each batch still atomic."""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import TYPE_CHECKING

from ledger.storage.append import AppendResult, Needs
from ledger.storage.group_tx import group as staged

if TYPE_CHECKING:
    from ledger.storage.append import AppendTx as WriteTx
    from ledger.storage.interface import Store

# a batch's append, run in the group's transaction; its caller waits on the future for what it returned
Job = tuple[Callable[["WriteTx"], AppendResult], "Future[AppendResult]", Needs | None]
# (batches in the group, seconds from BEGIN to COMMIT): told after every committed group
GroupObserver = Callable[[int, float], None]

log = logging.getLogger("ledger.group_commit")


class GroupCommitter:
    """One writer thread; callers block until the transaction holding their batch has committed."""

    def __init__(self, store: Store, max_group: int = 512, max_wait: float = 0.001) -> None:
        self.store = store
        self.max_group = max_group
        # how long the writer waits for the callers the last group had, before committing fewer
        self.max_wait = max_wait
        self._last_group = 1
        self._queue: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        # called in the writer thread after each commit, its callers acknowledged (e.g. the API's metrics)
        self.observer: GroupObserver | None = None

    def submit(self, job: Callable[[WriteTx], AppendResult], needs: Needs | None = None) -> AppendResult:
        """Run `job(tx)` in the next group transaction; return its result once committed. `needs` names
        what it will look up, so the group looks up all of its jobs' at once."""
        future: Future[AppendResult] = Future()
        self._ensure_thread()
        self._queue.put((job, future, needs))
        return future.result()

    def close(self) -> None:
        """Stop the writer thread after the queued jobs."""
        with self._lock:
            if self._thread is not None:
                self._queue.put(None)
                self._thread.join()
                self._thread = None

    def _ensure_thread(self) -> None:
        with self._lock:
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._run, name="group-commit", daemon=True)
                self._thread.start()

    def _run(self) -> None:
        while True:
            first = self._queue.get()
            if first is None:
                self.store.close()
                return
            group, stop = self._gather(first)
            self._commit(group)
            if stop:
                self.store.close()
                return

    def _gather(self, first: Job) -> tuple[list[Job], bool]:
        """The jobs of one transaction: all queued ones, and the last group's size if they come soon.

        Callers acknowledged by the previous commit are still running their own code when the writer
        looks again; committing without them would cost a second fsync for the same concurrency, so
        the writer waits up to `max_wait` for as many jobs as recent groups had (one caller: no wait).
        """
        group = [first]
        deadline = 0.0
        # the callers of recent groups: the largest recent group, forgotten one caller per group
        want = self._last_group = max(self._last_group - 1, 1)
        while len(group) < self.max_group:
            try:
                nxt = self._queue.get_nowait()
            except queue.Empty:
                if len(group) >= want:
                    break
                now = time.monotonic()
                deadline = deadline or now + self.max_wait
                if now >= deadline:
                    break
                try:
                    nxt = self._queue.get(timeout=deadline - now)
                except queue.Empty:
                    break
            if nxt is None:
                self._last_group = max(self._last_group, len(group))
                return group, True
            group.append(nxt)
        self._last_group = max(self._last_group, len(group))
        return group, False

    def _commit(self, group: list[Job]) -> None:
        outcomes: list[tuple[Future[AppendResult], AppendResult | Exception]] = []
        began = time.perf_counter()
        try:
            with self.store.write() as tx, staged(tx) as gtx:
                gtx.prefetch([needs for _, _, needs in group if needs is not None])
                for job, future, _ in group:
                    try:
                        outcomes.append((future, gtx.run(job)))
                    except Exception as e:  # this batch alone is refused; the others go on
                        outcomes.append((future, e))
        except BaseException as e:  # the commit itself failed: nothing in the group is acknowledged
            for _, future, _ in group:
                if not future.done():
                    future.set_exception(e)
            return
        # acknowledge only now, after COMMIT returned
        for future, outcome in outcomes:
            if isinstance(outcome, Exception):
                future.set_exception(outcome)
            else:
                future.set_result(outcome)
        self._observe(len(group), time.perf_counter() - began)

    def _observe(self, batches: int, seconds: float) -> None:
        observer = self.observer
        if observer is None:
            return
        try:
            observer(batches, seconds)
        except Exception:  # an observer's fault must not stop the writer thread
            log.exception("the group-commit observer failed")
