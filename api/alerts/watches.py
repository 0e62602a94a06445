"""Standing alerts over HTTP: watches (behind a write token), their alerts as JSON, SSE and webhooks,
and a paper's alerts as an Atom feed any feed reader takes (open, as the records are).

A watch belongs to the token that made it: another token neither lists it nor reads, streams or
deletes it (404, as for no watch at all, so its existence is not confirmed: a callback URL can be a
secret). Watches the CLI made belong to the operator and no token sees them."""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import AsyncIterator
from typing import Annotated, cast
from xml.sax.saxutils import escape

from fastapi import APIRouter, Header, Path, Query, Request, Response
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from api import docs
from api.auth import require_token, require_writer
from api.common import (
    JSON,
    ArxivId,
    after_query,
    check_id,
    counter_header,
    instant,
    ledger_of,
    read_body,
    settings_of,
)
from api.errors import TooManySubscribers
from api.limits import RateLimiter
from api.state import state_of
from ledger.model.codec import canonical, decode_json
from ledger.model.instants import format_recorded
from ledger.model.jsonvalue import JsonObject
from service.alerts.paper_notices import PaperNotice, work_name
from service.alerts.watch_spec import parse_rotation, parse_watch
from service.alerts.watches import rotation_json, watch_json
from service.ledger import Alert, Ledger

router = APIRouter(tags=["alerts"])

MAX_WATCH_BODY = 256 * 1024
PAGE = 100
STREAM_POLL_S = 0.5
HEARTBEAT_S = 15.0
# no U+0000: PostgreSQL text cannot hold it, so the lookup itself would fail (500) instead of finding nothing
NO_NUL = r"^[^\x00]*$"
WatchId = Annotated[
    str, Path(description="The watch's id (from POST /watches)", max_length=64, pattern=NO_NUL)
]
_ERRORS = (401, 403, 404, 422, 429)
_OVER_QUOTA: dict[int | str, JsonObject] = {
    409: {**docs.responses(409)[409], "description": "The token holds LEDGER_MAX_WATCHES watches"}
}
_streams = threading.Semaphore(100)  # open alert streams per process (past it: 503 with Retry-After)


def _auth(request: Request) -> str:
    """The caller's token, by its sha256 (as the token file holds it): whose watches it may change."""
    return require_writer(request, settings_of(request))


def _reader(request: Request) -> str:
    """The caller's token, by its sha256: whose watches it may see. A read, so a read-only server or
    one over its write rate still answers it, and a refusal does not speak of writes."""
    return require_token(request, settings_of(request), "reading a watch")


def _json(body: bytes, status: int = 200) -> Response:
    return Response(body, status_code=status, media_type=JSON)


@router.post(
    "/watches",
    summary="Watch a paper's outbound references or a list of works for notices",
    status_code=201,
    responses={**docs.responses(201, *_ERRORS, 413), **_OVER_QUOTA},
)
async def post_watch(request: Request) -> Response:
    """`{"arxiv_id": ...}` or `{"works": ["doi:...", "arxiv:..."]}`, optionally `callback_url` (https)
    and `secret` (webhooks signed with it; made when not given): 201 with the watch, the works it
    covers now and, this once, the secret the server made."""
    owner = _auth(request)
    settings = settings_of(request)
    limiter: RateLimiter | None = state_of(request.app).rate_limiter
    try:
        raw = await read_body(request, MAX_WATCH_BODY)
        spec = parse_watch(decode_json(raw), settings.webhook_allow)
        ledger = ledger_of(request)
        most = settings.max_watches
        watch, covered = await run_in_threadpool(ledger.alerts.add_watch, spec, owner, most)
    finally:
        if limiter is not None:
            limiter.charge(owner, 1)  # a write, as one event; a refused one costs the attempt too
    alerting = state_of(request.app).alerting
    if alerting is not None:
        alerting.deliver_wake.set()  # its held alerts are due now
    return _json(canonical(watch_json(watch, covered, spec.secret_made)), 201)


@router.get("/watches", summary="The watches in force", responses=docs.responses(200, *_ERRORS))
def list_watches(
    request: Request,
    after: Annotated[str, Query(max_length=64, pattern=NO_NUL, description="Watch id to list after")] = "",
) -> Response:
    """This token's watches in force by id, a page at a time (`next` names the next page's `after`)."""
    owner = _reader(request)
    page = ledger_of(request).alerts.watches(after, PAGE, owner)
    body = {"watches": [watch_json(w) for w in page], "next": page[-1].id if len(page) == PAGE else None}
    return _json(canonical(body))


@router.get(
    "/watches/{watch_id}",
    summary="One watch and the works it covers",
    responses=docs.responses(200, *_ERRORS),
)
def get_watch(request: Request, watch_id: WatchId) -> Response:
    """The watch and the work_ids it covers now."""
    owner = _reader(request)
    ledger = ledger_of(request)
    watch = ledger.alerts.watch_of(watch_id, owner)
    covered = ledger.alerts.covered(watch.id)
    return _json(canonical(watch_json(watch, covered)))


