"""The server's alerting as background work of the app: one thread raises the alerts of new events
(woken by this process's commits, and every few seconds for appends made elsewhere: other workers, the
CLI), one runs an event loop that delivers the outbox to the watches' callbacks, each watch on its own
(woken by new alerts, by an attempt ending, else when the next retry is due). Neither runs on a
read-only server; both stop between two rounds on shutdown."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable

from api.alerts.webhooks import sender
from service.alerts.address_policy import AddressPolicy
from service.alerts.webhooks import DEADLINE_S
from service.ledger import Ledger

log = logging.getLogger("api.alerting")

POLL_S = 2.0  # a look at the head for appends this process did not make
STOP_TIMEOUT_S = 15.0


class _Wake:
    """Wakes the deliverer's event loop from any thread (a threading.Event cannot be awaited)."""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.event: asyncio.Event | None = None

    def set(self) -> None:
        """Wake the deliverer (nothing to do before its loop runs: it looks at the outbox first)."""
        loop, event = self.loop, self.event
        if loop is not None and event is not None:
            with contextlib.suppress(RuntimeError):  # its loop has closed: the deliverer has stopped
                loop.call_soon_threadsafe(event.set)


class Alerting:
    """The two threads and what wakes them."""

    def __init__(
        self,
        ledger: Ledger,
        backoff: float,
        allow: tuple[str, ...],
        on_result: Callable[[str], None] | None = None,
        deadline: float = DEADLINE_S,
    ) -> None:
        self.ledger = ledger
        self.backoff = backoff
        self.on_result = on_result
        self.deadline = deadline
        self.send = sender(AddressPolicy(allow), deadline)
        self.stop = threading.Event()
        self.raise_wake = threading.Event()
        self.deliver_wake = _Wake()
        self.threads: list[threading.Thread] = []

    def begin(self) -> None:
        """Start the two threads (again, after a stop: a test may run an app's lifespan twice)."""
        self.stop.clear()
        self.threads = [
            threading.Thread(target=self._raising, name="ledger-alerts", daemon=True),
            threading.Thread(target=self._delivering, name="ledger-webhooks", daemon=True),
        ]
        for t in self.threads:
            t.start()

    def committed(self) -> None:
        """An append of this process committed: raise its alerts now."""
        self.raise_wake.set()

    def _raising(self) -> None:
        while not self.stop.is_set():
            try:
                if self.ledger.alerts.raise_new():
                    self.deliver_wake.set()
            except Exception:  # a round that failed is tried again; the cursor did not move past it
                log.exception("raising alerts failed")
            self.raise_wake.wait(POLL_S)
            self.raise_wake.clear()
        self.ledger.ops.close_connection()

    def _delivering(self) -> None:
        try:
            asyncio.run(self._deliver())
        finally:
            self.ledger.ops.close_connection()

    async def _deliver(self) -> None:
        wake = asyncio.Event()
        self.deliver_wake.loop, self.deliver_wake.event = asyncio.get_running_loop(), wake
        deliverer = self.ledger.alerts.deliverer(self.send, self.backoff, self.deadline, self.on_result)
        await deliverer.run(wake, self.stop.is_set)


async def start(alerting: Alerting | None) -> Callable[[], Awaitable[None]]:
    """Start this process's alerting threads (none on a read-only server); returns its stop()."""
    if alerting is None:

        async def nothing() -> None:
            return None

        return nothing
    alerting.begin()

    async def stop_alerting() -> None:
        alerting.stop.set()
        alerting.raise_wake.set()
        alerting.deliver_wake.set()
        for t in alerting.threads:
            await asyncio.to_thread(t.join, STOP_TIMEOUT_S)

    return stop_alerting
