"""Read routes: records (JSON, HTML), the paper page, integrity, POST /verify, health, index."""

from __future__ import annotations

import time
from functools import partial
from typing import Annotated
from urllib.parse import quote

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import HTMLResponse
from starlette.concurrency import run_in_threadpool

from api import docs
from api.auth import token_hashes
from api.common import (
    JSON,
    ArxivId,
    check_id,
    clock_of,
    head_headers,
    head_json,
    instant,
    ledger_of,
    read_body,
    settings_of,
)
from api.errors import ChainUnhealthy
from api.negotiate import VARY, prefers_json
from api.ops import telemetry
from api.ops.scrub import broken_walk, chain_headers, passes_of
from api.records import negotiated
from api.records.held import HeldAnswer, verify_held
from api.records.integrity import integrity_report
from api.records.negotiated import error_page
from api.records.record_cache import RecordCache
from api.records.render import (
    render_index_page,
    render_integrity_page,
    render_paper_page,
    render_record_page,
)
from api.records.timeline import render_timeline
from api.state import state_of
from ledger.model.codec import Encodable, canonical, decode_json
from ledger.model.errors import LedgerError, NotFound
from ledger.model.facts import Head, ScrubPass
from ledger.model.instants import format_as_of
from service.ledger import PaperView

router = APIRouter()
HIT, BUILT = "hit", "built"  # a record's bytes from the cache, or projected for this request

AsOf = Annotated[
    str | None,
    Query(
        description="RFC 3339 instant with offset, or YYYY-MM-DD (end of that day UTC); default now",
        examples=["2026-08-08T08:47:00Z"],
        json_schema_extra={"pattern": docs.AS_OF_PATTERN},
    ),
]
KnownAt = Annotated[
    str | None,
    Query(
        description="Only events recorded at or before this instant (same forms as as_of)",
        json_schema_extra={"pattern": docs.AS_OF_PATTERN},
    ),
]

Page = Annotated[
    int,
    Query(
        ge=1,
        le=10**9,
        description="Page 1 proves what the record shows; pages 2.. the inbound observations it counts "
        "but does not show, 1000 per page (the report's `page.next` links them)",
    ),
]


# The /paper/{id}/... routes come before /paper/{id}: a path converter would swallow them.


@router.get(
    "/paper/{arxiv_id:path}/citation-record.json",
    tags=["records"],
    summary="The Paper Citation Record as of T, as canonical JSON bytes",
    responses=docs.responses(200, 308, 404, 422, ok="Record"),
)
async def record_json(
    request: Request, arxiv_id: ArxivId, as_of: AsOf = None, known_at: KnownAt = None
) -> Response:
    """The record (record-v1.md) exactly as hashed: canonical bytes, with the Ledger-Head."""
    began = time.perf_counter()
    arxiv_id = check_id(request, arxiv_id)
    t, k = instant(request, as_of, "as_of"), instant(request, known_at, "known_at")
    ledger = ledger_of(request)
    if t is None:  # as of now: a new instant on every call, never cached
        body, head, broken = await run_in_threadpool(_built, request, arxiv_id, t, k)
        telemetry.record_served(request, "json", BUILT, began)
        return Response(body, media_type=JSON, headers=_headers(head, broken))
    cache = _record_cache(request)

    def head_and_walk() -> tuple[Head, ScrubPass | None]:
        # the banner describes the head served
        return ledger.log.head_and_chain(partial(broken_walk, request.app))

    # two indexed reads: the head (the bytes held for it were built from exactly these events) and
    # the last full walk. A local file answers in microseconds, on the loop; a database server's
    # round trip may not.
    current, broken = head_and_walk() if ledger.records.local else await run_in_threadpool(head_and_walk)
    hit = cache.get((arxiv_id, t, k, current))
    if hit is not None:
        telemetry.record_served(request, "json", HIT, began)
        return Response(hit, media_type=JSON, headers=_headers(current, broken))
    body, head, broken = await run_in_threadpool(_built, request, arxiv_id, t, k)
    cache.put((arxiv_id, t, k, head), body)
    telemetry.record_served(request, "json", BUILT, began)
    return Response(body, media_type=JSON, headers=_headers(head, broken))


def _built(
    request: Request, arxiv_id: str, t: int | None, k: int | None
) -> tuple[bytes, Head, ScrubPass | None]:
    """The record's canonical bytes, the head and the chain's banner, from one read of the ledger."""
    chain = partial(broken_walk, request.app)
    with ledger_of(request).evidence(arxiv_id, t, k, pages=False, chain=chain) as ev:
        return canonical(ev.built.record), ev.head, ev.broken


