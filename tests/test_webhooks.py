"""Webhook delivery (service/webhooks.py, api/webhooks.py): signatures, retries, the address policy."""

from __future__ import annotations

import hashlib
import hmac
import http.server
import ipaddress
import json
import random
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import pytest

from api.webhooks import sender
from ledger.alert_store import DELIVERED, GAVE_UP, PENDING
from ledger.instants import now_us
from service import alerts as al
from service import webhooks as wh
from service.ledger import Ledger
from service.sources import ingest
from tests.conftest import NewDb
from tests.test_alerts import RW
from tests.test_sources_support import CITING, T_INGEST, sample_ledger


def test_the_signature_is_github_and_stripes_hmac_sha256_of_the_body() -> None:
    body = b'{"id":"x"}'
    want = "sha256=" + hmac.new(b"s3cret", body, hashlib.sha256).hexdigest()
    assert wh.signature("s3cret", body) == want


@pytest.mark.parametrize(
    ("attempt", "plain"), [(1, 10.0), (2, 20.0), (3, 40.0), (9, 2560.0), (10, 3600.0), (30, 3600.0)]
)
def test_retries_back_off_exponentially_with_jitter_up_to_an_hour(attempt: int, plain: float) -> None:
    rng = random.Random(attempt)
    for _ in range(50):
        d = wh.delay_s(attempt, 10.0, rng)
        assert plain * wh.JITTER[0] <= d <= plain * wh.JITTER[1]


@pytest.mark.parametrize(
    ("address", "refused"),
    [
        pytest.param("93.184.216.34", False, id="public-v4"),
        pytest.param("2606:2800:220:1::248", False, id="public-v6"),
        pytest.param("127.0.0.1", True, id="loopback"),
        pytest.param("::1", True, id="loopback-v6"),
        pytest.param("10.1.2.3", True, id="private-10"),
        pytest.param("172.16.0.1", True, id="private-172"),
        pytest.param("192.168.1.1", True, id="private-192"),
        pytest.param("169.254.169.254", True, id="cloud-metadata"),
        pytest.param("fd00:ec2::254", True, id="metadata-v6"),
        pytest.param("100.100.100.200", True, id="shared-space"),
        pytest.param("0.0.0.0", True, id="unspecified"),
        pytest.param("224.0.0.1", True, id="multicast"),
        pytest.param("::ffff:10.0.0.1", True, id="v4-mapped-private"),
        pytest.param("fe80::1", True, id="link-local-v6"),
    ],
)
def test_the_policy_refuses_every_non_public_address_by_default(address: str, refused: bool) -> None:
    why = al.AddressPolicy().refused("hook.example", ipaddress.ip_address(address))
    assert (why is not None) == refused
    if refused:
        assert "server-side request forgery" in why and "LEDGER_WEBHOOK_ALLOW" in why  # type: ignore[operator]


def test_the_policy_opens_exactly_the_hosts_and_networks_named() -> None:
    policy = al.AddressPolicy(["127.0.0.0/8", "hooks.internal", ""])
    assert policy.refused("x", ipaddress.ip_address("127.0.0.2")) is None
    assert policy.refused("hooks.internal", ipaddress.ip_address("10.0.0.1")) is None
    assert policy.refused("other.internal", ipaddress.ip_address("10.0.0.1")) is not None
    assert policy.names("hooks.internal") and policy.names("127.0.0.1") and not policy.names("example.org")


class _Receiver:
    """A webhook receiver on 127.0.0.1 that answers `statuses` in turn (then 200), keeping each request."""

    def __init__(self, statuses: list[int], hold: threading.Event | None = None) -> None:
        self.statuses = list(statuses)
        self.hold = hold  # when set, each request waits for it before it is answered
        self.got: list[tuple[dict[str, str], bytes]] = []
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                receiver.got.append(({k.lower(): v for k, v in self.headers.items()}, body))
                if receiver.hold is not None:
                    receiver.hold.wait(60)
                status = receiver.statuses.pop(0) if receiver.statuses else 200
                if status in (301, 302, 307):
                    self.send_response(status)
                    self.send_header("Location", "http://127.0.0.1:9/elsewhere")
                else:
                    self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[_Receiver]:
    r = _Receiver([])
    yield r
    r.close()


def test_the_sender_refuses_loopback_unless_allowed_and_then_posts(receiver: _Receiver) -> None:
    refused = sender(al.AddressPolicy())(receiver.url.replace("http:", "https:"), b"{}", {})
    assert refused.status is None and "loopback" in (refused.error or "") and receiver.got == []
    by_name = sender(al.AddressPolicy())(
        receiver.url.replace("127.0.0.1", "localhost").replace("http:", "https:"), b"{}", {}
    )
    assert by_name.status is None and "loopback" in (by_name.error or "")  # the name resolves to it
    ok = sender(al.AddressPolicy(["127.0.0.1"]))(receiver.url, b'{"a":1}', {"X-Test": "1"})
    assert ok == wh.Sent(200, "127.0.0.1", None)
    headers, body = receiver.got[0]
    assert body == b'{"a":1}' and headers["x-test"] == "1" and headers["host"].startswith("127.0.0.1:")


