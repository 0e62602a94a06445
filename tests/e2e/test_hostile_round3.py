"""Hostile clients found by fuzzing every route of a real `ledger serve`: a client that never reads its
answers, an answer sent before the request's body was read, and Last-Event-ID values that are digits
to `str.isdigit` but not to `int`."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.api_fixtures import Server, running_server
from tests.waiting import wait_until

TOKEN = "hostile-round3-token"
ENV = {"LEDGER_TOKENS": TOKEN, "LEDGER_IDLE_TIMEOUT": "2", "LEDGER_BODY_TIMEOUT": "2"}
WAIT_S = 30  # how long a test waits for the server to act; the server's own deadlines are 2 s
AUTH = {"Authorization": f"Bearer {TOKEN}"}
# a static file every server has (Swagger UI, served by /docs), 1.5 MB
BIG = "/static-offline-docs/swagger-ui-bundle.js"


@pytest.fixture(scope="module")
def server(db_factory: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One server for the module, over a ledger holding the sample record."""
    directory = tmp_path_factory.mktemp("hostile-round3")
    with running_server(db_factory(directory), env=ENV, cwd=directory) as s:
        yield s


def _address(server: Server) -> tuple[str, int]:
    host, port = server.base.removeprefix("http://").split(":")
    return host, int(port)


def _established(port: int) -> int:
    """The server's side of the TCP connections to `port` that are established (from /proc/net/tcp)."""
    count = 0
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with open(table) as f:
            for line in f.readlines()[1:]:
                local, state = line.split()[1], line.split()[3]
                if int(local.rsplit(":", 1)[1], 16) == port and state == "01":
                    count += 1
    return count


def _still_serving(server: Server) -> None:
    assert httpx.get(server.base + "/healthz", timeout=WAIT_S).status_code == 200


# -- a client that never reads what it asked for -----------------------------------------------------


def test_a_client_that_never_reads_its_answers_does_not_hold_the_connection(server: Server) -> None:
    """Pipelined requests for a big file, never read: once the answers fill every buffer the server's
    writes stall; after LEDGER_IDLE_TIMEOUT of no progress it drops the connection (and the open file)."""
    _, port = _address(server)
    assert _established(port) == 0
    sockets = []
    try:
        for _ in range(3):
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.connect(_address(server))
            s.sendall(f"GET {BIG} HTTP/1.1\r\nHost: x\r\n\r\n".encode() * 20)  # 30 MB asked for
            sockets.append(s)
        wait_until(
            lambda: _established(port) == 0,
            lambda: f"the 3 connections that read nothing dropped ({_established(port)} held)",
            WAIT_S,
            every=0.2,
        )
    finally:
        for s in sockets:
            s.close()
    _still_serving(server)


# -- an answer sent before the request's body was read ------------------------------------------------


def _response_head(s: socket.socket) -> bytes:
    return _head_and_rest(s)[0]


def _head_and_rest(s: socket.socket) -> tuple[bytes, bytes]:
    """The first answer's head, and what arrived after it (the next answer may come in the same read)."""
    data = b""
    s.settimeout(WAIT_S)
    while b"\r\n\r\n" not in data:
        chunk = s.recv(65536)
        assert chunk, f"closed before a whole answer: {data!r}"
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    return head, rest


@pytest.mark.parametrize(
    "head, status",
    [
        (b"POST /events HTTP/1.1\r\nHost: x\r\nContent-Length: 14\r\n\r\n", 401),
        (
            f"POST /records?force=abc HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {TOKEN}\r\n".encode()
            + b"Content-Length: 2\r\n\r\n",
            422,
        ),
        (b"POST /events HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 14\r\n\r\n", 401),
    ],
    ids=["401-no-token", "422-bad-query", "401-expect-100"],
)
def test_an_answer_before_the_body_says_the_connection_closes(
    server: Server, head: bytes, status: int
) -> None:
    """The server closes a connection whose request body it did not read; the answer must say so,
    or a keep-alive client (httpx) sends its next request down a connection being closed."""
    with socket.create_connection(_address(server), timeout=WAIT_S) as s:
        s.sendall(head)  # the body never comes before the answer
        answer = _response_head(s)
    assert answer.startswith(f"HTTP/1.1 {status} ".encode()), answer
    assert b"\r\nconnection: close" in answer.lower(), answer
    _still_serving(server)


