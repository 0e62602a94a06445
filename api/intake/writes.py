"""Writes: POST /events and POST /records, behind a bearer token and the write limits."""

from __future__ import annotations

import time
from typing import Annotated

from fastapi import APIRouter, Query, Request, Response
from starlette.concurrency import run_in_threadpool

from api import docs
from api.auth import require_writer
from api.common import JSON, head_headers, head_json, ledger_of, read_body, settings_of
from api.errors import BatchTooLarge
from api.limits import RateLimiter, long_string, short_strings
from api.ops import telemetry
from api.settings import Settings
from api.state import state_of
from ledger.model.codec import canonical, decode_json
from ledger.model.errors import InvalidEvent
from ledger.model.importer import SCHEMA, Batch, parse_batch, quick_batch, record_to_batch
from ledger.model.jsonvalue import JsonIn, JsonObject
from service.ledger import AppendResult, Ledger, as_writer, by_token

router = APIRouter(tags=["writes"])

_WRITE_ERRORS = (401, 403, 409, 413, 422)


def _write_responses() -> dict[int | str, JsonObject]:
    """The documented answers of a write, with the limits' own (docs.py knows the common ones)."""
    out = docs.responses(201, 200, *_WRITE_ERRORS, ok="AppendAnswer")
    refusal = out[413]  # the error shape, as every refusal
    out[413] = {**refusal, "description": "The body or the batch is above its limit; nothing written"}
    out[408] = {**refusal, "description": "The body did not arrive in time; nothing written"}
    out[429] = {
        **refusal,
        "description": "This token is over its events-per-second rate; nothing written",
        "headers": {"Retry-After": {"description": "Seconds to wait", "schema": {"type": "integer"}}},
    }
    return out


# -- write limits (batch size, string length, rate per token, body time) --------------------------


class _Writer:
    """Who is writing (their token's hash) and the limits that apply to them."""

    def __init__(self, request: Request, token: str) -> None:
        self.settings: Settings = settings_of(request)
        self.token = token
        self.limiter: RateLimiter | None = state_of(request.app).rate_limiter

    def check_strings(self, raw: bytes, value: JsonIn, where: str) -> None:
        """422 naming the first string (or key) longer than the limit."""
        limit = self.settings.max_string
        if short_strings(raw, limit):
            return
        found = long_string(value, limit, where)
        if found is not None:
            place, length = found
            raise InvalidEvent(
                place,
                f"a string of {length} characters; the limit is {limit} (LEDGER_MAX_STRING)",
                details={"where": place, "length": length, "limit": limit},
            )

    def check_batch(self, events: int) -> None:
        """413 above the batch limit; otherwise charge the token's rate bucket for the events."""
        limit = self.settings.max_batch
        if events > limit:
            raise BatchTooLarge(
                f"{events} events in one write; the limit is {limit} events (LEDGER_MAX_BATCH)",
                details={"events": events, "limit": limit},
            )
        if self.limiter is not None:
            self.limiter.charge(self.token, events)


async def _authorized_body(request: Request) -> tuple[_Writer, bytes]:
    settings = settings_of(request)
    # Auth (and rate) first, then size, then parsing: a refused client never gets its body read.
    writer = _Writer(request, require_writer(request, settings))
    # a client trickling its body holds only its own connection, and not forever (408)
    return writer, await read_body(request, settings.max_body)


# -- end of write limits -------------------------------------------------------------------------


def append_answer(result: AppendResult) -> JsonObject:
    """The JSON answer of a write: counts, the head, and each event's seq, id, hash and duplicate flag."""
    return {
        "appended": result.appended,
        "duplicates": result.duplicates,
        "head": head_json(result.head),
        "events": [
            {
                "index": i.position,
                "seq": i.seq,
                "event_id": i.event_id,
                "hash": i.hash,
                "duplicate": i.duplicate,
            }
            for i in result.items
        ],
    }


def _answer(result: AppendResult) -> Response:
    status = 201 if result.appended else 200
    return Response(
        canonical(append_answer(result)),
        status_code=status,
        media_type=JSON,
        headers=head_headers(result.head),
    )


# a batch appended, its answer, and the seconds from the append's call to its acknowledged commit
Timed = tuple[Batch, AppendResult, float]


def _timed(ledger: Ledger, batch: Batch) -> Timed:
    began = time.perf_counter()
    result = ledger.append_batch(batch)
    return batch, result, time.perf_counter() - began


def _append_events(ledger: Ledger, writer: _Writer, raw: bytes) -> Timed:
    quick = quick_batch(raw) if short_strings(raw, writer.settings.max_string) else None
    if quick is not None:
        writer.check_batch(len(quick.events))
        return _timed(ledger, quick)
    value = decode_json(raw)
    writer.check_strings(raw, value, "")
    events = value.get("events") if isinstance(value, dict) else None
    if isinstance(events, list):
        writer.check_batch(len(events))  # counted before each event is decoded
    return _timed(ledger, parse_batch(value))


def _append_record(ledger: Ledger, writer: _Writer, raw: bytes, force: bool) -> Timed:
    value = decode_json(raw)
    if not isinstance(value, dict) or value.get("schema") != SCHEMA:
        raise InvalidEvent("schema", f"the body must be a record whose schema is {SCHEMA!r}")
    writer.check_strings(raw, value, "")
    batch: Batch = record_to_batch(value, force=force)
    writer.check_batch(len(batch.events))
    return _timed(ledger, batch)


@router.post(
    "/events",
    summary="Append a batch of events atomically",
    status_code=201,
    responses=_write_responses(),
    openapi_extra=docs.events_body(),
)
async def post_events(request: Request) -> Response:
    """All events valid and appended (201), all already present (200), or nothing written."""
    writer, raw = await _authorized_body(request)
    ledger, by = ledger_of(request), by_token(writer.token, "POST /events")
    batch, result, seconds = await run_in_threadpool(
        as_writer(by, lambda: _append_events(ledger, writer, raw))
    )
    telemetry.appended(request, "events", batch.events, result, seconds)
    return _answer(result)


@router.post(
    "/records",
    summary="Import a Paper Citation Record as one batch",
    status_code=201,
    responses=_write_responses(),
    openapi_extra=docs.record_body("The record to import (its digests are checked unless force)."),
)
async def post_records(
    request: Request,
    force: Annotated[
        bool, Query(description="Import even if the record's digests do not match its content.")
    ] = False,
) -> Response:
    """Decompose a record into events (record-v1.md) and append them as one batch."""
    writer, raw = await _authorized_body(request)
    ledger, by = ledger_of(request), by_token(writer.token, "POST /records")
    batch, result, seconds = await run_in_threadpool(
        as_writer(by, lambda: _append_record(ledger, writer, raw, force))
    )
    telemetry.appended(request, "records", batch.events, result, seconds)
    return _answer(result)
