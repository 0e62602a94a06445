"""Write limits: batch size, string length, events per second per token, slow and idle clients."""

from __future__ import annotations

import contextlib
import copy
import socket
import threading
import time
import warnings
from typing import TYPE_CHECKING, Any

import httpx
import msgspec
import pytest
from hypothesis import given
from hypothesis import strategies as st

from api.app import create_app
from api.docs import EVENT_EXAMPLES, ExampleEvent
from api.limits import long_string, short_strings
from api.settings import Settings
from api.state import state_of
from ledger.model.jsonvalue import JsonIn
from tests.api_fixtures import running_server
from tests.paths import DATA
from tests.waiting import wait_until

if TYPE_CHECKING:
    from tests.conftest import NewDb

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

TOKEN, OTHER = "limits-token", "other-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SAMPLE = DATA / "2509.02480.record.json"


def _client(new_db: NewDb, **overrides: Any) -> TestClient:
    options: dict[str, Any] = {"db": new_db(), "tokens": (TOKEN, OTHER)}
    return TestClient(create_app(Settings(**{**options, **overrides})))


def _measurements(n: int, start: int = 0) -> list[ExampleEvent]:
    out = []
    for i in range(start, start + n):
        e = copy.deepcopy(EVENT_EXAMPLES["measurement.observed"])
        e["data"]["value"] = i
        e["observed_at"] = f"2026-08-09T10:00:{i % 60:02d}.{i:06d}Z"
        out.append(e)
    return out


def _refused(r: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert r.status_code == status, r.text
    body = r.json()
    assert set(body) == {"error"} and body["error"]["code"] == code, body
    error: dict[str, Any] = body["error"]
    return error


def _head(client: TestClient) -> Any:
    return state_of(client.app).ledger.head()


# -- batch size -----------------------------------------------------------------------------------


def test_a_batch_above_the_limit_is_413_naming_it(new_db: NewDb) -> None:
    client = _client(new_db, max_batch=3)
    error = _refused(
        client.post("/events", json={"events": _measurements(4)}, headers=AUTH), 413, "batch_too_large"
    )
    assert error["details"] == {"events": 4, "limit": 3} and "LEDGER_MAX_BATCH" in error["message"]
    assert _head(client).seq == 0
    assert client.post("/events", json={"events": _measurements(3)}, headers=AUTH).status_code == 201
    # a record is counted by the events it decomposes into (132 for the sample)
    r = client.post("/records", content=SAMPLE.read_bytes(), headers=AUTH)
    assert _refused(r, 413, "batch_too_large")["details"] == {"events": 132, "limit": 3}
    assert _head(client).seq == 3


# -- string length --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "title",
    [
        pytest.param("T" * 65, id="plain"),
        pytest.param('T"' * 32 + "T", id="escaped-quotes"),  # no stretch between quotes is long
        pytest.param("é" * 65, id="two-byte-characters"),
    ],
)
def test_a_string_above_the_limit_is_422_naming_the_field(new_db: NewDb, title: str) -> None:
    client = _client(new_db, max_string=64)
    paper = copy.deepcopy(EVENT_EXAMPLES["paper.observed"])
    paper["data"]["title"] = title
    body = {"events": [*_measurements(2), paper]}
    error = _refused(client.post("/events", json=body, headers=AUTH), 422, "invalid")
    assert error["details"] == {"where": "events[2].data.title", "length": 65, "limit": 64}
    assert "LEDGER_MAX_STRING" in error["message"]
    long_key = {"events": _measurements(1), "k" * 70: 1}
    assert (
        "(a key)" in _refused(client.post("/events", json=long_key, headers=AUTH), 422, "invalid")["message"]
    )
    assert _head(client).seq == 0
    paper["data"]["title"] = "T" * 64  # at the limit is fine
    assert client.post("/events", json={"events": [paper]}, headers=AUTH).status_code == 201