def test_an_answer_after_the_whole_body_keeps_the_connection(server: Server) -> None:
    """A refused request whose body came with it: the connection carries the next request."""
    request = b"POST /events HTTP/1.1\r\nHost: x\r\nContent-Length: 14\r\n\r\n" + b'{"events": []}'
    with socket.create_connection(_address(server), timeout=WAIT_S) as s:
        s.sendall(request + b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        first, data = _head_and_rest(s)
        assert first.startswith(b"HTTP/1.1 401 ") and b"connection: close" not in first.lower()
        while b"HTTP/1.1 200" not in data:
            chunk = s.recv(65536)
            assert chunk, "the connection was closed before the next answer"
            data += chunk


# -- Last-Event-ID on a watch's alert stream ------------------------------------------------------------


@pytest.fixture(scope="module")
def watch(server: Server) -> str:
    r = httpx.post(server.base + "/watches", json={"arxiv_id": "2509.02480"}, headers=AUTH, timeout=WAIT_S)
    assert r.status_code == 201, r.text
    watch_id: str = r.json()["id"]
    return watch_id


@pytest.mark.parametrize(
    "value",
    ["\u00b2".encode("latin-1"), b"9" * 5000, str(2**63).encode(), b"-1", b"12a", b"\xd9\xa3"],
    ids=["superscript-two", "5000-digits", "2^63", "negative", "not-a-number", "arabic-indic-three"],
)
def test_a_bad_last_event_id_on_the_alert_stream_is_422(server: Server, watch: str, value: bytes) -> None:
    url = f"{server.base}/watches/{watch}/alerts/stream"
    headers = {b"Authorization": AUTH["Authorization"].encode(), b"Last-Event-ID": value}
    with httpx.stream("GET", url, headers=headers, timeout=WAIT_S) as r:
        assert r.status_code == 422  # not a stream that never ends
        error = json.loads(r.read())["error"]
    assert set(error) == {"code", "message", "details"}
    assert "Last-Event-ID" in error["message"]
    _still_serving(server)


def test_a_good_last_event_id_on_the_alert_stream_resumes(server: Server, watch: str) -> None:
    url = f"{server.base}/watches/{watch}/alerts/stream"
    with httpx.stream("GET", url, headers={**AUTH, "Last-Event-ID": "0"}, timeout=WAIT_S) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")


@pytest.mark.parametrize(
    "value", ["\u00b2".encode("latin-1"), b"9" * 5000], ids=["superscript-two", "5000-digits"]
)
def test_a_bad_last_event_id_on_the_evidence_stream_is_422(server: Server, value: bytes) -> None:
    url = f"{server.base}/evidence/stream"
    with httpx.stream("GET", url, headers={b"Last-Event-ID": value}, timeout=WAIT_S) as r:
        assert r.status_code == 422
        assert "Last-Event-ID" in json.loads(r.read())["error"]["message"]


# -- U+0000 in a watch id (PostgreSQL text cannot hold it) ----------------------------------------------


@pytest.mark.parametrize(
    "method, path",
    [
        ("GET", "/watches/%00"),
        ("GET", "/watches/x%00y/alerts"),
        ("GET", "/watches/x%00y/deliveries"),
        ("GET", "/watches/x%00y/alerts/stream"),
        ("DELETE", "/watches/x%00y"),
        ("GET", "/watches?after=%00"),
    ],
)
def test_a_nul_in_a_watch_id_is_refused_not_500(server: Server, method: str, path: str) -> None:
    with httpx.stream(method, server.base + path, headers=AUTH, timeout=WAIT_S) as r:
        assert r.status_code == 422
        error = json.loads(r.read())["error"]
    assert set(error) == {"code", "message", "details"}
    _still_serving(server)
