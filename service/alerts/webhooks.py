"""Delivering alerts to their watches' callbacks, as the Standard Webhooks specification describes.

The outbox (ledger/storage/state/alerts.py) holds every alert to deliver until it is delivered or given up,
so an alert is delivered at least once across crashes and restarts: a deliverer leases what is due,
POSTs each (the HTTP request is the door's: `Send`), and settles it in its own transaction. A non-2xx
answer, a refusal, an error of any kind or an attempt past its deadline is tried again after an
exponential backoff with jitter (the first delay LEDGER_WEBHOOK_BACKOFF, doubling up to an hour) for
24 hours from the first attempt.

Watches are delivered independently: each has at most one attempt in flight, a few attempts run at
once, and every attempt has a wall-clock deadline, so a slow or broken receiver delays only itself.

Each delivery carries the Standard Webhooks headers (`webhook-id`: the alert's id, `webhook-timestamp`:
when this attempt was signed, `webhook-signature`: `v1,` and the base64 HMAC-SHA256 of
`id.timestamp.body`), so a receiver verifies it with any Standard Webhooks library and refuses replays.
A watch whose secret was rotated is signed under both secrets until the grace ends (the header holds
several signatures, space-separated, as the specification allows), so a receiver holding either verifies.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import inspect
import logging
import random
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING, NamedTuple

from standardwebhooks import Webhook

from ledger.model.instants import Clock, format_recorded
from ledger.storage.state.alerts import DELIVERED, GAVE_UP, PENDING, Delivery, Due
from service.alerts.secrets import secret_key

if TYPE_CHECKING:
    from ledger.storage.interface import Store

log = logging.getLogger("service.webhooks")

DEFAULT_BACKOFF_S = 10.0
MAX_DELAY_S = 3600.0
RETRY_FOR_S = 86_400.0
DEADLINE_S = 10.0  # one attempt's whole time: name resolution, connecting, TLS, the request, the answer
# a deliverer holds an entry this long (past an attempt's deadline and its settling): what a deliverer
# killed mid-request held is taken again by another, or after a restart, this much later
LEASE_S = 30.0
MAX_IN_FLIGHT = 16  # attempts in flight at once, one per watch
IDLE_S = 30.0  # the longest the deliverer sleeps with nothing due
# an entry due but not taken (its watch busy, or leased elsewhere) is looked for again this often
RECHECK_S = 1.0
MAX_ERROR = 500  # characters of an attempt's error kept (an exception's text can be long)
JITTER = (0.8, 1.2)  # each delay scaled by a random factor in this range: retries of many alerts spread
SIGNATURE = "Ledger-Signature"
ALERT_ID = "Ledger-Alert-Id"
WEBHOOK_ID, WEBHOOK_TIMESTAMP, WEBHOOK_SIGNATURE = "webhook-id", "webhook-timestamp", "webhook-signature"


class Sent(NamedTuple):
    """What one POST got: the status answered (None if none), the address connected to, why it failed."""

    status: int | None
    address: str | None
    error: str | None


# the door's HTTP POST: (url, body, headers) -> what happened (a coroutine; a plain function is run inline)
Send = Callable[[str, bytes, Mapping[str, str]], Awaitable[Sent] | Sent]
FAILED = "failed"  # an attempt's outcome when its entry stays pending, to be tried again


def signature(secret: str, body: bytes) -> str:
    """`Ledger-Signature`: `sha256=` and the hex HMAC-SHA256 of the body keyed by the secret's UTF-8."""
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def standard_signature(secret: str, msg_id: str, timestamp_s: int, body: bytes) -> str:
    """`webhook-signature`: `v1,` and the base64 HMAC-SHA256 of `id.timestamp.body` (Standard Webhooks)."""
    at = datetime.fromtimestamp(timestamp_s, UTC)
    return Webhook(secret_key(secret)).sign(msg_id, at, body.decode())


def headers_for(due: Due, body: bytes, at_us: int) -> dict[str, str]:
    """The headers an attempt is POSTed with, signed at `at_us` (the attempt's now: each retry gets a
    fresh timestamp), under the old secret too while a rotation's grace lasts."""
    stamp = at_us // 1_000_000
    out = {
        "Content-Type": "application/json",
        ALERT_ID: due.alert_id,
        "User-Agent": "citation-ledger",
        WEBHOOK_ID: due.alert_id,
        WEBHOOK_TIMESTAMP: str(stamp),
    }
    if due.secret:
        out[SIGNATURE] = signature(due.secret, body)
        signatures = [standard_signature(due.secret, due.alert_id, stamp, body)]
        if due.old_secret and due.old_until_us is not None and at_us < due.old_until_us:
            signatures.append(standard_signature(due.old_secret, due.alert_id, stamp, body))
        out[WEBHOOK_SIGNATURE] = " ".join(signatures)
    return out


def delay_s(attempt: int, base: float, rng: random.Random | None = None) -> float:
    """Seconds before attempt `attempt + 1`: base doubling per attempt up to an hour, with jitter."""
    plain = min(base * 2 ** (attempt - 1), MAX_DELAY_S)
    return plain * (rng or random).uniform(*JITTER)