def _headers(head: Head, broken: ScrubPass | None) -> dict[str, str]:
    """Ledger-Head, and Ledger-Chain when the last full walk found the chain broken."""
    return {**head_headers(head), **chain_headers(broken)}


def _record_cache(request: Request) -> RecordCache:
    """The app's record cache (made with the app)."""
    return state_of(request.app).record_cache


def _timeline_and_record(
    request: Request, arxiv_id: str, t: int | None, *, strict: bool = False, alerts: bool = False
) -> PaperView:
    """The paper's timeline (kept per ledger head), its record as of T and the chain's banner, from one
    consistent read."""
    cache = state_of(request.app).timeline_cache
    found = ledger_of(request).records.timeline_and_record(
        arxiv_id,
        t,
        strict=strict,
        alerts=alerts,
        cached=lambda head: cache.get((arxiv_id, head)),
        chain=lambda: broken_walk(request.app),
    )
    cache.put((arxiv_id, found.head), found.timeline)
    return found


@router.get(
    "/paper/{arxiv_id:path}/citation-record",
    # an id the path cannot hold (a newline) matches no route: the app-wide JSON 404 answers it
    **docs.records_page(
        "The same record as an HTML page",
        {**docs.responses(200, 308, 422, html=True, json=False), **docs.responses(404, html=True)},
    ),
)
def record_html(request: Request, arxiv_id: ArxivId, as_of: AsOf = None) -> HTMLResponse:
    """The record page, the paper's timeline at its top; errors are HTML pages with the right status."""
    began = time.perf_counter()
    try:
        arxiv_id = check_id(request, arxiv_id)
        t = instant(request, as_of, "as_of")
        view = _timeline_and_record(request, arxiv_id, t, strict=True, alerts=True)
    except LedgerError as e:
        return error_page(e)
    assert view.record is not None
    rendered = render_timeline(view.timeline, t)
    broken = view.broken
    page = render_record_page(
        view.record,
        head=view.head.header(),
        timeline=rendered,
        alerts=view.held,
        broken=broken,
        sides=view.sides,
    )
    telemetry.record_served(request, "html", BUILT, began)
    return HTMLResponse(page, headers=_headers(view.head, broken))


@router.get(
    "/paper/{arxiv_id:path}/integrity",
    tags=["records"],
    summary="What was verified for the record as of T",
    responses=docs.responses(200, 308, 404, 422, ok="IntegrityReport", html=True),
)
def integrity(
    request: Request, arxiv_id: ArxivId, as_of: AsOf = None, known_at: KnownAt = None, page: Page = 1
) -> Response:
    """Chain status, the events that built the record, and its digests rebuilt from them (paged); a page
    for a browser (text/html above JSON in Accept), the JSON report for any other client."""
    try:
        arxiv_id = check_id(request, arxiv_id)
        t, k = instant(request, as_of, "as_of"), instant(request, known_at, "known_at")
        # one instant for the record and its in-memory rebuild
        t = clock_of(request).now_us() if t is None else t
        read_only = settings_of(request).read_only
        ledger, passes = ledger_of(request), passes_of(request.app)
        chain = partial(broken_walk, request.app)
        report, head, broken = integrity_report(
            ledger, arxiv_id, t, k, page=page, passes=passes, read_only=read_only, banner=chain
        )
    except LedgerError as e:
        return negotiated.error(request, e, [("The record", f"/paper/{arxiv_id}/citation-record")])
    record = f"/paper/{arxiv_id}/citation-record?as_of={quote(report['as_of'], safe=':')}"
    return negotiated.answer(
        request,
        lambda: canonical(report),
        _headers(head, broken),
        lambda: render_integrity_page(report, links={"record": record}, broken=broken),
    )


