"""Standing alerts end to end with real processes on 127.0.0.1: a `ledger serve`, a webhook receiver
that fails its first answers, a Retraction Watch file ingested with notices for cited works; and the
server killed with SIGKILL between the ingest and the delivery."""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Callable

import httpx

from service import webhooks as wh
from tests.api_fixtures import running_server
from tests.conftest import NewDb
from tests.metrics_text import parse, value
from tests.test_alerts import RW
from tests.test_sources_support import CITING, T_INGEST, sample_ledger
from tests.test_webhooks import _Receiver

TOKEN = "alert-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SECRET = "webhook-secret"
ENV = {"LEDGER_TOKENS": TOKEN, "LEDGER_WEBHOOK_ALLOW": "127.0.0.1", "LEDGER_WEBHOOK_BACKOFF": "0.2"}


def _until(what: Callable[[], bool], seconds: float = 60.0) -> None:
    deadline = time.monotonic() + seconds
    while not what():
        assert time.monotonic() < deadline, "not reached in time"
        time.sleep(0.1)


def _check_signed(receiver: _Receiver) -> None:
    for headers, body in receiver.got:
        assert headers["ledger-signature"] == wh.signature(SECRET, body)
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
            _until(lambda: len(receiver.got) >= 7 + 3)
            time.sleep(1.0)  # room for a duplicate to show, were one to be sent
            tries = httpx.get(f"{server.base}/watches/{watch_id}/deliveries", headers=AUTH).json()
            scraped = parse(httpx.get(f"{server.base}/metrics").text)
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
            _until(lambda: len(receiver.got) >= 1)  # raised, stored and being delivered
            server.proc.send_signal(signal.SIGKILL)  # no shutdown: only what was committed counts
            server.proc.wait(timeout=10)
        hold.set()  # the receiver is back (its answer to the dead server goes nowhere)
        receiver.hold = None
        seen_before = len(receiver.got)
        with running_server(db, env=ENV, args=["--no-samples"]) as server:
            _until(lambda: len({h["ledger-alert-id"] for h, _ in receiver.got[seen_before:]}) >= 7,
                   wh.LEASE_S + 60)  # fmt: skip
            time.sleep(1.0)
            tries = httpx.get(f"{server.base}/watches/{watch_id}/deliveries", headers=AUTH).json()
        delivered = [d for d in tries["deliveries"] if d["status"] == 200]
        assert len(delivered) == 7 and len({d["alert_n"] for d in delivered}) == 7
        assert len(tries["deliveries"]) == 7  # the killed attempt left no record: it never settled
        _check_signed(receiver)
    finally:
        hold.set()
        receiver.close()
