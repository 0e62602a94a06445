"""Writes: POST /events and POST /records, behind a bearer token and a body size limit."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response
from starlette.concurrency import run_in_threadpool

from ledger.append import AppendResult
from ledger.codec import canonical, decode_json
from ledger.errors import InvalidEvent
from ledger.importer import SCHEMA, Batch, parse_batch, record_to_batch
from ledger.service import Ledger

from . import docs
from .auth import require_writer
from .common import JSON, head_headers, ledger_of, read_body, settings_of

router = APIRouter(tags=["writes"])

_WRITE_ERRORS = (401, 403, 409, 413, 422)


async def _authorized_body(request: Request) -> bytes:
    settings = settings_of(request)
    # Auth first, then size, then parsing: a refused client never gets its body read or parsed.
    require_writer(request, settings)
    return await read_body(request, settings.max_body)


def _answer(result: AppendResult) -> Response:
    status = 201 if result.appended else 200
    return Response(
        canonical(result.to_dict()),
        status_code=status,
        media_type=JSON,
        headers=head_headers(result.head),
    )


def _append_events(ledger: Ledger, raw: bytes) -> AppendResult:
    return ledger.append_batch(parse_batch(decode_json(raw)))


def _append_record(ledger: Ledger, raw: bytes, force: bool) -> AppendResult:
    value = decode_json(raw)
    if not isinstance(value, dict) or value.get("schema") != SCHEMA:
        raise InvalidEvent("schema", f"the body must be a record whose schema is {SCHEMA!r}")
    batch: Batch = record_to_batch(value, force=force)
    return ledger.append_batch(batch)


@router.post(
    "/events",
    summary="Append a batch of events atomically",
    status_code=201,
    responses=docs.responses(201, 200, *_WRITE_ERRORS, ok="AppendAnswer"),
    openapi_extra=docs.events_body(),
)
async def post_events(request: Request) -> Response:
    """All events valid and appended (201), all already present (200), or nothing written."""
    raw = await _authorized_body(request)
    result = await run_in_threadpool(_append_events, ledger_of(request), raw)
    return _answer(result)


@router.post(
    "/records",
    summary="Import a Paper Citation Record as one batch",
    status_code=201,
    responses=docs.responses(201, 200, *_WRITE_ERRORS, ok="AppendAnswer"),
    openapi_extra=docs.record_body("The record to import (its digests are checked unless force)."),
)
async def post_records(
    request: Request,
    force: Annotated[
        bool, Query(description="Import even if the record's digests do not match its content.")
    ] = False,
) -> Response:
    """Decompose a record into events (record-v1.md) and append them as one batch."""
    raw = await _authorized_body(request)
    result = await run_in_threadpool(_append_record, ledger_of(request), raw, force)
    return _answer(result)