def test_http_is_refused_for_a_host_not_named(receiver: _Receiver) -> None:
    sent = sender(al.AddressPolicy(["10.0.0.0/8"]))(receiver.url, b"{}", {})
    assert sent.status is None and "http only" in (sent.error or "") and receiver.got == []


def test_a_redirect_is_not_followed(receiver: _Receiver) -> None:
    receiver.statuses = [302]
    sent = sender(al.AddressPolicy(["127.0.0.1"]))(receiver.url, b"{}", {})
    assert sent.status == 302 and len(receiver.got) == 1


class _Script:
    """A Send that answers a scripted list of statuses and records what it was asked to POST."""

    def __init__(self, statuses: list[int | None]) -> None:
        self.statuses = statuses
        self.calls: list[tuple[str, bytes, Mapping[str, str]]] = []

    def __call__(self, url: str, body: bytes, headers: Mapping[str, str]) -> wh.Sent:
        self.calls.append((url, body, dict(headers)))
        status = self.statuses.pop(0) if self.statuses else 200
        return wh.Sent(status, "203.0.113.7", None if status else "timed out")


def _watched(new_db: NewDb, secret: str | None = "s3cret") -> tuple[Ledger, al.Watch]:
    ledger = sample_ledger(new_db("w.db"))
    body: dict[str, Any] = {"works": ["arxiv:2310.04610"], "callback_url": "https://hooks.example/alerts"}
    if secret:
        body["secret"] = secret
    watch, _ = al.add_watch(ledger.store, al.parse_watch(body))
    ingest(ledger, "retraction-watch", RW, T_INGEST)
    return ledger, watch


def _due_now(ledger: Ledger) -> None:
    """Make every pending entry due (as if its delay had passed)."""
    with ledger.store.alerts.updating():
        ledger.store.alerts._q(f"UPDATE outbox SET next_us = 0 WHERE state = '{PENDING}'")


def test_an_alert_is_retried_until_delivered_with_the_same_id_and_a_valid_signature(new_db: NewDb) -> None:
    ledger, watch = _watched(new_db)
    script = _Script([500, None, 503])
    results: list[str] = []
    for _ in range(4):
        wh.deliver_due(ledger.store, script, 10.0, random.Random(1), on_result=results.append)
        _due_now(ledger)
    assert len(script.calls) == 4  # three failures, then delivered; nothing after
    assert results == [wh.FAILED, wh.FAILED, wh.FAILED, DELIVERED]
    ids = {c[2][wh.ALERT_ID] for c in script.calls}
    assert len(ids) == 1
    for _, body, headers in script.calls:
        assert headers[wh.SIGNATURE] == wh.signature("s3cret", body) and json.loads(body)["id"] in ids
    tries = ledger.store.alerts.deliveries(watch.id)
    assert [(d.attempt, d.status) for d in tries] == [(1, 500), (2, None), (3, 503), (4, 200)]
    assert tries[1].error == "timed out" and tries[-1].next_at is None and tries[0].next_at is not None
    assert ledger.store.alerts.outbox_depth() == 0
    assert wh.deliver_due(ledger.store, script, 10.0) == 0


def test_an_unsigned_watch_sends_no_signature(new_db: NewDb) -> None:
    ledger, _ = _watched(new_db, secret=None)
    script = _Script([])
    wh.deliver_due(ledger.store, script)
    assert script.calls and wh.SIGNATURE not in script.calls[0][2]


def test_delivery_gives_up_24_hours_after_the_first_attempt(
    new_db: NewDb, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger, watch = _watched(new_db)
    clock = [now_us()]
    monkeypatch.setattr("service.webhooks.now_us", lambda: clock[0])
    script = _Script([500] * 100)
    attempts = 0
    results: list[str] = []
    while ledger.store.alerts.outbox_depth():
        clock[0] += 2 * 3_600 * 10**6  # two hours later each time, past any delay (at most 1.2 h)
        assert wh.deliver_due(ledger.store, script, 10.0, random.Random(2), results.append) == 1
        attempts += 1
    assert results == [wh.FAILED] * (attempts - 1) + [GAVE_UP]
    states = ledger.store.alerts._q("SELECT state FROM outbox").fetchall()
    assert [s[0] for s in states] == [GAVE_UP] and 10 <= attempts <= 12
    assert ledger.store.alerts.deliveries(watch.id, 0, 1000)[-1].next_at is None


def test_a_deliverer_takes_an_entry_another_holds_only_after_its_lease(new_db: NewDb) -> None:
    ledger, _ = _watched(new_db)
    tables = ledger.store.alerts
    with tables.updating():
        first = tables.take_due(10**16, 60 * 10**6)
    with tables.updating():
        assert tables.take_due(10**16 + 1, 60 * 10**6) == []  # leased to the first
    with tables.updating():
        again = tables.take_due(10**16 + 61 * 10**6, 60 * 10**6)  # a crashed deliverer's, taken again
    assert [d.alert_n for d in again] == [d.alert_n for d in first] and first


def test_delivered_and_pending_states_are_what_the_outbox_says(new_db: NewDb) -> None:
    ledger, _ = _watched(new_db)
    wh.deliver_due(ledger.store, _Script([]))
    assert [s[0] for s in ledger.store.alerts._q("SELECT state FROM outbox").fetchall()] == [DELIVERED]
    assert CITING  # the sample's citing paper is what the watch's work is cited by