def test_a_string_above_the_limit_in_a_record_is_named_by_its_record_path(new_db: NewDb) -> None:
    client = _client(new_db, max_string=200)  # the sample's longest string is its thesis (145)
    record = SAMPLE.read_text().replace('"thesis":"', '"thesis":"' + "x" * 60, 1)
    error = _refused(client.post("/records", content=record, headers=AUTH), 422, "invalid")
    assert error["details"] == {"where": "thesis", "length": 205, "limit": 200}
    assert _head(client).seq == 0
    assert client.post("/records", content=SAMPLE.read_bytes(), headers=AUTH).status_code == 201


_JSON = st.recursive(
    st.none() | st.integers() | st.text(st.characters(codec="utf-8"), max_size=12),
    lambda kids: (
        st.lists(kids, max_size=4)
        | st.dictionaries(st.text(st.characters(codec="utf-8"), max_size=12), kids, max_size=4)
    ),
    max_leaves=12,
)


@given(_JSON, st.integers(0, 12), st.booleans())
def test_short_strings_is_only_said_of_a_body_with_no_long_string(
    value: Any, limit: int, ascii_only: bool
) -> None:
    import json

    raw = json.dumps(value, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
    if short_strings(raw, limit):
        assert long_string(value, limit) is None, raw


@pytest.mark.parametrize(
    ("raw", "limit", "proven"),
    [
        (b'{"a":"xyz"}', 11, True),  # the body itself is short enough
        (b'{"a":"xyz"}', 3, True),
        (b'{"a":"xyzw"}', 3, False),
        (b'{"a":"x\\"y"}', 3, False),  # an escaped quote: not proven, the value is walked
        (b'{"abcd":1}', 3, False),  # keys count too
    ],
)
def test_short_strings_cases(raw: bytes, limit: int, proven: bool) -> None:
    assert short_strings(raw, limit) is proven
    if proven:
        assert long_string(msgspec.json.decode(raw), limit) is None


def test_long_string_names_the_first_offender_in_document_order() -> None:
    value: JsonIn = {"a": ["ok", "x" * 5], "b": {"c": "y" * 9}}
    assert long_string(value, 4) == ("a[1]", 5)
    assert long_string(value, 5) == ("b.c", 9)
    assert long_string(value, 9) is None
    assert long_string("z" * 3, 2) == ("$", 3)


# -- events per second per token ------------------------------------------------------------------


def test_rate_limit_per_token_is_429_with_retry_after(new_db: NewDb) -> None:
    client = _client(new_db, rate_limit=10.0, rate_burst=10)
    limiter = state_of(client.app).rate_limiter
    assert limiter is not None
    now = [1000.0]
    limiter.clock = lambda: now[0]
    assert client.post("/events", json={"events": _measurements(6)}, headers=AUTH).status_code == 201
    # 4 left: a batch of 6 still goes in, and leaves the token 2 events in debt
    assert client.post("/events", json={"events": _measurements(6, 6)}, headers=AUTH).status_code == 201
    head = _head(client)
    r = client.post("/events", json={"events": _measurements(1, 12)}, headers=AUTH)
    error = _refused(r, 429, "rate_limited")
    assert r.headers["Retry-After"] == "1" and error["details"]["rate"] == 10.0
    assert _head(client) == head
    # another token has its own bucket
    other = {"Authorization": f"Bearer {OTHER}"}
    assert client.post("/events", json={"events": _measurements(1, 13)}, headers=other).status_code == 201
    now[0] += 0.3  # 3 events refilled: out of debt
    assert client.post("/events", json={"events": _measurements(1, 14)}, headers=AUTH).status_code == 201
    # refused writes are charged too (a client cannot spin on invalid batches)
    now[0] += 10
    bad = _measurements(12, 15)
    bad[-1]["data"]["arxiv_id"] = "2509.248"  # decodes, then breaks a ledger rule
    _refused(client.post("/events", json={"events": bad}, headers=AUTH), 422, "invalid")
    _refused(client.post("/events", json={"events": _measurements(1, 30)}, headers=AUTH), 429, "rate_limited")


def test_rate_limit_is_off_unless_configured_and_checked_at_start() -> None:
    assert Settings.from_env({}).rate_limit == 0
    s = Settings.from_env({"LEDGER_RATE_LIMIT": "50", "LEDGER_MAX_BATCH": "7", "LEDGER_MAX_STRING": "9"})
    assert (s.rate_limit, s.burst, s.max_batch, s.max_string) == (50.0, 50.0, 7, 9)
    for bad in ({"LEDGER_RATE_LIMIT": "fast"}, {"LEDGER_RATE_LIMIT": "-1"}, {"LEDGER_MAX_BATCH": "0"}):
        with pytest.raises(ValueError, match="LEDGER_"):
            Settings.from_env(bad)


# -- slow and idle clients against a real server --------------------------------------------------


def _slow_body(base: str, stop: threading.Event, result: dict[str, Any], sent: threading.Event) -> None:
    """Headers, then one byte every 0.2 s of a body that claims 4000 bytes; `sent` once the first is out."""
    host, port = base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port))) as s:
        s.sendall(
            b"POST /events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Authorization: Bearer " + TOKEN.encode() + b"\r\nContent-Length: 4000\r\n\r\n"
        )
        s.settimeout(0.2)
        answer = b""
        while not stop.is_set():
            try:
                if not answer:  # once the server has answered, only read (sending more would reset)
                    s.sendall(b" ")
                    sent.set()
                chunk = s.recv(4096)
                if not chunk:
                    break
                answer += chunk  # until the server closes: the 408 says `Connection: close`
            except TimeoutError:
                continue
            except OSError:
                break
        result["answer"] = answer


