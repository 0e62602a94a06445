"""Webhook delivery (service/webhooks.py, api/webhooks.py): signatures, retries, the address policy."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import http.server
import ipaddress
import json
import random
import ssl
import threading
from collections.abc import Iterator, Mapping
from datetime import UTC, datetime, timedelta, tzinfo
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from standardwebhooks import Webhook
from standardwebhooks.webhooks import WebhookVerificationError

from api.alerts.webhooks import sender
from ledger.model.errors import InvalidEvent
from ledger.model.instants import SYSTEM_CLOCK
from ledger.storage.state.alerts import DELIVERED, GAVE_UP, PENDING, Watch
from service.alerts import alerts as al
from service.alerts import webhooks as wh
from service.alerts.address_policy import AddressPolicy
from service.alerts.secrets import new_secret
from service.alerts.watch_spec import parse_watch
from service.ledger import Ledger
from service.sources import SourceFile, ingest
from tests.conftest import NewDb
from tests.factories import Clock
from tests.service.alerts.test_alerts import RW
from tests.service.sources.test_sources_support import CITING, T_INGEST, sample_ledger


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
    why = AddressPolicy().refused("hook.example", ipaddress.ip_address(address))
    assert (why is not None) == refused
    if refused:
        assert "server-side request forgery" in why and "LEDGER_WEBHOOK_ALLOW" in why  # type: ignore[operator]


def test_the_policy_opens_exactly_the_hosts_and_networks_named() -> None:
    policy = AddressPolicy(["127.0.0.0/8", "hooks.internal", ""])
    assert policy.refused("x", ipaddress.ip_address("127.0.0.2")) is None
    assert policy.refused("hooks.internal", ipaddress.ip_address("10.0.0.1")) is None
    assert policy.refused("hooks.internal", ipaddress.ip_address("169.254.169.254")) is not None
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


def _post(send: wh.Send, url: str, body: bytes = b"{}", headers: Mapping[str, str] | None = None) -> wh.Sent:
    """One POST by an async Send, from this (synchronous) test."""

    async def post() -> wh.Sent:
        sent = send(url, body, headers or {})
        assert not isinstance(sent, wh.Sent)
        return await sent

    return asyncio.run(post())


@pytest.fixture
def receiver() -> Iterator[_Receiver]:
    r = _Receiver([])
    yield r
    r.close()


def test_the_sender_refuses_loopback_unless_allowed_and_then_posts(receiver: _Receiver) -> None:
    refused = _post(sender(AddressPolicy()), receiver.url.replace("http:", "https:"))
    assert refused.status is None and "loopback" in (refused.error or "") and receiver.got == []
    by_name = _post(
        sender(AddressPolicy()), receiver.url.replace("127.0.0.1", "localhost").replace("http:", "https:")
    )
    assert by_name.status is None and "loopback" in (by_name.error or "")  # the name resolves to it
    ok = _post(sender(AddressPolicy(["127.0.0.1"])), receiver.url, b'{"a":1}', {"X-Test": "1"})
    assert ok == wh.Sent(200, "127.0.0.1", None)
    headers, body = receiver.got[0]
    assert body == b'{"a":1}' and headers["x-test"] == "1" and headers["host"].startswith("127.0.0.1:")


def test_a_name_allowed_reaches_a_loopback_receiver_only_once_its_address_is_listed(
    receiver: _Receiver,
) -> None:
    url = receiver.url.replace("127.0.0.1", "hooks.test")

    def resolve(host: str, _port: int) -> list[str]:
        return ["127.0.0.1"] if host == "hooks.test" else []

    by_name = _post(sender(AddressPolicy(["hooks.test"]), 5.0, resolve), url)
    assert by_name.status is None and by_name.address is None and receiver.got == []
    assert "hooks.test is 127.0.0.1, in 127.0.0.0/8 (loopback" in (by_name.error or "")
    for listed in ("127.0.0.1", "127.0.0.0/8"):
        ok = _post(sender(AddressPolicy(["hooks.test", listed]), 5.0, resolve), url)
        assert ok == wh.Sent(200, "127.0.0.1", None)
    assert [h["host"] for h, _ in receiver.got] == [url.split("/")[2]] * 2


def test_http_is_refused_for_a_host_not_named(receiver: _Receiver) -> None:
    sent = _post(sender(AddressPolicy(["10.0.0.0/8"])), receiver.url)
    assert sent.status is None and "http only" in (sent.error or "") and receiver.got == []


def test_a_redirect_is_not_followed(receiver: _Receiver) -> None:
    receiver.statuses = [302]
    sent = _post(sender(AddressPolicy(["127.0.0.1"])), receiver.url)
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


def _watched(new_db: NewDb, secret: str | None = "s3cret") -> tuple[Ledger, Watch]:
    ledger = sample_ledger(new_db("w.db"))
    body: dict[str, Any] = {"works": ["arxiv:2310.04610"], "callback_url": "https://hooks.example/alerts"}
    if secret:
        body["secret"] = secret
    spec = parse_watch(body)
    if secret is None:  # as a watch stored before every webhook was signed
        spec = spec._replace(secret=None)
    watch, _ = al.add_watch(ledger.store, ledger.clock, spec)
    ingest(ledger, SourceFile("retraction-watch", RW, T_INGEST))
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
        wh.deliver_due(ledger.store, ledger.clock, script, 10.0, random.Random(1), on_result=results.append)
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
    assert wh.deliver_due(ledger.store, ledger.clock, script, 10.0) == 0


def test_a_watch_stored_without_a_secret_sends_no_signature(new_db: NewDb) -> None:
    ledger, _ = _watched(new_db, secret=None)
    script = _Script([])
    wh.deliver_due(ledger.store, ledger.clock, script)
    assert (
        script.calls
        and wh.SIGNATURE not in script.calls[0][2]
        and wh.WEBHOOK_SIGNATURE not in script.calls[0][2]
    )


def test_delivery_gives_up_24_hours_after_the_first_attempt(
    new_db: NewDb, monkeypatch: pytest.MonkeyPatch
) -> None:
    ledger, watch = _watched(new_db)
    clock = Clock(SYSTEM_CLOCK.now_us())
    script = _Script([500] * 100)
    attempts = 0
    results: list[str] = []
    while ledger.store.alerts.outbox_depth():
        clock.advance(2 * 3_600 * 10**6)  # two hours later each time, past any delay (at most 1.2 h)
        assert wh.deliver_due(ledger.store, clock, script, 10.0, random.Random(2), results.append) == 1
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
    wh.deliver_due(ledger.store, ledger.clock, _Script([]))
    assert [s[0] for s in ledger.store.alerts._q("SELECT state FROM outbox").fetchall()] == [DELIVERED]
    assert CITING  # the sample's citing paper is what the watch's work is cited by


# -- one watch does not stall the others ------------------------------------------------------------


def _two_watches(new_db: NewDb, bad_url: str, good_url: str) -> tuple[Ledger, Watch, Watch]:
    """The sample ledger with a watch on a bad callback made first (its alert is due first) and one on
    a good callback, both told of the same notice."""
    ledger = sample_ledger(new_db("w.db"))
    made = []
    for url in (bad_url, good_url):
        body = {"works": ["arxiv:2310.04610"], "callback_url": url}
        made.append(al.add_watch(ledger.store, ledger.clock, parse_watch(body, ["127.0.0.1"]))[0])
    ingest(ledger, SourceFile("retraction-watch", RW, T_INGEST))
    return ledger, made[0], made[1]


def test_a_name_whose_resolution_hangs_is_abandoned_at_the_deadline(
    new_db: NewDb, receiver: _Receiver
) -> None:
    ledger, hung, healthy = _two_watches(new_db, "https://hangs.example/hook", receiver.url)
    release = threading.Event()

    def resolve(host: str, port: int) -> list[str]:
        if host == "hangs.example":  # a resolver that never answers (getaddrinfo cannot be cancelled)
            release.wait(30)
            raise OSError("released by the test")
        return [host]

    send = sender(AddressPolicy(["127.0.0.1"]), 0.5, resolve)
    try:
        assert wh.deliver_due(ledger.store, ledger.clock, send, deadline_s=0.5) == 2
    finally:
        release.set()
    (stuck,) = ledger.store.alerts.deliveries(hung.id)
    assert stuck.status is None and stuck.next_at is not None
    assert stuck.error == "no whole answer within 0.5 s: abandoned"
    (ok,) = ledger.store.alerts.deliveries(healthy.id)
    assert ok.status == 200 and len(receiver.got) == 1


@pytest.mark.parametrize(
    "error",
    [
        UnicodeError("label too long"),  # what getaddrinfo raises for a 64-character label
        RuntimeError("a bug in the sender"),
        ValueError("not an address"),
    ],
)
def test_whatever_a_send_raises_the_attempt_is_settled_as_failed(new_db: NewDb, error: Exception) -> None:
    ledger, watch = _watched(new_db)

    def send(url: str, body: bytes, headers: Mapping[str, str]) -> wh.Sent:
        raise error

    results: list[str] = []
    assert wh.deliver_due(ledger.store, ledger.clock, send, on_result=results.append) == 1
    (tried,) = ledger.store.alerts.deliveries(watch.id)
    assert results == [wh.FAILED] and tried.status is None and tried.next_at is not None
    assert tried.error == f"{type(error).__name__}: {error}"
    assert (
        wh.deliver_due(ledger.store, ledger.clock, send) == 0
    )  # settled: not leased again before its retry is due


def test_one_watch_in_flight_does_not_hold_another_watchs_backlog(new_db: NewDb) -> None:
    ledger, slow, fast = _two_watches(new_db, "https://slow.example/a", "https://fast.example/b")
    ingest(ledger, SourceFile("retraction-watch", RW, T_INGEST))  # nothing new: still one alert each
    tables = ledger.store.alerts
    with tables.updating():
        taken = tables.take_due(SYSTEM_CLOCK.now_us(), 10**6, 16)
    assert sorted(d.watch_id for d in taken) == sorted([slow.id, fast.id])  # one entry per watch
    with tables.updating():
        assert tables.take_due(SYSTEM_CLOCK.now_us(), 10**6, 16, busy=[slow.id, fast.id]) == []


# -- Standard Webhooks ---------------------------------------------------------------------------

SPEC_EXAMPLE = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"  # the secret of the specification's own example


@pytest.mark.parametrize(
    ("secret", "receiver_key"),
    [
        pytest.param("made", None, id="made-by-the-server"),
        pytest.param(SPEC_EXAMPLE, SPEC_EXAMPLE, id="whsec-given"),
        pytest.param("s3cret", b"s3cret", id="old-plain-secret-as-its-utf8-bytes"),
    ],
)
def test_a_delivery_verifies_with_standard_webhooks_a_retry_is_signed_afresh_and_a_replay_is_refused(
    new_db: NewDb, monkeypatch: pytest.MonkeyPatch, secret: str, receiver_key: str | bytes | None
) -> None:
    if secret == "made":
        secret = new_secret()
        receiver_key = secret
        assert len(base64.b64decode(secret.removeprefix("whsec_"))) == 24
    assert receiver_key is not None
    ledger, _ = _watched(new_db, secret)
    clock = Clock(
        SYSTEM_CLOCK.now_us() - 120 * 10**6
    )  # the first attempt two minutes ago, within the 5 allowed
    script = _Script([500, 200])
    _due_now(ledger)
    wh.deliver_due(ledger.store, clock, script, 10.0, random.Random(3))
    _due_now(ledger)
    clock.us = SYSTEM_CLOCK.now_us()
    wh.deliver_due(ledger.store, clock, script, 10.0, random.Random(3))
    (_, first_body, first), (_, body, retry) = script.calls
    receiver = Webhook(receiver_key)
    alert = receiver.verify(first_body, dict(first))
    assert (
        receiver.verify(body, dict(retry)) == alert
        and retry[wh.WEBHOOK_ID] == first[wh.WEBHOOK_ID] == alert["id"]
    )
    assert int(retry[wh.WEBHOOK_TIMESTAMP]) >= int(first[wh.WEBHOOK_TIMESTAMP]) + 119
    assert retry[wh.WEBHOOK_SIGNATURE] != first[wh.WEBHOOK_SIGNATURE]
    assert retry[wh.SIGNATURE] == wh.signature(secret, body)  # receivers written for Ledger-Signature
    with pytest.raises(WebhookVerificationError, match="No matching signature"):
        receiver.verify(body, {**retry, wh.WEBHOOK_TIMESTAMP: first[wh.WEBHOOK_TIMESTAMP]})
    later = datetime.now(UTC) + timedelta(minutes=6)

    class SixMinutesLater(datetime):
        @classmethod
        def now(cls, tz: tzinfo | None = None) -> datetime:  # type: ignore[override]
            return later

    monkeypatch.setattr("standardwebhooks.webhooks.datetime", SixMinutesLater)  # the receiver's clock
    with pytest.raises(WebhookVerificationError, match="too old"):
        receiver.verify(body, dict(retry))  # the same delivery replayed past the tolerance


@pytest.mark.parametrize(
    ("secret", "refused"),
    [
        pytest.param("whsec_", True, id="empty-key"),
        pytest.param("whsec_not base64!", True, id="not-base64"),
        pytest.param(SPEC_EXAMPLE, False, id="spec-example"),
        pytest.param("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"[:-2], False, id="unpadded"),
        pytest.param("plain", False, id="plain"),
    ],
)
def test_a_whsec_secret_given_must_be_base64(secret: str, refused: bool) -> None:
    body = {"works": ["arxiv:2310.04610"], "callback_url": "https://hooks.example/a", "secret": secret}
    if refused:
        with pytest.raises(InvalidEvent, match="whsec_ and the base64"):
            parse_watch(body)
    else:
        assert parse_watch(body).secret == secret


def _certificate(tmp_path: Path, name: str) -> tuple[Path, Path]:
    """A self-signed certificate for `name` and its key, as PEM files."""
    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.now(UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - timedelta(minutes=5))
        .not_valid_after(now + timedelta(hours=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = tmp_path / f"{name}.pem", tmp_path / f"{name}.key"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return cert_file, key_file


@pytest.mark.parametrize(("served", "verified"), [("hooks.test", True), ("other.test", False)])
def test_https_goes_to_the_checked_address_with_the_names_host_sni_and_certificate(
    tmp_path: Path, served: str, verified: bool
) -> None:
    """The URL's name is resolved (here by an injected resolver) and checked; the socket goes to that
    address, and TLS is held to the name: SNI and the certificate check say hooks.test."""
    cert_file, key_file = _certificate(tmp_path, served)
    r = _Receiver([])
    names: list[str | None] = []
    tls = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    tls.load_cert_chain(cert_file, key_file)
    tls.sni_callback = lambda _sock, name, _ctx: names.append(name)  # type: ignore[assignment,misc,func-returns-value]
    r.server.socket = tls.wrap_socket(r.server.socket, server_side=True)
    port = r.server.server_address[1]
    try:
        send = sender(
            AddressPolicy(["127.0.0.1"]),  # loopback is opened by its address, never by a name
            5.0,
            lambda host, _: ["127.0.0.1"] if host == "hooks.test" else [],
        )
        send.context = ssl.create_default_context(cafile=str(cert_file))
        sent = _post(send, f"https://hooks.test:{port}/hook", b'{"a":1}')
    finally:
        r.close()
    assert names and set(names) == {"hooks.test"}
    if verified:
        assert sent == wh.Sent(200, "127.0.0.1", None)
        assert r.got[0][0]["host"] == f"hooks.test:{port}"
    else:
        assert sent.status is None and "CERTIFICATE_VERIFY_FAILED" in (sent.error or "") and r.got == []
