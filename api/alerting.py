"""The server's alerting as background work of the app: one thread raises the alerts of new events
(woken by this process's commits, and every few seconds for appends made elsewhere: other workers, the
CLI), one delivers the outbox to the watches' callbacks (woken by new alerts, else when the next
retry is due). Neither runs on a read-only server; both stop between two rounds on shutdown."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Awaitable, Callable

from starlette.applications import Starlette

from ledger.instants import now_us
from service.alerts import AddressPolicy, raise_new
from service.ledger import Ledger
from service.webhooks import deliver_due

from . import metrics
from .webhooks import sender

log = logging.getLogger("api.alerting")

POLL_S = 2.0  # a look at the head for appends this process did not make
IDLE_S = 30.0  # the longest the deliverer sleeps with nothing due
STOP_TIMEOUT_S = 15.0


class Alerting:
    """The two threads and what wakes them."""

    def __init__(
        self,
        ledger: Ledger,
        backoff: float,
        allow: tuple[str, ...],
        on_result: Callable[[str], None] | None = None,
    ) -> None:
        self.ledger = ledger
        self.backoff = backoff
        self.on_result = on_result
        self.send = sender(AddressPolicy(allow))
        self.stop = threading.Event()
        self.raise_wake = threading.Event()
        self.deliver_wake = threading.Event()
        self.threads = [
            threading.Thread(target=self._raising, name="ledger-alerts", daemon=True),
            threading.Thread(target=self._delivering, name="ledger-webhooks", daemon=True),
        ]

    def committed(self) -> None:
        """An append of this process committed: raise its alerts now."""
        self.raise_wake.set()

    def _raising(self) -> None:
        while not self.stop.is_set():
            try:
                if raise_new(self.ledger.store):
                    self.deliver_wake.set()
            except Exception:  # a round that failed is tried again; the cursor did not move past it
                log.exception("raising alerts failed")
            self.raise_wake.wait(POLL_S)
            self.raise_wake.clear()
        self.ledger.store.close()

    def _delivering(self) -> None:
        while not self.stop.is_set():
            try:
                store = self.ledger.store
                while (
                    deliver_due(store, self.send, self.backoff, on_result=self.on_result)
                    and not self.stop.is_set()
                ):
                    pass
                due = self.ledger.store.alerts.next_due_us()
            except Exception:
                log.exception("delivering webhooks failed")
                due = None
            wait = IDLE_S if due is None else min(IDLE_S, max(0.0, (due - now_us()) / 1e6))
            self.deliver_wake.wait(wait)
            self.deliver_wake.clear()
        self.ledger.store.close()


async def start(app: Starlette) -> Callable[[], Awaitable[None]]:
    """Start this process's alerting threads (none on a read-only server); returns its stop()."""
    settings = app.state.settings
    if settings.read_only:

        async def nothing() -> None:
            return None

        return nothing
    alerting = Alerting(
        app.state.ledger,
        settings.webhook_backoff,
        settings.webhook_allow,
        metrics.webhook_delivery if settings.counting else None,
    )
    app.state.ledger.on_commit(alerting.committed)
    app.state.alerting = alerting
    for t in alerting.threads:
        t.start()

    async def stop_alerting() -> None:
        alerting.stop.set()
        alerting.raise_wake.set()
        alerting.deliver_wake.set()
        for t in alerting.threads:
            await asyncio.to_thread(t.join, STOP_TIMEOUT_S)

    return stop_alerting