def test_idle_connections_and_a_slow_client_do_not_stop_others(new_db: NewDb) -> None:
    env = {"LEDGER_TOKENS": TOKEN, "LEDGER_BODY_TIMEOUT": "2", "LEDGER_IDLE_TIMEOUT": "3"}
    with running_server(new_db(), env=env, args=["--no-samples"]) as server:
        host, port = server.base.removeprefix("http://").split(":")
        idle = [socket.create_connection((host, int(port))) for _ in range(300)]
        stop, trickling = threading.Event(), threading.Event()
        slow: dict[str, Any] = {}
        slow_thread = threading.Thread(target=_slow_body, args=(server.base, stop, slow, trickling))
        slow_thread.start()
        try:
            assert trickling.wait(timeout=30), "the slow client sent nothing"
            started = time.monotonic()
            with httpx.Client(base_url=server.base, timeout=5) as other:
                assert other.get("/healthz").status_code == 200
                r = other.post("/events", json={"events": _measurements(3)}, headers=AUTH)
                assert r.status_code == 201, r.text
            took = time.monotonic() - started
            print(f"300 idle sockets + a slow body: another client's GET and POST took {took * 1000:.0f} ms")
            assert took < 2.0, f"another client waited {took:.2f} s"
            slow_thread.join(timeout=10)
            # the trickling client was cut off after LEDGER_BODY_TIMEOUT with a 408 in the error shape
            assert slow["answer"].startswith(b"HTTP/1.1 408"), slow["answer"][:200]
            assert b'"code":"request_timeout"' in slow["answer"]
            # connections that never sent a byte are closed after LEDGER_IDLE_TIMEOUT
            closed: set[socket.socket] = set()

            def all_closed() -> bool:
                for s in set(idle) - closed:
                    s.setblocking(False)
                    with contextlib.suppress(BlockingIOError, OSError):
                        if s.recv(1) == b"":
                            closed.add(s)
                return len(closed) == len(idle)

            wait_until(all_closed, lambda: f"{len(closed)} of {len(idle)} idle connections closed", 30)
            assert httpx.get(f"{server.base}/healthz").json()["head"]["seq"] == 3
        finally:
            stop.set()
            for s in idle:
                s.close()
            slow_thread.join(timeout=5)