@router.delete("/watches/{watch_id}", summary="Stop a watch", responses=docs.responses(200, *_ERRORS))
def delete_watch(request: Request, watch_id: WatchId) -> Response:
    """The watch stops: no alert is raised for it any more, its pending deliveries are dropped."""
    owner = _auth(request)
    watch = ledger_of(request).alerts.remove_watch(watch_id, owner)
    return _json(canonical({"id": watch.id, "removed": True}))


@router.post(
    "/watches/{watch_id}/secret",
    summary="Rotate a watch's webhook secret, keeping the watch and its alerts",
    responses={**docs.responses(200, *_ERRORS, 409, 413)},
)
async def rotate_secret(request: Request, watch_id: WatchId) -> Response:
    """`{}` (the server makes the secret and answers it this once) or `{"secret": ...}`: deliveries are
    signed with the new secret and, for LEDGER_WEBHOOK_SECRET_GRACE seconds, with the old one too;
    the watch, its alerts, their webhook-ids and its pending deliveries stay as they are."""
    owner = _auth(request)
    settings = settings_of(request)
    limiter: RateLimiter | None = state_of(request.app).rate_limiter
    try:
        raw = await read_body(request, MAX_WATCH_BODY)
        secret, made = parse_rotation(decode_json(raw) if raw.strip() else {})
        ledger = ledger_of(request)
        grace = settings.webhook_secret_grace
        rotated = await run_in_threadpool(ledger.alerts.rotate_secret, watch_id, secret, made, grace, owner)
    finally:
        if limiter is not None:
            limiter.charge(owner, 1)  # a write, as making a watch is
    return _json(canonical(rotation_json(rotated)))


def _alerts_json(alerts: list[Alert]) -> list[JsonObject]:
    # the ledger stores each alert's body as a JSON object
    return [{"n": a.n, **cast("JsonObject", decode_json(a.body))} for a in alerts]


@router.get("/watches/{watch_id}/alerts", summary="A watch's alerts", responses=docs.responses(200, *_ERRORS))
def watch_alerts(
    request: Request,
    watch_id: WatchId,
    after: Annotated[int, after_query("Alert number to list after")] = 0,
    since: Annotated[
        str | None, Query(description="Only alerts raised at or after (RFC 3339 or YYYY-MM-DD)")
    ] = None,
) -> Response:
    """`{"alerts": [...], "next": N}`: the alerts in the order they were raised, a page at a time."""
    owner = _reader(request)
    ledger = ledger_of(request)
    watch = ledger.alerts.watch_of(watch_id, owner)
    page = ledger.alerts.alerts(watch.id, after, PAGE, instant(request, since, "since", future=True))
    return _json(canonical({"alerts": _alerts_json(page), "next": page[-1].n if len(page) == PAGE else None}))


@router.get(
    "/watches/{watch_id}/deliveries",
    summary="A watch's webhook delivery attempts",
    responses=docs.responses(200, *_ERRORS),
)
def watch_deliveries(
    request: Request,
    watch_id: WatchId,
    after: Annotated[int, after_query("Attempt id to list after")] = 0,
) -> Response:
    """Every attempt: when, the address connected to, the status answered or why none came, when next."""
    owner = _reader(request)
    ledger = ledger_of(request)
    watch = ledger.alerts.watch_of(watch_id, owner)
    page = ledger.alerts.deliveries(watch.id, after, PAGE)
    body = {"deliveries": [d._asdict() for d in page], "next": page[-1].id if len(page) == PAGE else None}
    return _json(canonical(body))


@router.get(
    "/watches/{watch_id}/alerts/stream",
    summary="A watch's alerts as Server-Sent Events, resumable",
    responses=docs.responses(200, *_ERRORS, 503),
)
async def watch_alert_stream(
    request: Request,
    watch_id: WatchId,
    after: Annotated[int, after_query("Alert number to resume after")] = 0,
    last_event_id: Annotated[str | None, Header(description="Resume after this alert number")] = None,
) -> StreamingResponse:
    """Every alert after `after` (or Last-Event-ID), then new ones as they are raised; `id:` is the
    alert's number, `event: alert`, `data:` the alert JSON."""
    owner = _reader(request)
    ledger = ledger_of(request)
    watch = await run_in_threadpool(ledger.alerts.watch_of, watch_id, owner)
    if last_event_id is not None and last_event_id.strip():
        after = counter_header(last_event_id, "Last-Event-ID", "the number of the last alert received")
    if not _streams.acquire(blocking=False):
        raise TooManySubscribers(
            "too many alert streams open on this server; try again shortly", retry_after="5"
        )
    return StreamingResponse(_stream(request, ledger, watch.id, after), media_type="text/event-stream")


