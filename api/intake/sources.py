"""Routes for real sources in and what changed: POST /ingest/{source}, GET /paper/{id}/changes.

Mount this router before routes.router: `/paper/{id:path}` there would swallow `/paper/{id}/changes`.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from enum import Enum
from typing import IO, Annotated, TypedDict, TypeVar
from urllib.parse import quote

from fastapi import APIRouter, Path, Query, Request, Response
from starlette.concurrency import run_in_threadpool

from api import docs
from api.auth import require_writer
from api.common import JSON, body_chunks, check_id, clock_of, head_headers, instant, ledger_of, settings_of
from api.limits import RateLimiter
from api.ops import telemetry
from api.ops.scrub import broken_walk, chain_headers
from api.records import negotiated
from api.records.render import render_changes_page
from api.state import state_of
from ledger.model.codec import canonical
from ledger.model.errors import InvalidEvent, LedgerError
from ledger.model.events import Event
from ledger.model.jsonvalue import JsonObject
from service.ledger import AppendResult, as_writer, by_token
from service.sources import SOURCES, Appended, SourceFile, Summary, ingest
from service.sources.works import NAME, WorksSummary, ingest_works

router = APIRouter()

_SPOOL_IN_MEMORY = 8 * 1024 * 1024
IngestSummary = TypeVar("IngestSummary", Summary, WorksSummary)


async def _spool(request: Request, limit: int) -> IO[bytes]:
    spool = tempfile.SpooledTemporaryFile(max_size=_SPOOL_IN_MEMORY)  # noqa: SIM115 - returned open
    try:
        async for chunk in body_chunks(request, limit, "the ingest limit"):
            spool.write(chunk)
    except BaseException:
        spool.close()
        raise
    spool.seek(0)
    return spool  # type: ignore[return-value]


_BINARY: JsonObject = {"application/octet-stream": {"schema": {"type": "string", "format": "binary"}}}
_WORKS_BODY = docs.request_body(
    {"application/json": {"schema": {}}, "application/x-ndjson": {"schema": {"type": "string"}}, **_BINARY},
    "A Crossref or OpenAlex works file exactly as published (gzip accepted): a /works/{doi} or /works "
    "answer, an OpenAlex Work or {results: [...]}, or NDJSON of either's works.",
)
_SOURCE_BODY = docs.request_body(
    {"text/csv": {"schema": {"type": "string"}}, "application/json": {"schema": {}}, **_BINARY},
    "The file exactly as the source publishes it (gzip accepted).",
)


async def _ingest_charged(
    request: Request, token: str, label: str, run: Callable[[IO[bytes], Appended], IngestSummary]
) -> IngestSummary:
    """The body spooled (within the ingest limit) and ingested by `run` in a thread, each append
    counted in telemetry under `label`; the client is charged an attempt per event, one at least."""
    limit = settings_of(request).max_ingest_body
    body = await _spool(request, limit)
    limiter: RateLimiter | None = state_of(request.app).rate_limiter
    charge = 1  # a refused file costs an attempt, so a client cannot spin on bad files

    def appended(events: Sequence[Event], result: AppendResult, seconds: float) -> None:
        telemetry.appended(request, "ingest", events, result, seconds, label)

    try:
        by = by_token(token, "POST /ingest/" + label)
        summary = await run_in_threadpool(as_writer(by, lambda: run(body, appended)))
        charge = max(1, summary.appended + summary.duplicates)
    finally:
        body.close()
        if limiter is not None:
            limiter.charge(token, charge)  # as POST /events: let in while not in debt, then charged
    return summary


# what both ingest routes document alike: their tag, answers and query parameter
class _IngestRoute(TypedDict):
    tags: list[str | Enum]
    status_code: int
    responses: dict[int | str, JsonObject]


_INGEST_ROUTE: _IngestRoute = {
    "tags": ["sources"],
    "status_code": 201,
    "responses": docs.responses(201, 200, 401, 403, 413, 422),
}
FetchedAt = Annotated[
    str,
    Query(description="When the file was fetched (RFC 3339 with offset)", examples=["2026-09-01T12:00:00Z"]),
]


def _summary_answer(summary: Summary | WorksSummary) -> Response:
    """The ingest summary: 201 when events were appended, 200 when all were already there."""
    assert summary.head is not None
    return Response(
        canonical(summary.to_dict()),
        status_code=201 if summary.appended else 200,
        media_type=JSON,
        headers=head_headers(summary.head),
    )


@router.post(
    "/ingest/works",
    summary="Bring a works file into the resolver's catalogue: one work.observed per new or changed work",
    openapi_extra=_WORKS_BODY,
    **_INGEST_ROUTE,
)
async def post_ingest_works(request: Request, observed_at: FetchedAt) -> Response:
    """The body is the file, checked whole before anything is written, then appended in batches. 201
    when works were appended, 200 when none was new; 422 when the body is not a works file (nothing
    written). Answers the ingest summary (items read, works, skipped with reasons, unchanged)."""
    settings = settings_of(request)
    token = require_writer(request, settings)
    ledger = ledger_of(request)
    caps = settings.inflation
    summary = await _ingest_charged(
        request,
        token,
        "works",
        lambda body, appended: ingest_works(
            ledger, SourceFile(NAME, body, observed_at, caps=caps), None, appended, settings.work_limits
        ),
    )
    return _summary_answer(summary)


@router.post(
    "/ingest/{source}",
    summary="Bring a source file (as the source publishes it) into the ledger as one batch",
    openapi_extra=_SOURCE_BODY,
    **_INGEST_ROUTE,
)
async def post_ingest(
    request: Request,
    source: Annotated[str, Path(description="One of " + ", ".join(SOURCES), examples=["retraction-watch"])],
    observed_at: FetchedAt,
    id: Annotated[
        str | None, Query(description="opencitations only: the paper, e.g. doi:10.48550/arXiv.2310.04610")
    ] = None,
    force: Annotated[
        bool,
        Query(
            description="retraction-watch: accept a file with fewer than half the rows of the last one "
            "accepted (lifts that rule only)"
        ),
    ] = False,
) -> Response:
    """The body is the file. 201 when events were appended, 200 when all were already there;
    422 when the body is not the named format, or a Retraction Watch file is refused by a rule of
    its own (details.rule; nothing written). Answers the ingest summary."""
    # auth (and rate) first: a refused client never gets its body read
    token = require_writer(request, settings_of(request))
    if source not in SOURCES:
        raise InvalidEvent("source", f"unknown source {source!r}; one of {', '.join(SOURCES)}")
    ledger = ledger_of(request)
    caps = settings_of(request).inflation

    def run(body: IO[bytes], appended: Appended) -> Summary:
        file = SourceFile(source, body, observed_at, id, caps)
        return ingest(ledger, file, None, appended, force=force)

    try:
        summary = await _ingest_charged(request, token, source, run)
    except LedgerError:
        telemetry.ingested(request, source, None)
        raise
    telemetry.ingested(request, source, summary)
    return _summary_answer(summary)


@router.get(
    "/paper/{arxiv_id:path}/changes",
    tags=["records"],
    summary="What changed in the record between two instants, with the events responsible",
    responses=docs.responses(200, 308, 404, 422),
)
def changes(
    request: Request,
    arxiv_id: Annotated[str, Path(description="arXiv id", examples=["2509.02480"])],
    from_: Annotated[
        str, Query(alias="from", description="RFC 3339 with offset, or YYYY-MM-DD (end of that day UTC)")
    ],
    to: Annotated[str | None, Query(description="Same forms; default now")] = None,
) -> Response:
    """Per observation: added/removed, resolution and cited-work changes, notices that appeared or
    went away, receipts that moved; plus measurement and coverage changes. A page for a browser
    (text/html above JSON in Accept), the JSON document for any other client."""
    record = f"/paper/{arxiv_id}/citation-record"
    try:
        arxiv_id = check_id(request, arxiv_id)
        record = f"/paper/{arxiv_id}/citation-record"
        t1 = instant(request, from_, "from")
        if t1 is None:
            raise InvalidEvent("from", "required: RFC 3339 with an offset or YYYY-MM-DD")
        t2 = instant(request, to, "to")
        t2 = clock_of(request).now_us() if t2 is None else t2
        # the chain's banner read in the same read as the diff: its headers describe one moment
        d, head, broken = ledger_of(request).records.changes(
            arxiv_id, t1, t2, chain=lambda: broken_walk(request.app)
        )
    except LedgerError as e:
        return negotiated.error(request, e, [("Back to the record", record)])

    def page() -> str:
        def at(when: str) -> str:
            return quote(when, safe=":")

        links = {
            "record": f"{record}?as_of={at(d['to']['as_of'])}",
            "from_record": f"{record}?as_of={at(d['from']['as_of'])}" if d["from"] else record,
            "integrity": f"/paper/{arxiv_id}/integrity?as_of={at(d['to']['as_of'])}",
        }
        return render_changes_page(d, head=head.header(), links=links, broken=broken)

    return negotiated.answer(
        request, lambda: canonical(d), {**head_headers(head), **chain_headers(broken)}, page
    )
