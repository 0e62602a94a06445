"""Standing alerts end to end with real processes on 127.0.0.1: a `ledger serve`, a webhook receiver
that fails its first answers, a Retraction Watch file ingested with notices for cited works; and the
server killed with SIGKILL between the ingest and the delivery."""

from __future__ import annotations

import json
import signal
import socket
import threading
from typing import Any

import httpx
from standardwebhooks import Webhook

from service.alerts import webhooks as wh
from tests.api_fixtures import running_server
from tests.conftest import NewDb
from tests.metrics_text import parse, value
from tests.service.alerts.test_alerts import RW
from tests.service.alerts.test_webhooks import _Receiver
from tests.service.sources.test_sources_support import CITING, T_INGEST, sample_ledger
from tests.waiting import pause, wait_until

TOKEN = "alert-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SECRET = "webhook-secret"
ENV = {"LEDGER_TOKENS": TOKEN, "LEDGER_WEBHOOK_ALLOW": "127.0.0.1", "LEDGER_WEBHOOK_BACKOFF": "0.2"}


def _check_signed(receiver: _Receiver) -> None:
    for headers, body in receiver.got:
        assert headers["ledger-signature"] == wh.signature(SECRET, body)
        assert Webhook(SECRET.encode()).verify(body, headers)["id"] == headers["webhook-id"]
        assert headers["ledger-alert-id"] == json.loads(body)["id"]
        assert headers["content-type"] == "application/json"


def _watch_and_ingest(base: str, receiver: _Receiver) -> str:
    watch = httpx.post(f"{base}/watches", headers=AUTH, timeout=30,
                       json={"arxiv_id": CITING, "callback_url": receiver.url, "secret": SECRET})  # fmt: skip
    assert watch.status_code == 201, watch.text
    done = httpx.post(f"{base}/ingest/retraction-watch", params={"observed_at": T_INGEST}, content=RW,
                      headers={**AUTH, "Content-Type": "text/csv"}, timeout=30)  # fmt: skip
    assert done.status_code == 201, done.text
    watch_id: str = watch.json()["id"]
    return watch_id


def test_each_alert_reaches_the_receiver_once_after_its_failures_signed(new_db: NewDb) -> None:
    db = new_db("served.db")
    sample_ledger(db).close()
    receiver = _Receiver([500, 503, 500])  # the first three answers fail, whichever alerts they are
    try:
        with running_server(db, env=ENV, args=["--no-samples"]) as server:
            watch_id = _watch_and_ingest(server.base, receiver)
            wait_until(lambda: len(receiver.got) >= 7 + 3, "seven alerts and three failed tries")
            pause(1.0)  # room for a duplicate to show, were one to be sent
            tries = httpx.get(f"{server.base}/watches/{watch_id}/deliveries", headers=AUTH).json()
            scraped = parse(httpx.get(f"{server.base}/metrics").text)
            listed = httpx.get(f"{server.base}/watches/{watch_id}/alerts", headers=AUTH).json()["alerts"]
        # each alert names the work its notice is on in its own field, by DOI or arXiv id and title, the
        # same in the webhook and the watch's alerts; `citing` holds only the citing references
        delivered = {json.loads(body)["id"]: json.loads(body) for _, body in receiver.got}
        named = {a["id"]: (a["work"], a["citing"]) for a in listed}
        assert named == {i: (a["work"], a["citing"]) for i, a in delivered.items()}
        for alert in delivered.values():
            assert "work_id" not in alert and set(alert["work"]) == {"work_id", "doi", "arxiv_id", "title"}
            assert alert["work"]["title"] == f"Work {alert['work']['work_id']}"
            assert alert["work"]["doi"] or alert["work"]["arxiv_id"]
            assert all(set(c) == {"arxiv_id", "observation_id", "reference_index"} for c in alert["citing"])
        assert value(scraped, "ledger_webhook_deliveries_total", result="delivered") == 7
        assert value(scraped, "ledger_webhook_deliveries_total", result="failed") == 3
        assert value(scraped, "ledger_webhook_outbox_depth") == 0
        ok = [d for d in tries["deliveries"] if d["status"] == 200]
        failed = [d for d in tries["deliveries"] if d["status"] != 200]
        assert len(ok) == 7 and len(failed) == 3
        assert all(d["address"] == "127.0.0.1" for d in tries["deliveries"])
        _check_signed(receiver)
        ids = [h["ledger-alert-id"] for h, _ in receiver.got]
        assert len(set(ids)) == 7 and len(ids) == 10  # every alert once when answered 200, retried otherwise
    finally:
        receiver.close()


def test_an_alert_raised_before_a_sigkill_is_delivered_after_the_restart(new_db: NewDb) -> None:
    """The server is killed while its deliverer waits for the receiver's answer: the entry it held is
    neither delivered nor lost, and the next server takes it again once its lease is over."""
    db = new_db("killed.db")
    sample_ledger(db).close()
    hold = threading.Event()
    receiver = _Receiver([], hold=hold)  # answers nothing while the first server lives
    try:
        with running_server(db, env=ENV, args=["--no-samples"]) as server:
            watch_id = _watch_and_ingest(server.base, receiver)
            wait_until(lambda: len(receiver.got) >= 1, "an alert raised, stored and being delivered")
            server.proc.send_signal(signal.SIGKILL)  # no shutdown: only what was committed counts
            server.proc.wait(timeout=10)
        hold.set()  # the receiver is back (its answer to the dead server goes nowhere)
        receiver.hold = None
        seen_before = len(receiver.got)
        with running_server(db, env=ENV, args=["--no-samples"]) as server:
            wait_until(lambda: len({h["ledger-alert-id"] for h, _ in receiver.got[seen_before:]}) >= 7,
                       "the seven alerts after the restart", wh.LEASE_S + 60, every=0.1)  # fmt: skip
            pause(1.0)  # room for a duplicate to show
            tries = httpx.get(f"{server.base}/watches/{watch_id}/deliveries", headers=AUTH).json()
        delivered = [d for d in tries["deliveries"] if d["status"] == 200]
        assert len(delivered) == 7 and len({d["alert_n"] for d in delivered}) == 7
        assert len(tries["deliveries"]) == 7  # the killed attempt left no record: it never settled
        _check_signed(receiver)
    finally:
        hold.set()
        receiver.close()