async def _stream(request: Request, ledger: Ledger, watch_id: str, after: int) -> AsyncIterator[bytes]:
    try:
        quiet = 0.0
        while not await request.is_disconnected():
            page = await run_in_threadpool(ledger.alerts.alerts, watch_id, after, PAGE)
            for a in page:
                yield b"id: %d\nevent: alert\ndata: %s\n\n" % (a.n, a.body.encode())
                after = a.n
            if page:
                quiet = 0.0
                continue
            if quiet >= HEARTBEAT_S:
                yield b": alive\n\n"
                quiet = 0.0
            await asyncio.sleep(STREAM_POLL_S)
            quiet += STREAM_POLL_S
    finally:
        _streams.release()


@router.get(
    "/paper/{arxiv_id:path}/alerts.atom",
    summary="A paper's notices for the works it cites, as an Atom feed",
    response_class=Response,
    responses={200: {"content": {"application/atom+xml": {}}}, **docs.responses(308, 404, 422)},
)
def paper_feed(request: Request, arxiv_id: ArxivId) -> Response:
    """One entry per (work, notice) the ledger holds for the works the paper cites, newest first."""
    arxiv_id = check_id(request, arxiv_id)
    ledger = ledger_of(request)
    now = ledger.clock.now_us()
    found = ledger.alerts.paper_notices(arxiv_id, now)
    public = settings_of(request).public_url
    return Response(atom(arxiv_id, found, now, public), media_type="application/atom+xml")


# XML 1.0 (section 2.2) allows only these characters; any other that a source or an event carries is
# shown as U+FFFD, so the feed stays well formed for every reader (the ledger keeps the text as given).
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")
# The feed's id without LEDGER_PUBLIC_URL (RFC 4151): the same whatever Host a request names.
FEED_TAG = "tag:citation-ledger,2026:"


def _text(value: str) -> str:
    """`value` as XML character data: escaped, each character XML 1.0 forbids replaced by U+FFFD."""
    return escape(_NOT_XML.sub("\ufffd", value))


def _attr(value: str) -> str:
    """`value` as an XML attribute in double quotes."""
    return _text(value).replace('"', "&quot;")


def atom(arxiv_id: str, found: list[PaperNotice], now_us: int, public_url: str | None = None) -> bytes:
    """The Atom 1.0 document of a paper's notices (RFC 4287), read at `now_us` (its `updated` when it
    has none); ids and links never come from a request.

    With `public_url` (LEDGER_PUBLIC_URL) they are absolute URLs on it. Without, the feed's id is a tag
    URI and its links are relative to the feed's own address, which every feed reader resolves them by.
    """
    if public_url:
        here = f"{public_url}/paper/{arxiv_id}/"
        feed_id = f"{here}alerts.atom"
    else:
        here = ""
        feed_id = f"{FEED_TAG}paper/{arxiv_id}/alerts.atom"
    updated = max((n.observed_at for n in found), default=format_recorded(now_us))
    entries = []
    for n in sorted(found, key=lambda n: (n.observed_at, n.seq), reverse=True):
        kind = str(n.notice.get("kind", "notice")).replace("_", " ")
        work = work_name(n.work())
        title = f"{kind} of {work} (reported by {n.source})"
        link = f"{here}citation-record?as_of={n.observed_at}"
        summary = (
            f"arXiv:{arxiv_id} cites {work} as reference {n.reference_index}; {n.source} reports a {kind}"
            + (f", notice {n.notice['notice_doi']}" if n.notice.get("notice_doi") else "")
            + (f", dated {n.notice['notice_date']}" if n.notice.get("notice_date") else "")
            + f". First held by the ledger in event seq {n.seq} ({n.hash})."
        )
        entries.append(
            "<entry>"
            f"<id>urn:uuid:{_text(n.id)}</id>"
            f"<title>{_text(title)}</title>"
            f"<updated>{_text(n.observed_at)}</updated>"
            f'<link rel="alternate" href="{_attr(link)}"/>'
            f"<summary>{_text(summary)}</summary>"
            "</entry>"
        )
    doc = (
        '<?xml version="1.0" encoding="utf-8"?>'
        '<feed xmlns="http://www.w3.org/2005/Atom">'
        f"<id>{_text(feed_id)}</id>"
        f"<title>Notices on works cited by arXiv:{_text(arxiv_id)}</title>"
        f"<updated>{_text(updated)}</updated>"
        "<author><name>citation-ledger</name></author>"
        f'<link rel="self" href="{_attr(f"{here}alerts.atom")}"/>'
        f'<link rel="alternate" href="{_attr(f"{here}citation-record")}"/>' + "".join(entries) + "</feed>"
    )
    return doc.encode()
