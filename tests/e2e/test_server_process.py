"""`ledger serve` as a real process: the sample record, a live SSE subscription, token checks."""

from __future__ import annotations

import json
import queue
import threading
import time
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

import httpx
import pytest

from api.server import shown_db
from ledger.model.codec import canonical
from ledger.storage.backend import is_pg_url
from tests.api_fixtures import Server, measurement_event, running_server
from tests.conftest import NewDb
from tests.paths import ROOT

SAMPLE = ROOT / "ledger" / "samples" / "2509.02480.record.json"
PAPER = "2509.02480"
TOKEN = "process-test-token"
HEARTBEAT = "0.3"
ENV = {"LEDGER_TOKENS": TOKEN, "LEDGER_SSE_HEARTBEAT": HEARTBEAT}


def _subscribe(url: str, events: queue.Queue[dict[str, Any]], stop: threading.Event) -> None:
    """Read SSE messages into `events` until `stop` is set (checked at each line; the servers
    here send a heartbeat every HEARTBEAT seconds, so the reader notices soon)."""
    with httpx.stream("GET", url, timeout=httpx.Timeout(10.0, read=30.0)) as r:
        events.put({"status": r.status_code, "content_type": r.headers["content-type"]})
        message: dict[str, Any] = {}
        for line in r.iter_lines():
            if stop.is_set():
                return
            if not line:
                if "id" in message:
                    events.put({**message, "received": time.monotonic()})
                message = {}
            elif not line.startswith(":"):
                name, _, value = line.partition(": ")
                message[name] = value


def _head(server: Server) -> dict[str, Any]:
    head: dict[str, Any] = httpx.get(f"{server.base}/healthz").json()["head"]
    return head


def _measurement() -> dict[str, Any]:
    return measurement_event(PAPER, 7)


def _append_and_watch(server: Server) -> tuple[dict[str, Any], float]:
    """Subscribe after the head, append one event, return it and the SSE delivery latency (s)."""
    head = _head(server)
    events: queue.Queue[dict[str, Any]] = queue.Queue()
    stop = threading.Event()
    url = f"{server.base}/evidence/stream?after={head['seq']}"
    reader = threading.Thread(target=_subscribe, args=(url, events, stop), daemon=True)
    reader.start()
    try:
        opened = events.get(timeout=10)
        assert opened["status"] == 200 and opened["content_type"].startswith("text/event-stream")
        event = _measurement()
        r = httpx.post(
            f"{server.base}/events",
            json={"events": [event]},
            headers={"Authorization": f"Bearer {TOKEN}"},
        )
        acknowledged = time.monotonic()
        assert r.status_code == 201, r.text
        seq = r.json()["events"][0]["seq"]
        assert seq == head["seq"] + 1
        got = events.get(timeout=5)  # the brief's bound: within a few seconds
        assert int(got["id"]) == seq and got["event"] == "measurement.observed"
        assert json.loads(got["data"])["hash"] == r.json()["events"][0]["hash"]
        return event, got["received"] - acknowledged
    finally:
        stop.set()
        reader.join(timeout=5)  # it closes the subscription itself at the next heartbeat


PASSWORD = "pw-never-printed"


def _with_password(db: str) -> tuple[str, str]:
    """The database URL with a password in it, and that password: the URL's own if it has one,
    else PASSWORD (the test cluster trusts loopback connections, so the server ignores it)."""
    parts = urlsplit(db)
    if parts.password:
        return db, unquote(parts.password)
    return urlunsplit(parts._replace(netloc=parts.netloc.replace("@", f":{PASSWORD}@", 1))), PASSWORD


def test_serve_sample_stream_and_tokens(new_db: NewDb):
    sample = json.loads(SAMPLE.read_bytes())
    db, password = new_db(), None
    if is_pg_url(db):
        db, password = _with_password(db)
    with running_server(db, env=ENV) as server:
        # the sample was loaded, and the message names the database without its password
        loaded = f"Loaded the sample record of arXiv:{PAPER} (as of {sample['as_of']}) into {shown_db(db)}\n"
        assert loaded in server.output, server.log()
        assert password is None or password not in server.log()
        # the printed page is the sample record as it was
        assert server.page_url == (f"{server.base}/paper/{PAPER}/citation-record?as_of={sample['as_of']}"), (
            server.log()
        )
        page = httpx.get(server.page_url)
        assert page.status_code == 200 and sample["paper"]["title"] in page.text
        as_sample = {"as_of": sample["as_of"]}
        record_url = f"{server.base}/paper/{PAPER}/citation-record.json"
        r = httpx.get(record_url, params=as_sample)
        assert r.content == canonical(sample)
        assert r.headers["Ledger-Head"] == "{seq} {hash}".format(**_head(server))

        event, latency = _append_and_watch(server)
        print(f"SSE delivery latency after the POST was acknowledged: {latency * 1000:.0f} ms")

        after = httpx.get(record_url, params={"as_of": event["observed_at"]}).json()
        assert [m["source"] for m in after["external_citation_measurements"]] == ["opencitations"]
        assert after["external_citation_measurements"][0]["value"] == 7
        assert httpx.get(record_url, params=as_sample).content == canonical(sample)

        before = _head(server)
        r = httpx.post(f"{server.base}/events", json={"events": [_measurement()]})
        assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"
        assert _head(server) == before


def test_serve_with_workers_passes_configuration_through_the_environment(new_db: NewDb):
    with running_server(new_db(), env=ENV, args=["--workers", "2"]) as server:
        health = httpx.get(f"{server.base}/healthz").json()
        assert health["writes_enabled"] is True and health["head"]["seq"] == 132
        _append_and_watch(server)  # the token and the db reached whichever worker answered


def test_serve_read_only(new_db: NewDb):
    with running_server(new_db(), env=ENV, args=["--read-only"]) as server:
        r = httpx.post(
            f"{server.base}/events",
            json={"events": [_measurement()]},
            headers={"Authorization": f"Bearer {TOKEN}"},
        )
        assert r.status_code == 403 and r.json()["error"]["code"] == "writes_disabled"


def test_serve_without_samples_starts_empty(new_db: NewDb):
    with running_server(new_db(), args=["--no-samples"]) as server:
        assert _head(server)["seq"] == 0
        assert server.page_url == f"{server.base}/"


@pytest.mark.parametrize(
    ("db", "shown"),
    [
        ("ledger.db", "ledger.db"),
        (
            "postgresql://ledger:s3cret@db.example:5432/ledger",
            "postgresql://ledger:***@db.example:5432/ledger",
        ),
        ("postgres://ledger@db.example/ledger", "postgres://ledger@db.example/ledger"),
        ("postgresql://:s3cret@[::1]/ledger", "postgresql://:***@[::1]/ledger"),
        ("postgresql://ledger:p@ss@db.example/ledger", "postgresql://ledger:***@db.example/ledger"),
        (
            "postgresql://ledger@db.example/ledger?sslmode=require&password=s3cret",
            "postgresql://ledger@db.example/ledger?sslmode=require&password=***",
        ),
    ],
)
def test_the_printed_database_never_shows_a_password(db: str, shown: str):
    assert shown_db(db) == shown
