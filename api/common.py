"""Helpers every route module shares: the app's ledger, parameter checks, the Ledger-Head header."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from typing import Annotated
from urllib.parse import quote

from fastapi import Path, Query, Request, params

from api import docs
from api.errors import Moved, PayloadTooLarge, RequestTimeout
from api.settings import Settings
from api.state import state_of
from ledger.model.errors import InvalidEvent
from ledger.model.facts import Head
from ledger.model.ids import normalise_arxiv
from ledger.model.instants import Clock, read_instant
from ledger.model.jsonvalue import Json, JsonObject
from service.ledger import Ledger

HEAD_HEADER = "Ledger-Head"
JSON = "application/json"
# The largest integer SQLite's INTEGER and PostgreSQL's bigint bind: every integer parameter that reaches
# SQL is bounded by it, else a larger one fails in the driver (a 500) instead of a 422.
MAX_SQL_INT = 2**63 - 1


def after_query(description: str) -> params.Query:
    """A `Query` for a non-negative number that reaches SQL (a seq, an alert number, an attempt id)."""
    return Query(ge=0, le=MAX_SQL_INT, description=description)


def counter_header(value: str, name: str, what: str) -> int:
    """A header holding such a number (Last-Event-ID); 422 naming the header unless it is one."""
    text = value.strip()
    # counted before int() reads it: past 4,300 digits int() raises ValueError
    if not (text.isascii() and text.isdigit() and len(text) <= len(str(MAX_SQL_INT))):
        raise InvalidEvent(name, f"must be {what}, a decimal number up to {MAX_SQL_INT}")
    if int(text) > MAX_SQL_INT:
        raise InvalidEvent(name, f"must be {what}, a decimal number up to {MAX_SQL_INT}")
    return int(text)


def ledger_of(request: Request) -> Ledger:
    """The Ledger this app serves."""
    return state_of(request.app).ledger


def settings_of(request: Request) -> Settings:
    """The Settings this app was built with."""
    return state_of(request.app).settings


def clock_of(request: Request) -> Clock:
    """The clock of this app (its ledger's): what every route takes for now."""
    return state_of(request.app).clock


# `{arxiv_id:path}`: old-style ids contain a slash (hep-th/9901001); the id is validated in code.
ArxivId = Annotated[
    str,
    Path(
        description="arXiv id: `NNNN.NNNNN` or old-style `archive/NNNNNNN`; the id as pasted (`arXiv:` "
        "prefix, version suffix, arxiv.org URL, 10.48550 DOI) is redirected (308) to this form",
        examples=["2509.02480"],
        json_schema_extra={"pattern": docs.ARXIV_PATTERN},  # the canonical form; check_id reads the rest
    ),
]


def check_id(request: Request, arxiv_id: str) -> str:
    """The canonical arXiv id of a `/paper/{id}/...` path; an id as pasted (an arXiv: prefix, a version
    suffix, an arxiv.org URL, a 10.48550 DOI) raises Moved to the canonical path with the same query
    string; anything else is 422 naming `arxiv_id` and the forms expected."""
    canonical = normalise_arxiv(arxiv_id, "arxiv_id")
    if canonical == arxiv_id:
        return canonical
    path: str = request.scope["path"]
    prefix = "/paper/" + arxiv_id
    # the route's path converter took the id from this very path, so it starts with it
    rest = path[len(prefix) :] if path.startswith(prefix) else ""
    location = request.scope.get("root_path", "") + quote(f"/paper/{canonical}{rest}", safe="/:")
    query = request.scope.get("query_string", b"").decode("latin-1")
    raise Moved(f"{location}?{query}" if query else location)


def instant(request: Request, value: str | None, name: str, *, future: bool = False) -> int | None:
    """An as_of/known_at/from/to parameter (RFC 3339 with offset, or YYYY-MM-DD) as UTC microseconds;
    422 naming it when it is none, or lies past the app's clock (`read_instant`) unless `future`
    allows it."""
    if value is None or value == "":
        return None
    return read_instant(value, name, clock_of(request).now_us(), future=future)


def head_headers(head: Head) -> dict[str, str]:
    """The Ledger-Head header of an answer computed from `head`."""
    return {HEAD_HEADER: head.header()}


def json_object(value: Json) -> JsonObject:
    """`value`, a JSON object this server built (a service's answer read back); TypeError if not one."""
    if not isinstance(value, dict):
        raise TypeError(f"a JSON object was expected, not {type(value).__name__}")
    return value


def head_json(head: Head) -> JsonObject:
    """The head as JSON."""
    return {"seq": head.seq, "hash": head.hash}


async def body_chunks(
    request: Request, limit: int, what: str = "the limit", settings: Settings | None = None
) -> AsyncIterator[bytes]:
    """The body's chunks: 413 past `limit` bytes, 408 when it arrives slower than the settings allow.

    A client has `body_timeout` seconds for its whole body, plus one second per `body_min_rate` bytes
    received (a 500 MB source file on a good line is fine); a body trickled a byte at a time is not.
    The limits are `settings`' (else the app's).
    """
    settings = settings or settings_of(request)
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(
            f"the body is {int(declared)} bytes; {what} is {limit} bytes",
            details={"limit": limit, "content_length": int(declared)},
        )
    start = time.monotonic()
    received = 0
    chunks = request.stream().__aiter__()
    while True:
        allowed = settings.body_timeout + received / settings.body_min_rate
        try:
            # the deadline moves with what arrived, and covers a client that stops sending at all
            # asyncio.timeout keeps a cancellation that comes as a chunk arrives (wait_for on 3.11 does not)
            async with asyncio.timeout(max(start + allowed - time.monotonic(), 0)):
                chunk = await chunks.__anext__()
        except StopAsyncIteration:
            return
        except TimeoutError:
            raise RequestTimeout(
                f"the body did not arrive in time: {received} bytes in {time.monotonic() - start:.1f} s; "
                f"a body has {settings.body_timeout:g} s (LEDGER_BODY_TIMEOUT) plus 1 s per "
                f"{settings.body_min_rate} bytes received (LEDGER_BODY_MIN_RATE)",
                details={
                    "received": received,
                    "timeout_s": settings.body_timeout,
                    "min_rate": settings.body_min_rate,
                },
            ) from None
        received += len(chunk)
        # Count while streaming too: a chunked body has no Content-Length to trust.
        if received > limit:
            raise PayloadTooLarge(f"the body exceeds {what} of {limit} bytes", details={"limit": limit})
        yield chunk


async def read_body(request: Request, limit: int) -> bytes:
    """The whole body in memory (bounded by `limit`), under body_chunks' size and time limits."""
    body = bytearray()
    async for chunk in body_chunks(request, limit):
        body += chunk
    return bytes(body)
