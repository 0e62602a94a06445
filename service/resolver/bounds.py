"""Bounds on resolving for a shared server (docs/resolver.md "Bounds"): at most a set number of resolves
at once across every process of a ledger (slots leased in its database), each run stopped when its
client is gone, and each token's references examined paid from a budget that refills by the minute.

A slot is a row its process beats every few seconds; a row not beaten for STALE_S is taken as its
process gone (killed, out of memory) and freed, so a dead process never holds a slot for ever.
"""

from __future__ import annotations

import contextlib
import threading
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from service.ledger import Ledger

BEAT_S = 3.0  # how often a run holding a slot says it is alive
STALE_S = 30.0  # a slot not beaten for this long is freed: its process is gone
WINDOW_S = 60.0  # a budget saves up to one minute's worth of references
BUSY_RETRY_S = 5  # what a refusal for want of a slot asks the client to wait
RETAKE_S = 1.0  # how often a paced job waiting for a slot again looks for one
CHUNK = 100  # references decided between two looks at the budget and the client


class Cancelled(Exception):
    """The run was stopped: its client went away (or the server is stopping)."""


class Busy(Exception):
    """Every resolve slot is held; retry in `retry_after_s`."""

    def __init__(self, most: int, retry_after_s: float) -> None:
        super().__init__(f"{most} resolves run already (the most at once)")
        self.most = most
        self.retry_after_s = retry_after_s


class OverBudget(Exception):
    """The token spent its budget of references examined; it refills in `retry_after_s`."""

    def __init__(self, per_minute: int, retry_after_s: float) -> None:
        super().__init__(f"this token examined more than its {per_minute} references a minute")
        self.per_minute = per_minute
        self.retry_after_s = retry_after_s


@dataclass(frozen=True)
class Limits:
    """How much resolving a server allows: resolves at once (all processes), references examined per
    minute per token (0: no budget)."""

    at_once: int
    per_minute: int


def _cost_us(references: int, per_minute: int) -> int:
    """What `references` cost of a budget of `per_minute`, as time it takes to refill."""
    return references * 60_000_000 // per_minute


class Gate:
    """What one run checks as it goes: whether it was cancelled, and its token's budget. A gate that
    paces (a background job) waits, before each part, for its token to be out of debt; one that does
    not (a request, admitted while its token was within budget) runs on, leaving the token in debt."""

    def __init__(
        self,
        ledger: Ledger,
        owner: str,
        per_minute: int,
        *,
        pace: bool,
        cancel: threading.Event | None = None,
    ) -> None:
        self.ledger = ledger
        self.owner = owner
        self.per_minute = per_minute
        self.pace = pace
        self.cancel = cancel or threading.Event()
        self.examined = 0  # references charged so far
        self.paced_s = 0.0  # time spent waiting for the budget
        # the slot the run holds: a pacing gate gives it up while it waits, for others to run
        self.lease: Lease | None = None

    def check(self) -> None:
        """Raise Cancelled once the run was told to stop."""
        if self.cancel.is_set():
            raise Cancelled("the resolve was stopped: its client went away")

    def spend(self, references: int) -> None:
        """Charge `references` about to be examined. A pacing gate first waits while its token is in
        debt; then, as a request is, the references are charged whole (debt or not)."""
        self.check()
        if self.per_minute:
            wait = over_budget(self.ledger, self.owner, self.per_minute)
            if self.pace and wait > 0:
                self.paced_s += wait
                if self.lease is not None:
                    self.lease.pause()
                self.cancel.wait(wait)
                self.check()
                if self.lease is not None:
                    self.lease.resume(self.cancel)
            cost = _cost_us(references, self.per_minute)
            self.ledger.store.jobs.spend(self.owner, cost, self.ledger.clock.now_us())
        self.examined += references


def over_budget(ledger: Ledger, owner: str, per_minute: int) -> float:
    """Seconds until `owner` is within its budget again; 0 when it is now (or there is no budget)."""
    if not per_minute:
        return 0.0
    paid = ledger.store.jobs.paid_by(owner)
    return 0.0 if paid is None else max(0.0, (paid - ledger.clock.now_us()) / 1e6 - WINDOW_S)


def admit(ledger: Ledger, owner: str, limits: Limits) -> None:
    """Refuse (OverBudget) a token whose budget is spent: a request runs only from within it."""
    wait = over_budget(ledger, owner, limits.per_minute)
    if wait > 0:
        raise OverBudget(limits.per_minute, wait)


class Lease:
    """One of the `most` resolve slots of a ledger, held by one run (Busy when all are held); beaten
    in the background every BEAT_S with the references its run examined, until freed."""

    def __init__(
        self, ledger: Ledger, owner: str, most: int, progress: Callable[[], int] = lambda: 0
    ) -> None:
        self._ledger = ledger
        self._progress = progress
        self.holder = str(uuid.uuid4())
        self._owner = owner
        self._most = most
        self._stop = threading.Event()
        self._beating: threading.Thread | None = None
        if not self._take():
            raise Busy(most, BUSY_RETRY_S)

    def _take(self) -> bool:
        now = self._ledger.clock.now_us()
        jobs = self._ledger.store.jobs
        return (
            jobs.take_slot(self._most, self.holder, self._owner, now, now - round(STALE_S * 1e6)) is not None
        )

    def beat_in_background(self) -> None:
        """Beat the slot from a thread of its own until it is freed."""
        stop = self._stop = threading.Event()

        def beat() -> None:
            while not stop.wait(BEAT_S):
                self._ledger.store.jobs.beat_slot(self.holder, self._ledger.clock.now_us(), self._progress())

        self._beating = threading.Thread(target=beat, name="resolve-slot-beat", daemon=True)
        self._beating.start()

    def free(self) -> None:
        """Give the slot back (the run is over, or waits)."""
        self._stop.set()
        if self._beating is not None:
            self._beating.join()
            self._beating = None
        self._ledger.store.jobs.free_slot(self.holder)

    def pause(self) -> None:
        """Give the slot back while the run waits for its budget."""
        self.free()

    def resume(self, cancel: threading.Event) -> None:
        """Take a slot again, waiting for one to be free (Cancelled if told to stop meanwhile)."""
        while not self._take():
            if cancel.wait(RETAKE_S):
                raise Cancelled("the resolve was stopped")
        self.beat_in_background()


@contextlib.contextmanager
def slot(ledger: Ledger, gate: Gate, most: int) -> Iterator[Lease]:
    """Hold one of the `most` resolve slots while the block runs (Busy when all are held)."""
    lease = Lease(ledger, gate.owner, most, lambda: gate.examined)
    lease.beat_in_background()
    try:
        yield lease
    finally:
        lease.free()
