"""Every route that reads a body, posted by real clients (curl, urllib, requests, httpx) over a real socket
to a real `ledger serve`: bodies around the 16 KiB head limit, each route's body limit (a source
file's own, LEDGER_MAX_INGEST_BODY, included) and far past it. Clients send a small body in the same
packet as its head; only the head counts against the head limit, so each answer is what the route says
about the content (201/200 valid, 422 invalid, 413 over the limit), never 431."""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
import requests

from api.alerts.watches import MAX_WATCH_BODY
from api.log.proofs import MAX_NOTE_BYTES
from api.server import MAX_HEAD_BYTES
from tests.api_fixtures import Server, measurement_event, running_server
from tests.conftest import FIXTURE_PATH
from tests.service.sources.test_sources_support import SOURCES_DIR, T_INGEST

TOKEN = "body-sizes-token"
# as large as the watch limit, so that one size is the limit of /events, /records, /verify and /watches
MAX_BODY = MAX_WATCH_BODY
# a source file's limit, set apart from the others so that a route judged by the wrong one shows
MAX_INGEST_BODY = 3 * MAX_BODY
ENV = {
    "LEDGER_TOKENS": TOKEN,
    "LEDGER_MAX_BODY": str(MAX_BODY),
    "LEDGER_MAX_INGEST_BODY": str(MAX_INGEST_BODY),
}
TIMEOUT_S = 30
PAPER = "2509.02480"  # the sample record `ledger serve` loads

_unique = itertools.count()

# a client posts (url, body, headers) and gives back (status, answer body)
Post = Callable[[str, bytes, dict[str, str]], tuple[int, bytes]]


def _curl(url: str, body: bytes, headers: dict[str, str], tmp: Path) -> tuple[int, bytes]:
    sent, got = tmp / "body", tmp / "answer"
    sent.write_bytes(body)
    args = ["curl", "-sS", "--max-time", str(TIMEOUT_S), "-o", str(got), "-w", "%{http_code}"]
    for name, value in headers.items():
        args += ["-H", f"{name}: {value}"]
    out = subprocess.run(
        [*args, "--data-binary", f"@{sent}", url], capture_output=True, text=True, check=True
    )
    return int(out.stdout), got.read_bytes()


