"""Hostile clients against a real `ledger serve`: oversized and slow request heads, trickled bodies on
the routes that had no deadline. Every refusal is an HTTP answer in the JSON error shape, then a close."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from api.server import MAX_HEAD_BYTES
from service.ledger import Ledger
from tests.api_fixtures import Server, running_server
from tests.conftest import FIXTURE_PATH, NewDb
from tests.service.sources.test_sources_support import T_INGEST
from tests.waiting import pause, trickle

TOKEN = "hostile-http-token"
# a body has 2 s, plus 1 s per 16 KiB received
ENV = {
    "LEDGER_TOKENS": TOKEN,
    "LEDGER_IDLE_TIMEOUT": "2",
    "LEDGER_BODY_TIMEOUT": "2",
    "LEDGER_BODY_MIN_RATE": "16384",
}
WAIT_S = 30  # how long a test waits for the server to act; the server's own deadlines are 2 s


@pytest.fixture(scope="module")
def server(db_factory: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, str]]:
    """One server for the module, over a ledger holding the sample record."""
    directory = tmp_path_factory.mktemp("hostile-http")
    db = db_factory(directory)
    with running_server(db, env=ENV, cwd=directory) as s:
        yield s, db


def _address(server: Server) -> tuple[str, int]:
    host, port = server.base.removeprefix("http://").split(":")
    return host, int(port)


def _read_to_end(s: socket.socket, deadline: float) -> bytes:
    """Everything the server sends until it closes; fails if it has not closed by the deadline."""
    answer = b""
    while True:
        s.settimeout(max(deadline - time.monotonic(), 0.01))
        try:
            chunk = s.recv(65536)
        except TimeoutError:
            raise AssertionError(
                f"the server did not close the connection; it sent {answer[:200]!r}"
            ) from None
        if not chunk:
            return answer
        answer += chunk


def _json_error(answer: bytes, status: int) -> dict[str, Any]:
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(f"HTTP/1.1 {status} ".encode()), answer[:300]
    assert b"content-type: application/json" in head.lower()
    error: dict[str, Any] = json.loads(body)["error"]
    assert set(error) == {"code", "message", "details"}
    return error


def _still_serving(server: Server, db: str) -> None:
    with socket.create_connection(_address(server), timeout=WAIT_S) as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        assert _read_to_end(s, time.monotonic() + WAIT_S).startswith(b"HTTP/1.1 200")
    assert Ledger(db).verify().ok


# -- a head too large -----------------------------------------------------------------------------


@pytest.mark.parametrize("pieces", [1, 64], ids=["at-once", "in-pieces"])
def test_a_megabyte_of_headers_is_431_in_the_error_shape_not_a_reset(
    server: tuple[Server, str], pieces: int
) -> None:
    s_, db = server
    header = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * (1024 * 1024) + b"\r\n\r\n"
    with socket.create_connection(_address(s_), timeout=WAIT_S) as s:
        step = len(header) // pieces + 1
        with contextlib.suppress(OSError):  # the server may stop reading; its answer must still come
            for i in range(0, len(header), step):
                s.sendall(header[i : i + step])
        answer = _read_to_end(s, time.monotonic() + WAIT_S)
    error = _json_error(answer, 431)
    assert error["code"] == "request_header_fields_too_large"
    assert str(MAX_HEAD_BYTES) in error["message"]
    _still_serving(s_, db)


def test_a_request_that_is_not_http_is_400_in_the_error_shape(server: tuple[Server, str]) -> None:
    s_, db = server
    with socket.create_connection(_address(s_), timeout=WAIT_S) as s:
        s.sendall(b"\x16\x03\x01 this is not HTTP\r\n\r\n")
        answer = _read_to_end(s, time.monotonic() + WAIT_S)
    assert _json_error(answer, 400)["code"] == "bad_request"
    _still_serving(s_, db)


# -- a head that never ends -----------------------------------------------------------------------


def _slow_head(
    address: tuple[str, int], result: dict[int, tuple[bytes, float]], n: int, stop: threading.Event
) -> None:
    """A header line every 0.5 s, for ever, until the server answers and closes."""
    started = time.monotonic()
    with socket.create_connection(address, timeout=WAIT_S) as s:
        s.sendall(b"GET /healthz HTTP/1.1\r\n")
        s.settimeout(0.5)
        answer = b""
        i = 0
        while not stop.is_set():
            try:
                if not answer:
                    s.sendall(b"X-Line-%d: %d\r\n" % (i, i))
                    i += 1
                chunk = s.recv(4096)
                if not chunk:
                    break
                answer += chunk
            except TimeoutError:
                continue
            except OSError:
                break
        result[n] = (answer, time.monotonic() - started)


def test_connections_that_send_a_header_line_now_and_then_are_closed(server: tuple[Server, str]) -> None:
    s_, db = server
    result: dict[int, tuple[bytes, float]] = {}
    stop = threading.Event()
    threads = [
        threading.Thread(target=_slow_head, args=(_address(s_), result, n, stop), daemon=True)
        for n in range(30)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=WAIT_S)
    stop.set()
    assert len(result) == 30, f"{30 - len(result)} of 30 slow heads still open after {WAIT_S} s"
    for answer, _ in result.values():
        assert _json_error(answer, 408)["code"] == "request_timeout"
    took = sorted(t for _, t in result.values())
    print(
        f"30 slow heads (a line every 0.5 s), idle timeout 2 s: closed after {took[0]:.2f}..{took[-1]:.2f} s"
    )
    _still_serving(s_, db)


def test_a_connection_that_sends_nothing_is_closed_silently(server: tuple[Server, str]) -> None:
    s_, _ = server
    with socket.create_connection(_address(s_), timeout=WAIT_S) as s:
        assert _read_to_end(s, time.monotonic() + WAIT_S) == b""


# -- bodies trickled to the routes that had no deadline -------------------------------------------


def _trickle(address: tuple[str, int], head: bytes) -> bytes:
    """Send `head`, then a byte every 0.5 s until the server closes; what it answered (fails if never)."""
    with socket.create_connection(address, timeout=WAIT_S) as s:
        s.sendall(head)
        s.settimeout(0.5)
        answer = b""
        deadline = time.monotonic() + WAIT_S
        while time.monotonic() < deadline:
            try:
                s.sendall(b" ")
                chunk = s.recv(4096)
                if not chunk:
                    return answer
                answer += chunk
            except TimeoutError:
                continue
            except OSError:
                return answer
        raise AssertionError(f"still open after {WAIT_S} s; the server sent {answer[:200]!r}")


@pytest.mark.parametrize(
    "target, auth",
    [("/verify", False), (f"/ingest/crossref?observed_at={T_INGEST}", True), ("/events", True)],
)
def test_a_trickled_body_is_408(server: tuple[Server, str], target: str, auth: bool) -> None:
    s_, db = server
    head = (
        f"POST {target} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n"
        + (f"Authorization: Bearer {TOKEN}\r\n" if auth else "")
        + "\r\n"
    ).encode()
    before = Ledger(db).head()
    error = _json_error(_trickle(_address(s_), head), 408)
    assert error["code"] == "request_timeout" and "LEDGER_BODY_TIMEOUT" in error["message"]
    assert Ledger(db).head() == before
    _still_serving(s_, db)


def test_a_body_trickled_after_the_answer_does_not_hold_the_connection(server: tuple[Server, str]) -> None:
    """A GET declaring a body it trickles: answered without reading it, then closed."""
    s_, db = server
    head = b"GET /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n"
    answer = _trickle(_address(s_), head)
    assert answer.startswith(b"HTTP/1.1 200"), answer[:200]
    _still_serving(s_, db)


def test_a_refused_body_sent_without_end_is_answered_then_cut_at_the_body_timeout(
    server: tuple[Server, str],
) -> None:
    """A body past the limit, streamed as fast as the socket takes it and never ended: the 413 comes
    whole, what follows is read and dropped, and the connection is cut once LEDGER_BODY_TIMEOUT (2 s
    here) has passed, not held while the client keeps sending."""
    s_, db = server
    head = (
        f"POST /events HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {10**12}\r\nAuthorization: Bearer {TOKEN}\r\nConnection: close\r\n\r\n"
    ).encode()
    before = Ledger(db).head()
    answer: list[bytes] = []
    with socket.create_connection(_address(s_), timeout=WAIT_S) as s:
        s.sendall(head)
        reader = threading.Thread(
            target=lambda: answer.append(_read_to_end(s, time.monotonic() + WAIT_S)), daemon=True
        )
        reader.start()
        deadline, cut = time.monotonic() + WAIT_S, False
        try:
            while time.monotonic() < deadline:
                s.sendall(b" " * 65536)
        except OSError:  # the server closed: what is still sent is refused
            cut = True
        reader.join(WAIT_S)
    assert cut, f"the server still took the body after {WAIT_S} s"
    assert answer, "the answer never ended"
    assert _json_error(answer[0], 413)["code"] == "payload_too_large"
    assert Ledger(db).head() == before
    _still_serving(s_, db)


def test_a_body_arriving_steadily_is_taken_even_past_the_timeout(server: tuple[Server, str]) -> None:
    """A long body that keeps up LEDGER_BODY_MIN_RATE is not cut at LEDGER_BODY_TIMEOUT."""
    s_, _ = server
    body = FIXTURE_PATH.read_bytes()  # 75 kB: 2 s + 4.6 s allowed at 16 KiB/s
    head = (
        f"POST /verify HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
    ).encode()
    with socket.create_connection(_address(s_), timeout=WAIT_S) as s:
        s.sendall(head)
        trickle(s, body, pieces=5, every=0.5)  # 2.5 s in all at 0.5 s a piece: over the 2 s timeout
        answer = _read_to_end(s, time.monotonic() + WAIT_S)
    assert answer.startswith(b"HTTP/1.1 200"), answer[:300]


def _one_response(s: socket.socket) -> bytes:
    """One whole response (head and Content-Length body) off a keep-alive connection."""
    data = b""
    s.settimeout(WAIT_S)
    while b"\r\n\r\n" not in data:
        data += s.recv(65536)
    head, _, body = data.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length")
    )
    while len(body) < length:
        body += s.recv(65536)
    return head + b"\r\n\r\n" + body


def test_the_protocol_guard_serves_a_keep_alive_client(new_db: NewDb) -> None:
    """An empty ledger, a normal keep-alive client: served request after request on one connection,
    each head within the deadline, the pauses between them under uvicorn's keep-alive."""
    with (
        running_server(new_db(), env=ENV, args=["--no-samples"]) as s_,
        socket.create_connection(_address(s_), timeout=WAIT_S) as s,
    ):
        for _ in range(3):
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            assert _one_response(s).startswith(b"HTTP/1.1 200")
            pause(0.5)  # a client idle between two requests