async def attempt(due: Due, send: Send, clock: Clock, deadline_s: float = DEADLINE_S) -> Sent:
    """POST one entry, signed at `clock`'s now, within `deadline_s` of wall-clock time; whatever
    happens is a Sent, never a raise."""
    body = due.body.encode()

    async def post() -> Sent:
        sent = send(due.callback_url, body, headers_for(due, body, clock.now_us()))
        return await sent if inspect.isawaitable(sent) else sent

    try:
        # asyncio.timeout keeps a cancellation that comes as the answer does (wait_for on 3.11 does not)
        async with asyncio.timeout(deadline_s):
            return await post()
    except TimeoutError:
        return Sent(None, None, f"no whole answer within {deadline_s:g} s: abandoned")
    except Exception as e:  # a callback must not stall the outbox: whatever it raises settles the attempt
        return Sent(None, None, f"{type(e).__name__}: {e}"[:MAX_ERROR])


def settle(
    store: Store,
    clock: Clock,
    due: Due,
    sent: Sent,
    base: float = DEFAULT_BACKOFF_S,
    rng: random.Random | None = None,
) -> str:
    """Record an attempt and what follows it; returns delivered, failed (tried again later) or gave_up."""
    now = clock.now_us()
    tries = due.attempts + 1
    if sent.status is not None and 200 <= sent.status < 300:
        state, next_us = DELIVERED, now
    else:
        next_us = now + int(delay_s(tries, base, rng) * 1e6)
        state = GAVE_UP if next_us - due.first_us > RETRY_FOR_S * 1e6 else PENDING
    error = sent.error if sent.error or sent.status is None else f"answered {sent.status}"
    record = Delivery(0, due.alert_n, due.watch_id, tries, format_recorded(now), sent.address, sent.status,
                      None if state == DELIVERED else (error or "failed")[:MAX_ERROR],
                      format_recorded(next_us) if state == PENDING else None)  # fmt: skip
    tables = store.alerts
    with tables.updating():
        tables.settle(due, state, next_us, record)
    return FAILED if state == PENDING else state


@dataclass
class Deliverer:
    """Delivers the outbox from one event loop: watches independently, one attempt in flight per watch,
    at most `cap` at once, each abandoned at its deadline and settled whatever happened."""

    store: Store
    clock: Clock
    send: Send
    base: float = DEFAULT_BACKOFF_S
    deadline_s: float = DEADLINE_S
    cap: int = MAX_IN_FLIGHT
    on_result: Callable[[str], None] | None = None
    rng: random.Random | None = None
    in_flight: dict[str, asyncio.Task[str]] = field(default_factory=dict, init=False)  # watch id -> attempt

    def __post_init__(self) -> None:
        # the lease outlasts the deadline and the settling after it, whatever the deadline is
        self.lease_us = int(max(LEASE_S, 2 * self.deadline_s + 5) * 1e6)

    def start_due(self) -> int:
        """Lease what is due of the watches with no attempt in flight (up to the cap) and start it."""
        room = self.cap - len(self.in_flight)
        if room <= 0:
            return 0
        tables = self.store.alerts
        with tables.updating():
            due = tables.take_due(self.clock.now_us(), self.lease_us, room, busy=sorted(self.in_flight))
        for d in due:
            self.in_flight[d.watch_id] = asyncio.get_running_loop().create_task(self._deliver(d))
        return len(due)

    async def _deliver(self, due: Due) -> str:
        try:
            sent = await attempt(due, self.send, self.clock, self.deadline_s)
            result = settle(self.store, self.clock, due, sent, self.base, self.rng)
        except Exception:  # not settled (the database failed): its lease ends and it is taken again
            log.exception("settling a webhook attempt failed")
            return FAILED
        finally:
            self.in_flight.pop(due.watch_id, None)
        if self.on_result is not None:
            self.on_result(result)
        return result

    async def once(self) -> int:
        """One pass: start what is due now and wait for those attempts; returns how many were made."""
        started = self.start_due()
        await asyncio.gather(*self.in_flight.values(), return_exceptions=True)
        return started

    async def run(self, wake: asyncio.Event, stopping: Callable[[], bool]) -> None:
        """Deliver until `stopping()`: woken by `wake`, by an attempt ending, or when the next is due;
        on stop, attempts in flight get their deadline to end (what is cut short is taken again later)."""
        while not stopping():
            try:
                self.start_due()
                due = self.store.alerts.next_due_us()
            except Exception:  # the database went away for a moment: look again shortly
                log.exception("delivering webhooks failed")
                due = self.clock.now_us() + int(RECHECK_S * 1e6)
            wait = IDLE_S if due is None else min(IDLE_S, max(RECHECK_S, (due - self.clock.now_us()) / 1e6))
            woken = asyncio.get_running_loop().create_task(wake.wait())
            await asyncio.wait({woken, *self.in_flight.values()}, timeout=wait,
                               return_when=asyncio.FIRST_COMPLETED)  # fmt: skip
            woken.cancel()
            wake.clear()
        if self.in_flight:
            _, cut = await asyncio.wait(set(self.in_flight.values()), timeout=self.deadline_s + 1)
            for task in cut:
                task.cancel()


def deliver_due(
    store: Store,
    clock: Clock,
    send: Send,
    base: float = DEFAULT_BACKOFF_S,
    rng: random.Random | None = None,
    on_result: Callable[[str], None] | None = None,
    deadline_s: float = DEADLINE_S,
) -> int:
    """One pass from outside an event loop (the CLI, tests): lease what is due (one entry per watch),
    POST each, settle each; returns how many were attempted.

    `on_result` hears each attempt's outcome once it is settled: delivered, failed (tried again
    later) or gave_up.
    """
    deliverer = Deliverer(store, clock, send, base, deadline_s, MAX_IN_FLIGHT, on_result, rng)
    return asyncio.run(deliverer.once())