class _Trickler:
    """A receiver that reads each request whole, then sends its answer one byte every `pace` seconds."""

    ANSWER = b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"

    def __init__(self, pace: float = 1.0) -> None:
        self.pace = pace
        self.server = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.server.getsockname()[1]}/slow"
        self.requests = 0
        self.finished = threading.Event()  # one whole answer was sent
        self.closing = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self.closing.is_set():
            try:
                conn, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    def _answer(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(10)
            data = b""
            while b"\r\n\r\n" not in data:
                chunk = conn.recv(65536)
                if not chunk:
                    return
                data += chunk
            head, body = data.split(b"\r\n\r\n", 1)
            length = next(int(v) for k, _, v in (x.partition(b":") for x in head.split(b"\r\n"))
                          if k.strip().lower() == b"content-length")  # fmt: skip
            while len(body) < length:
                body += conn.recv(65536)
            self.requests += 1
            for byte in self.ANSWER:
                if self.closing.wait(self.pace):
                    return
                try:
                    conn.sendall(bytes([byte]))
                except OSError:  # the deliverer gave up on it
                    return
            self.finished.set()

    def close(self) -> None:
        self.closing.set()
        self.server.close()


def _watch(base: str, callback: str, timeout: float = 30, auth: dict[str, str] = AUTH) -> dict[str, Any]:
    """A watch of CITING's outbound references calling `callback`, made over HTTP."""
    made = httpx.post(
        f"{base}/watches", headers=auth, timeout=timeout, json={"arxiv_id": CITING, "callback_url": callback}
    )
    assert made.status_code == 201, made.text
    body: dict[str, Any] = made.json()
    return body


def _ingest(base: str) -> None:
    done = httpx.post(f"{base}/ingest/retraction-watch", params={"observed_at": T_INGEST}, content=RW,
                      headers={**AUTH, "Content-Type": "text/csv"}, timeout=30)  # fmt: skip
    assert done.status_code == 201, done.text


def _tries(base: str, watch_id: str) -> list[dict[str, Any]]:
    tries: list[dict[str, Any]] = httpx.get(f"{base}/watches/{watch_id}/deliveries", headers=AUTH).json()[
        "deliveries"
    ]
    return tries


def _verified(receiver: _Receiver, secret: str) -> set[str]:
    """The alert ids the receiver got, each verified as a Standard Webhooks receiver does."""
    return {Webhook(secret).verify(body, headers)["id"] for headers, body in receiver.got}


def test_a_callback_host_that_breaks_the_resolver_is_settled_and_the_others_delivered(new_db: NewDb) -> None:
    """getaddrinfo raises UnicodeError (not an OSError) for a host with a 64-character label."""
    db = new_db("unicode.db")
    sample_ledger(db).close()
    receiver = _Receiver([])
    try:
        with running_server(db, env=ENV, args=["--no-samples"]) as server:
            bad = _watch(
                server.base, f"https://{'a' * 64}.example/hook"
            )  # made first: its alerts are due first
            good = _watch(server.base, receiver.url)
            assert good["secret"].startswith("whsec_") and "secret" not in _tries(server.base, good["id"])
            _ingest(server.base)
            wait_until(lambda: len(receiver.got) >= 7, "the seven alerts at the good receiver", 30)
            wait_until(lambda: len(_tries(server.base, bad["id"])) >= 1, "a try at the bad address")
            failed = _tries(server.base, bad["id"])[0]
            listed = httpx.get(f"{server.base}/watches", headers=AUTH).json()["watches"]
        assert failed["status"] is None and failed["next_at"] is not None
        assert failed["error"].startswith(f"cannot resolve {'a' * 64}.example: UnicodeError")
        assert len(_verified(receiver, good["secret"])) == 7
        assert {w["id"] for w in listed} == {bad["id"], good["id"]} and all("secret" not in w for w in listed)
    finally:
        receiver.close()


def test_a_receiver_trickling_its_answer_is_abandoned_at_the_deadline_and_delays_no_other(
    new_db: NewDb,
) -> None:
    db = new_db("trickle.db")
    sample_ledger(db).close()
    slow, receiver = _Trickler(pace=1.0), _Receiver([])
    try:
        with running_server(
            db, env={**ENV, "LEDGER_WEBHOOK_TIMEOUT": "1.5"}, args=["--no-samples"]
        ) as server:
            trickled = _watch(server.base, slow.url)  # made first: its alerts are due first
            good = _watch(server.base, receiver.url)
            _ingest(server.base)
            wait_until(lambda: len(receiver.got) >= 7, "the seven alerts at the good receiver", 30)
            assert not slow.finished.is_set()  # all seven arrived while the slow answer was still coming
            wait_until(lambda: len(_tries(server.base, trickled["id"])) >= 1, "a try abandoned")
            assert not slow.finished.is_set()  # abandoned: the answer is 38 bytes at one a second
            cut = _tries(server.base, trickled["id"])[0]
        assert cut["status"] is None and cut["error"] == "no whole answer within 1.5 s: abandoned"
        assert cut["next_at"] is not None and slow.requests >= 1
        assert len(_verified(receiver, good["secret"])) == 7
    finally:
        slow.close()
        receiver.close()
