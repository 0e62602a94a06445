"""What the server tells its operator: GET /metrics, the middleware that counts (and, with
LEDGER_LOG_FORMAT=json, logs) every request under an id answered as X-Request-Id, and the calls the
routes make once an append or a record is done."""

from __future__ import annotations

import time
from collections.abc import Sequence

from fastapi import APIRouter, Request, Response
from starlette.concurrency import run_in_threadpool
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from api import docs
from api.auth import require_token
from api.common import ledger_of, settings_of
from api.ops import logs, metrics
from api.ops.scrub import passes_of
from api.settings import Settings
from ledger.model.events import Event
from ledger.model.jsonvalue import JsonObject
from service.ledger import AppendResult
from service.sources import Summary

router = APIRouter(tags=["service"])
UNMATCHED = "unmatched"  # the route label of a request no route took (a 404): never the client's path

_METRICS_DOC: dict[int | str, JsonObject] = {
    200: {
        "description": "Prometheus text exposition format",
        "content": {"text/plain": {"schema": {"type": "string"}}},
    },
    401: docs.responses(401)[401],
}


@router.get(
    "/metrics",
    summary="Prometheus metrics: what this server did, and the ledger's head, last walk and checkpoint now",
    responses=_METRICS_DOC,
    response_class=Response,
)
async def get_metrics(request: Request) -> Response:
    """Counters and histograms of every worker, and gauges read from the database for this scrape;
    with LEDGER_METRICS=token, only for a configured bearer token."""
    settings = settings_of(request)
    if settings.metrics == "token":
        require_token(request, settings, "GET /metrics (LEDGER_METRICS=token)")
    ops = ledger_of(request).ops
    body = await run_in_threadpool(metrics.exposition, ops, passes_of(request.app))
    return Response(body, media_type=metrics.CONTENT_TYPE)


class Telemetry:
    """ASGI middleware: each HTTP request gets an id (X-Request-Id), is counted by route template, method
    and status, and, with JSON logs, leaves one line when its answer ends."""

    def __init__(self, app: ASGIApp, settings: Settings) -> None:
        self.app = app
        self.counting = settings.counting
        self.json_logs = settings.json_logs

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve the request under its id; count and log it afterwards, whatever happened."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        rid = logs.request_id(_header(scope, b"x-request-id"))
        header = (b"x-request-id", rid.encode())
        token = logs.REQUEST_ID.set(rid)
        began = time.perf_counter()
        status = 500  # what the server answers when the app raised before answering

        async def answer(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
                message["headers"] = [*message.get("headers", ()), header]
            await send(message)

        try:
            await self.app(scope, receive, answer)
        finally:
            seconds = time.perf_counter() - began
            route = _route(scope)
            if self.counting:
                metrics.http_request(route, scope["method"], status, seconds)
            if self.json_logs:
                client = scope.get("client")
                logs.log_request(
                    scope["method"], scope["path"], route, status, seconds, client[0] if client else None
                )
            logs.REQUEST_ID.reset(token)


def _header(scope: Scope, name: bytes) -> bytes | None:
    for key, value in scope["headers"]:
        if key == name:
            return bytes(value)
    return None


def _route(scope: Scope) -> str:
    """The template of the route that took the request (FastAPI puts it in the scope), else UNMATCHED."""
    path = getattr(scope.get("route"), "path", None)
    return path if isinstance(path, str) else UNMATCHED


def appended(
    request: Request,
    route: str,
    events: Sequence[Event],
    result: AppendResult,
    seconds: float,
    source: str | None = None,
) -> None:
    """An append of this request committed: count it, and log its line."""
    settings = settings_of(request)
    if settings.counting:
        metrics.appended(route, events, result, seconds)
    if settings.json_logs:
        logs.log_append(
            route, len(result.items), result.appended, result.duplicates, result.head.seq, seconds, source
        )


def ingested(request: Request, source: str, summary: Summary | None) -> None:
    """A source file of this request was ingested (None: refused)."""
    if settings_of(request).counting:
        metrics.ingested(source, summary)


def record_served(request: Request, fmt: str, cache: str, began: float) -> None:
    """A record was answered (began: time.perf_counter() when its request was taken)."""
    if settings_of(request).counting:
        metrics.record_served(fmt, cache, time.perf_counter() - began)