def _urllib(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    request = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as r:
            return r.status, r.read()
    except urllib.error.HTTPError as e:
        with e:
            return e.code, e.read()


def _requests(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    r = requests.post(url, data=body, headers=headers, timeout=TIMEOUT_S)
    return r.status_code, r.content


def _httpx(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    r = httpx.post(url, content=body, headers=headers, timeout=TIMEOUT_S)
    return r.status_code, r.content


def _padded(content: bytes, size: int) -> bytes:
    """`content` followed by JSON whitespace up to `size` bytes (still the same JSON value)."""
    assert len(content) <= size, f"{len(content)} bytes of content do not fit in {size}"
    return content + b" " * (size - len(content))


def _event_batch() -> bytes:
    """A batch of one new measurement (a new value each time, so it is appended, not a duplicate)."""
    event = measurement_event(PAPER, next(_unique))
    return json.dumps({"events": [event]}).encode()


def _checkpoint(server: Server) -> bytes:
    return httpx.get(f"{server.base}/checkpoint", timeout=TIMEOUT_S).content


@dataclass(frozen=True)
class Route:
    """A route that reads a body: where, its content type, its body limit, and a body of a given size
    (with the statuses that answer it) built from what the server holds."""

    target: str
    content_type: str
    limit: int
    body: Callable[[Server, int | None], tuple[bytes, set[int]]]


# Each builder gives a body of `size` bytes (None: the route's valid body as it is) and the statuses
# that answer it. Valid content is padded with JSON whitespace, so a 201/200 proves the whole body was
# read; content that cannot be padded and stay valid is made invalid on purpose (422, named).


def _events(_: Server, size: int | None) -> tuple[bytes, set[int]]:
    batch = _event_batch()
    if size is None:
        return batch, {201}
    return (_padded(batch, size), {201}) if size else (b"", {422})


def _record(_: Server, size: int | None) -> tuple[bytes, set[int]]:
    record = FIXTURE_PATH.read_bytes()
    if size is None or size >= len(record):  # the sample record, already there: 200, all duplicates
        return _padded(record, size or len(record)), {200, 201}
    return (_padded(b"{}", size), {422}) if size else (b"", {422})  # not a record


def _verify(_: Server, size: int | None) -> tuple[bytes, set[int]]:
    record = FIXTURE_PATH.read_bytes()
    if size is None or size >= len(record):
        return _padded(record, size or len(record)), {200}
    return (_padded(b"[]", size), {422}) if size else (b"", {422})  # not a record


def _ingest(_: Server, size: int | None) -> tuple[bytes, set[int]]:
    file = (SOURCES_DIR / "crossref_work.json").read_bytes()
    if size is None:
        return file, {200, 201}
    return (_padded(file, size), {200, 201}) if size else (b"", {422})


def _watch(_: Server, size: int | None) -> tuple[bytes, set[int]]:
    spec = json.dumps({"arxiv_id": PAPER}).encode()
    if size is None:
        return spec, {201}
    return (_padded(spec, size), {201}) if size else (b"", {422})


def _check(server: Server, size: int | None) -> tuple[bytes, set[int]]:
    note = _checkpoint(server)
    if size is None:
        return note, {200}
    # a signed note followed by more lines is no longer a valid note: 422 once the body was read
    return (note + b"\n" * (size - len(note)), {422}) if size else (b"", {422})


ROUTES = {
    "events": Route("/events", "application/json", MAX_BODY, _events),
    "records": Route("/records", "application/json", MAX_BODY, _record),
    "verify": Route("/verify", "application/json", MAX_BODY, _verify),
    "ingest": Route(f"/ingest/crossref?observed_at={T_INGEST}", "application/json", MAX_INGEST_BODY, _ingest),
    "watches": Route("/watches", "application/json", MAX_WATCH_BODY, _watch),
    "checkpoint-check": Route("/checkpoint/check", "text/plain", MAX_NOTE_BYTES, _check),
}
SIZES: dict[str, Callable[[int], int | None]] = {
    "as-is": lambda _: None,
    "empty": lambda _: 0,
    "head-limit-minus-1": lambda _: MAX_HEAD_BYTES - 1,
    "head-limit-plus-1": lambda _: MAX_HEAD_BYTES + 1,
    "body-limit": lambda limit: limit,
    "body-limit-plus-1": lambda limit: limit + 1,
    # far past it: a client that sends its whole body before reading (urllib) still gets the 413
    "body-limit-plus-16-MiB": lambda limit: limit + 16 * 1024 * 1024,
}
CLIENTS = ["curl", "urllib", "requests", "httpx"]


@pytest.fixture(scope="module")
def server(db_factory: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """One server for the module, over a ledger holding the sample record."""
    directory = tmp_path_factory.mktemp("body-sizes")
    with running_server(db_factory(directory), env=ENV, cwd=directory) as s:
        yield s


def _client(name: str, tmp: Path) -> Post:
    if name == "curl":
        if shutil.which("curl") is None:
            pytest.skip("curl is not installed")
        return lambda url, body, headers: _curl(url, body, headers, tmp)
    return {"urllib": _urllib, "requests": _requests, "httpx": _httpx}[name]


@pytest.mark.parametrize("client", CLIENTS)
@pytest.mark.parametrize("size_name", list(SIZES))
@pytest.mark.parametrize("route_name", list(ROUTES))
def test_a_body_is_judged_by_the_route_whatever_the_client_and_size(
    server: Server, tmp_path: Path, route_name: str, size_name: str, client: str
) -> None:
    route = ROUTES[route_name]
    size = SIZES[size_name](route.limit)
    if size is not None and size > route.limit:
        body, expected = b"x" * size, {413}
    else:
        body, expected = route.body(server, size)
    assert size is None or len(body) == size
    headers = {"Content-Type": route.content_type, "Authorization": f"Bearer {TOKEN}"}
    status, answer = _client(client, tmp_path)(server.base + route.target, body, headers)
    assert status in expected, (
        f"{client} posted {len(body)} bytes to {route.target}: {status} {answer[:300]!r}"
    )
    value = json.loads(answer)
    if status >= 400:
        assert set(value["error"]) == {"code", "message", "details"}
        if status == 413:
            assert value["error"]["code"] == "payload_too_large"
    elif route_name in ("events", "records", "ingest"):
        assert value["appended"] + value["duplicates"] > 0  # the body's events were taken
