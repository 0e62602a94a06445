"""Delivering alerts to their watches' callbacks, as GitHub and Stripe deliver webhooks.

The outbox (ledger/alert_store.py) holds every alert to deliver until it is delivered or given up,
so an alert is delivered at least once across crashes and restarts: a deliverer leases what is due,
POSTs each (the HTTP request is the door's: `Send`), and settles it in its own transaction. A non-2xx
answer, a refusal or a timeout is tried again after an exponential backoff with jitter (the first
delay LEDGER_WEBHOOK_BACKOFF, doubling up to an hour) for 24 hours from the first attempt.
"""

from __future__ import annotations

import hashlib
import hmac
import random
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, NamedTuple

from ledger.alert_store import DELIVERED, GAVE_UP, PENDING, Delivery, Due
from ledger.instants import format_recorded, now_us

if TYPE_CHECKING:
    from ledger.interface import Store

DEFAULT_BACKOFF_S = 10.0
MAX_DELAY_S = 3600.0
RETRY_FOR_S = 86_400.0
# a deliverer takes one entry at a time and holds it this long (a request's timeout and more): what a
# deliverer killed mid-request held is taken again by another, or after a restart, this much later
LEASE_S = 30.0
JITTER = (0.8, 1.2)  # each delay scaled by a random factor in this range: retries of many alerts spread
SIGNATURE = "Ledger-Signature"
ALERT_ID = "Ledger-Alert-Id"


class Sent(NamedTuple):
    """What one POST got: the status answered (None if none), the address connected to, why it failed."""

    status: int | None
    address: str | None
    error: str | None


# the door's HTTP POST: (url, body, headers) -> what happened
Send = Callable[[str, bytes, Mapping[str, str]], Sent]
FAILED = "failed"  # an attempt's outcome when its entry stays pending, to be tried again


def signature(secret: str, body: bytes) -> str:
    """`sha256=` and the hex HMAC-SHA256 of the body keyed by the watch's secret."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def headers_for(due: Due, body: bytes) -> dict[str, str]:
    """The headers an alert is POSTed with."""
    out = {"Content-Type": "application/json", ALERT_ID: due.alert_id, "User-Agent": "citation-ledger"}
    if due.secret:
        out[SIGNATURE] = signature(due.secret, body)
    return out


def delay_s(attempt: int, base: float, rng: random.Random | None = None) -> float:
    """Seconds before attempt `attempt + 1`: base doubling per attempt up to an hour, with jitter."""
    plain = min(base * 2 ** (attempt - 1), MAX_DELAY_S)
    return plain * (rng or random).uniform(*JITTER)


def deliver_due(
    store: Store,
    send: Send,
    base: float = DEFAULT_BACKOFF_S,
    rng: random.Random | None = None,
    on_result: Callable[[str], None] | None = None,
) -> int:
    """Lease the next entry due, POST it, settle it; returns how many were attempted (0 or 1).

    `on_result` hears each attempt's outcome once it is settled: delivered, failed (tried again
    later) or gave_up.
    """
    tables = store.alerts
    with tables.updating():
        due = tables.take_due(now_us(), int(LEASE_S * 1e6), limit=1)
    for d in due:
        body = d.body.encode()
        sent = send(d.callback_url, body, headers_for(d, body))
        now = now_us()
        attempt = d.attempts + 1
        if sent.status is not None and 200 <= sent.status < 300:
            state, next_us = DELIVERED, now
        else:
            next_us = now + int(delay_s(attempt, base, rng) * 1e6)
            state = GAVE_UP if next_us - d.first_us > RETRY_FOR_S * 1e6 else PENDING
        error = sent.error if sent.error or sent.status is None else f"answered {sent.status}"
        record = Delivery(0, d.alert_n, d.watch_id, attempt, format_recorded(now), sent.address, sent.status,
                          None if state == DELIVERED else error,
                          format_recorded(next_us) if state == PENDING else None)  # fmt: skip
        with tables.updating():
            tables.settle(d, state, next_us, record)
        if on_result is not None:
            on_result(FAILED if state == PENDING else state)
    return len(due)