@router.get(
    "/paper/{arxiv_id:path}",
    **docs.records_page(
        "The paper: its snapshots over time and links to its record views",
        docs.responses(200, 308, 404, 422, ok="PaperAnswer", html=True),
    ),
)
def paper(request: Request, arxiv_id: ArxivId, as_of: AsOf = None) -> Response:
    """HTML by default, with the paper's timeline and its record as of T (default now); JSON (the
    snapshots) when application/json ranks above text/html in Accept; both Vary on Accept."""
    as_json = prefers_json(request.headers.get("accept"))
    ledger = ledger_of(request)
    try:
        arxiv_id = check_id(request, arxiv_id)
        t = instant(request, as_of, "as_of")
        history = ledger.records.paper_history(arxiv_id)
        if not history:
            raise NotFound(
                f"arXiv:{arxiv_id} has never been observed in this ledger",
                details={"arxiv_id": arxiv_id, "first_observed_at": None},
            )
    except LedgerError as e:
        return negotiated.error(request, e, html=not as_json)
    base = f"/paper/{arxiv_id}"
    snapshots = [
        {
            "seq": f.seq,
            "observed_at": f.observed_at,
            "title": f.data.title,
            "version": f.data.version,
            "submitted_at": f.data.submitted_at,
            "last_updated": f.data.last_updated,
            "primary_category": f.data.primary_category,
            "record_href": f"{base}/citation-record?as_of={quote(f.observed_at, safe='')}",
        }
        for f in history
    ]
    links = {
        "paper": base,
        "html": f"{base}/citation-record",
        "json": f"{base}/citation-record.json",
        "integrity": f"{base}/integrity",
        "bundle": f"{base}/bundle",
        "evidence": "/evidence",
    }
    if as_json:
        body: dict[str, Encodable] = {"arxiv_id": arxiv_id, "snapshots": snapshots, "links": links}
        broken = broken_walk(request.app)
        return Response(canonical(body), media_type=JSON, headers={**_headers(ledger.head(), broken), **VARY})
    view = _timeline_and_record(request, arxiv_id, t)
    broken = view.broken
    rendered = render_timeline(view.timeline, t, paper_page=True)
    shown = format_as_of(view.as_of_us)
    page = render_paper_page(
        arxiv_id, snapshots, links, timeline=rendered, record=view.record, as_of=shown, broken=broken
    )
    return HTMLResponse(page, headers={**_headers(view.head, broken), **VARY})


@router.post(
    "/verify",
    tags=["records"],
    summary="Check a record someone holds: its digests, and against this ledger",
    responses=docs.responses(200, 413, 422, ok="VerifyAnswer"),
    openapi_extra=docs.record_body("A Paper Citation Record as someone holds it."),
)
async def verify(request: Request, known_at: KnownAt = None) -> Response:
    """Digests recomputed from the held record's content, and the JSON paths where it differs
    from what this ledger projects for the same paper at the record's as_of."""
    k = instant(request, known_at, "known_at")
    raw = await read_body(request, settings_of(request).max_body)
    answer, head = await run_in_threadpool(_verify, request, raw, k)
    return Response(canonical(answer), media_type=JSON, headers=head_headers(head))


def _verify(request: Request, raw: bytes, known_us: int | None) -> tuple[HeldAnswer, Head]:
    return verify_held(ledger_of(request), decode_json(raw), known_us)


@router.get(
    "/healthz",
    tags=["service"],
    summary="Liveness, with the ledger head and the last full walk of the chain",
    responses=docs.responses(200, 503, ok="Health"),
)
def healthz(request: Request) -> Response:
    """The head, whether this server accepts writes, and the last recorded full walk of the chain
    (scrub or verify); 503 `chain_broken` naming the first broken seq when that walk found a break."""
    head = ledger_of(request).head()
    settings = settings_of(request)
    last = passes_of(request.app).last()
    if last is not None and not last.ok:
        error = ChainUnhealthy(
            f"the chain is broken at seq {last.first_bad_seq}: {last.reason} (found by the last full walk, "
            f"{last.kind}, finished at {last.finished_at})",
            details={
                "first_bad_seq": last.first_bad_seq,
                "last_full_walk": last.to_dict(),
                "head": head_json(head),
            },
        )
        error.headers = head_headers(head)
        raise error
    body: dict[str, Encodable] = {
        "status": "ok",
        "head": head_json(head),
        "read_only": settings.read_only,
        "writes_enabled": not settings.read_only and bool(token_hashes(settings)),
        "last_full_walk": None if last is None else last.to_dict(),
    }
    return Response(canonical(body), media_type=JSON, headers=head_headers(head))


INDEX_PAGE = 100


@router.get("/", include_in_schema=False, response_class=HTMLResponse)
def index(request: Request, page: Annotated[int, Query(ge=1, le=10**6)] = 1) -> HTMLResponse:
    """A page of the papers in this ledger (most events first), linking to their records, and a search
    box."""
    ledger = ledger_of(request)
    head = ledger.head()
    papers = []
    ids = ledger.records.papers(INDEX_PAGE + 1, (page - 1) * INDEX_PAGE)
    for arxiv_id in ids[:INDEX_PAGE]:
        history = ledger.records.paper_history(arxiv_id)
        latest = max(history, key=lambda f: (f.observed_us, f.seq))
        papers.append({"arxiv_id": arxiv_id, "title": latest.data.title})
    broken = broken_walk(request.app)
    page_html = render_index_page(
        papers, head=head.header(), page=page, per_page=INDEX_PAGE, more=len(ids) > INDEX_PAGE, broken=broken
    )
    return HTMLResponse(page_html, headers=_headers(head, broken))
