"""Helpers every route module shares: the app's ledger, parameter checks, the Ledger-Head header."""

from __future__ import annotations

from fastapi import Request

from ledger.codec import ARXIV_RE
from ledger.errors import InvalidEvent
from ledger.facts import Head
from ledger.instants import parse_as_of
from ledger.service import Ledger

from .errors import PayloadTooLarge
from .settings import Settings

HEAD_HEADER = "Ledger-Head"
JSON = "application/json"


def ledger_of(request: Request) -> Ledger:
    """The Ledger this app serves."""
    ledger: Ledger = request.app.state.ledger
    return ledger


def settings_of(request: Request) -> Settings:
    """The Settings this app was built with."""
    settings: Settings = request.app.state.settings
    return settings


def check_id(arxiv_id: str) -> str:
    """The arXiv id of a path, or 422 naming what is expected."""
    if not ARXIV_RE.fullmatch(arxiv_id):
        raise InvalidEvent(
            "arxiv_id",
            f"bad arXiv id {arxiv_id!r}: expected NNNN.NNNNN or archive/NNNNNNN, no version suffix",
        )
    return arxiv_id


def instant(value: str | None, name: str) -> int | None:
    """An as_of/known_at parameter (RFC 3339 with offset, or YYYY-MM-DD) as UTC microseconds."""
    if value is None or value == "":
        return None
    try:
        return parse_as_of(value)
    except ValueError as e:
        raise InvalidEvent(name, f"{e}; expected RFC 3339 with an offset or YYYY-MM-DD") from None


def head_headers(head: Head) -> dict[str, str]:
    """The Ledger-Head header of an answer computed from `head`."""
    return {HEAD_HEADER: head.header()}


def head_json(head: Head) -> dict[str, int | str]:
    """The head as JSON."""
    return {"seq": head.seq, "hash": head.hash}


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, refused with 413 as soon as it is known to exceed `limit` bytes."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise PayloadTooLarge(
            f"the body is {int(declared)} bytes; the limit is {limit} bytes",
            details={"limit": limit, "content_length": int(declared)},
        )
    # Count while streaming too: a chunked body has no Content-Length to trust.
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            raise PayloadTooLarge(f"the body exceeds the limit of {limit} bytes", details={"limit": limit})
    return bytes(body)