def test_a_body_too_large_for_h11_to_frame_is_400_not_431(server: tuple[Server, str]) -> None:
    """A chunk-size line past h11's bound is a bad body, not a head too large: the head was fine."""
    s_, db = server
    head = b"POST /verify HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
    with socket.create_connection(_address(s_), timeout=WAIT_S) as s:
        with contextlib.suppress(OSError):  # the server may stop reading; its answer must still come
            s.sendall(head + b"1" * (MAX_HEAD_BYTES + 1024))
        answer = _read_to_end(s, time.monotonic() + WAIT_S)
    assert _json_error(answer, 400)["code"] == "bad_request"
    _still_serving(s_, db)


@pytest.mark.parametrize(
    "framing",
    [
        b"Content-Length: 47\r\nTransfer-Encoding: chunked\r\n",
        b"Transfer-Encoding: chunked\r\nContent-Length: 5\r\n",
    ],
    ids=["length-first", "chunked-first"],
)
def test_a_request_framed_two_ways_is_400_and_the_connection_closes(
    server: tuple[Server, str], framing: bytes
) -> None:
    """RFC 9112 6.1: Content-Length with Transfer-Encoding is how a request is smuggled past a proxy.
    It is refused naming both, nothing is written, and the request hidden behind it is never read."""
    s_, db = server
    before = Ledger(db).head().seq
    hidden = b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n"
    head = b"POST /events HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + TOKEN.encode() + b"\r\n"
    with socket.create_connection(_address(s_), timeout=WAIT_S) as s:
        s.sendall(head + framing + b"\r\n0\r\n\r\n" + hidden)
        answer = _read_to_end(s, time.monotonic() + WAIT_S)
    error = _json_error(answer, 400)
    assert error["code"] == "bad_request"
    assert "Content-Length and Transfer-Encoding" in error["message"]
    assert answer.count(b"HTTP/1.1 ") == 1  # the hidden request got no answer
    assert Ledger(db).head().seq == before
    _still_serving(s_, db)
