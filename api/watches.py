"""Standing alerts over HTTP: watches (behind a write token), their alerts as JSON, SSE and webhooks,
and a paper's alerts as an Atom feed any feed reader takes (open, as the records are)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from typing import Annotated, Any
from xml.sax.saxutils import escape

from fastapi import APIRouter, Header, Path, Query, Request, Response
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from ledger.alert_store import Alert
from ledger.codec import canonical, decode_json
from ledger.instants import format_recorded, now_us
from service import alerts as al
from service.ledger import Ledger

from . import docs
from .auth import require_writer
from .common import JSON, ArxivId, check_id, instant, ledger_of, read_body, resume_after, settings_of
from .errors import TooManySubscribers

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
_ERRORS = (401, 403, 404, 422)
_streams = threading.Semaphore(100)  # open alert streams per process (past it: 503 with Retry-After)


def _auth(request: Request) -> None:
    require_writer(request, settings_of(request))


def _json(value: Any, status: int = 200) -> Response:
    return Response(canonical(value), status_code=status, media_type=JSON)


@router.post(
    "/watches",
    summary="Watch a paper's outbound references or a list of works for notices",
    status_code=201,
    responses=docs.responses(201, *_ERRORS, 413),
)
async def post_watch(request: Request) -> Response:
    """`{"arxiv_id": ...}` or `{"works": ["doi:...", "arxiv:..."]}`, optionally `callback_url` (https)
    and `secret` (webhooks signed with it): 201 with the watch and the works it covers now."""
    _auth(request)
    raw = await read_body(request, MAX_WATCH_BODY)
    spec = al.parse_watch(decode_json(raw), settings_of(request).webhook_allow)
    ledger = ledger_of(request)
    watch, covered = await run_in_threadpool(al.add_watch, ledger.store, spec)
    if getattr(request.app.state, "alerting", None) is not None:
        request.app.state.alerting.deliver_wake.set()  # its held alerts are due now
    return _json(al.watch_json(watch, covered), 201)


@router.get("/watches", summary="The watches in force", responses=docs.responses(200, *_ERRORS))
def list_watches(
    request: Request,
    after: Annotated[str, Query(max_length=64, pattern=NO_NUL, description="Watch id to list after")] = "",
) -> Response:
    """The watches in force by id, a page at a time (`next` names the next page's `after`)."""
    _auth(request)
    page = ledger_of(request).store.alerts.watches(after, PAGE)
    body = {"watches": [al.watch_json(w) for w in page], "next": page[-1].id if len(page) == PAGE else None}
    return _json(body)


@router.get(
    "/watches/{watch_id}",
    summary="One watch and the works it covers",
    responses=docs.responses(200, *_ERRORS),
)
def get_watch(request: Request, watch_id: WatchId) -> Response:
    """The watch and the work_ids it covers now."""
    _auth(request)
    ledger = ledger_of(request)
    watch = al.watch_of(ledger.store, watch_id)
    covered = sorted({w for w, _ in ledger.store.alerts.covered(watch.id)})
    return _json(al.watch_json(watch, covered))


@router.delete("/watches/{watch_id}", summary="Stop a watch", responses=docs.responses(200, *_ERRORS))
def delete_watch(request: Request, watch_id: WatchId) -> Response:
    """The watch stops: no alert is raised for it any more, its pending deliveries are dropped."""
    _auth(request)
    ledger = ledger_of(request)
    watch = al.watch_of(ledger.store, watch_id)
    tables = ledger.store.alerts
    with tables.updating():
        tables.remove_watch(watch.id, format_recorded(now_us()))
    return _json({"id": watch.id, "removed": True})


def _alerts_json(alerts: list[Alert]) -> list[Any]:
    return [{"n": a.n, **decode_json(a.body)} for a in alerts]


@router.get("/watches/{watch_id}/alerts", summary="A watch's alerts", responses=docs.responses(200, *_ERRORS))
def watch_alerts(
    request: Request,
    watch_id: WatchId,
    after: Annotated[int, Query(ge=0, description="Alert number to list after")] = 0,
    since: Annotated[
        str | None, Query(description="Only alerts raised at or after (RFC 3339 or YYYY-MM-DD)")
    ] = None,
) -> Response:
    """`{"alerts": [...], "next": N}`: the alerts in the order they were raised, a page at a time."""
    _auth(request)
    ledger = ledger_of(request)
    watch = al.watch_of(ledger.store, watch_id)
    page = ledger.store.alerts.alerts(watch.id, after, PAGE, instant(since, "since"))
    return _json({"alerts": _alerts_json(page), "next": page[-1].n if len(page) == PAGE else None})


@router.get(
    "/watches/{watch_id}/deliveries",
    summary="A watch's webhook delivery attempts",
    responses=docs.responses(200, *_ERRORS),
)
def watch_deliveries(
    request: Request,
    watch_id: WatchId,
    after: Annotated[int, Query(ge=0, description="Attempt id to list after")] = 0,
) -> Response:
    """Every attempt: when, the address connected to, the status answered or why none came, when next."""
    _auth(request)
    ledger = ledger_of(request)
    watch = al.watch_of(ledger.store, watch_id)
    page = ledger.store.alerts.deliveries(watch.id, after, PAGE)
    body = {"deliveries": [d._asdict() for d in page], "next": page[-1].id if len(page) == PAGE else None}
    return _json(body)


@router.get(
    "/watches/{watch_id}/alerts/stream",
    summary="A watch's alerts as Server-Sent Events, resumable",
    responses=docs.responses(200, *_ERRORS, 503),
)
async def watch_alert_stream(
    request: Request,
    watch_id: WatchId,
    after: Annotated[int, Query(ge=0, description="Alert number to resume after")] = 0,
    last_event_id: Annotated[str | None, Header(description="Resume after this alert number")] = None,
) -> StreamingResponse:
    """Every alert after `after` (or Last-Event-ID), then new ones as they are raised; `id:` is the
    alert's number, `event: alert`, `data:` the alert JSON."""
    _auth(request)
    ledger = ledger_of(request)
    watch = await run_in_threadpool(al.watch_of, ledger.store, watch_id)
    resume = resume_after(last_event_id, "alert number")
    if resume is not None:
        after = resume
    if not _streams.acquire(blocking=False):
        raise TooManySubscribers(
            "too many alert streams open on this server; try again shortly", retry_after="5"
        )
    return StreamingResponse(_stream(request, ledger, watch.id, after), media_type="text/event-stream")


async def _stream(request: Request, ledger: Ledger, watch_id: str, after: int) -> AsyncIterator[bytes]:
    try:
        quiet = 0.0
        while not await request.is_disconnected():
            page = await run_in_threadpool(ledger.store.alerts.alerts, watch_id, after, PAGE)
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
    found = al.paper_notices(ledger.store, arxiv_id, now_us())
    return Response(atom(request, arxiv_id, found), media_type="application/atom+xml")


def _attr(value: str) -> str:
    """`value` escaped for an XML attribute in double quotes."""
    return escape(value, {'"': "&quot;"})


def atom(request: Request, arxiv_id: str, found: list[al.PaperNotice]) -> bytes:
    """The Atom 1.0 document of a paper's notices (RFC 4287)."""
    base = str(request.base_url).rstrip("/")
    feed_url = f"{base}/paper/{arxiv_id}/alerts.atom"
    updated = max((n.observed_at for n in found), default=format_recorded(now_us()))
    entries = []
    for n in sorted(found, key=lambda n: (n.observed_at, n.seq), reverse=True):
        kind = n.notice.get("kind", "notice").replace("_", " ")
        title = f"{kind} of {n.title or n.work_id} (reported by {n.source})"
        link = f"{base}/paper/{arxiv_id}/citation-record?as_of={n.observed_at}"
        summary = (
            f"arXiv:{arxiv_id} cites {n.title or 'a work'} (work {n.work_id}, reference "
            f"{n.reference_index}); {n.source} reports a {kind}"
            + (f", notice {n.notice['notice_doi']}" if n.notice.get("notice_doi") else "")
            + (f", dated {n.notice['notice_date']}" if n.notice.get("notice_date") else "")
            + f". First held by the ledger in event seq {n.seq} ({n.hash})."
        )
        entries.append(
            "<entry>"
            f"<id>urn:uuid:{escape(n.id)}</id>"
            f"<title>{escape(title)}</title>"
            f"<updated>{escape(n.observed_at)}</updated>"
            f'<link rel="alternate" href="{_attr(link)}"/>'
            f"<summary>{escape(summary)}</summary>"
            "</entry>"
        )
    doc = (
        '<?xml version="1.0" encoding="utf-8"?>'
        '<feed xmlns="http://www.w3.org/2005/Atom">'
        f"<id>{escape(feed_url)}</id>"
        f"<title>Notices on works cited by arXiv:{escape(arxiv_id)}</title>"
        f"<updated>{escape(updated)}</updated>"
        "<author><name>citation-ledger</name></author>"
        f'<link rel="self" href="{_attr(feed_url)}"/>'
        f'<link rel="alternate" href="{_attr(f"{base}/paper/{arxiv_id}/citation-record")}"/>'
        + "".join(entries)
        + "</feed>"
    )
    return doc.encode()
