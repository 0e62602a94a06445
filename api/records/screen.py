"""GET /screen and /screen/changes: the papers whose references are resolved to works carrying a standing
notice, as of T known at K, and what became flagged or cleared between two instants; JSON or CSV for a
client, a page grouped by paper for a browser, a page of lines at a time."""

from __future__ import annotations

import csv
import io
from typing import Annotated
from urllib.parse import urlencode

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import HTMLResponse
from starlette.concurrency import run_in_threadpool

from api import docs
from api.common import JSON, head_headers, instant, json_object, ledger_of, settings_of
from api.log.bundles import bundle_response
from api.negotiate import VARY, prefers_html, quality
from api.records import negotiated
from api.records.render import ENV
from ledger.model.codec import canonical
from ledger.model.errors import InvalidEvent, LedgerError
from ledger.model.ids import normalise_arxiv
from ledger.model.jsonvalue import Json, JsonObject
from service.proofs.screen_bundle import bundle_of_page, screen_checkpoint
from service.screen import (
    CSV_COLUMNS,
    Page,
    check_kinds,
    check_limit,
    item_row,
    page_json,
)
from service.screen import (
    Query as ScreenQuery,
)

router = APIRouter()
CSV = "text/csv"
FORMATS = ("json", "csv", "html")
# papers one request may name (a collection names more, and is kept by the ledger)
MAX_PAPERS = 2_000

_Papers = Annotated[
    list[str] | None,
    Query(
        description="A citing paper to screen (repeat for more; any form of arXiv id); default every paper"
    ),
]
_Collection = Annotated[str | None, Query(description="A named collection to screen", max_length=200)]
_Kinds = Annotated[
    list[str] | None,
    Query(description="Only notices of this kind (repeatable): retraction, correction, ..."),
]
_Exact = Annotated[bool, Query(description="Only references resolved verified_exact")]
_Page = Annotated[
    str | None, Query(description="The next_page token of the previous answer", max_length=4096)
]
_Bundle = Annotated[
    bool,
    Query(
        description="Answer this page as an offline bundle: its rows, their events and inclusion proofs "
        "against the signed checkpoint of its head (check it with `ledger check-bundle`)"
    ),
]
_Limit = Annotated[int | None, Query(description="Lines a page holds (at most LEDGER_SCREEN_PAGE_MAX)")]
_Format = Annotated[str | None, Query(description="json, csv or html: overrides the Accept header")]
_Instant = "RFC 3339 with offset, or YYYY-MM-DD (end of that day UTC)"


def _format(request: Request, asked: str | None) -> str:
    """json, csv or html: `format` when given, else what the Accept header ranks first (JSON on a tie)."""
    if asked is not None:
        if asked not in FORMATS:
            raise InvalidEvent("format", f"{asked[:40]!r} is not one of {', '.join(FORMATS)}")
        return asked
    accept = request.headers.get("accept")
    if accept is not None and quality(accept, CSV) > max(quality(accept, JSON), quality(accept, "text/html")):
        return "csv"
    return "html" if prefers_html(accept) else "json"


def _papers(
    request: Request, papers: list[str] | None, collection: str | None, known_us: int | None
) -> frozenset[str] | None:
    """The papers asked for: named ones (any form of id), a collection's members, or None (every one)."""
    if papers and collection is not None:
        raise InvalidEvent("collection", "give paper= or collection=, not both")
    if collection is not None:
        return ledger_of(request).records.collection_members(collection, known_us)
    if not papers:
        return None
    if len(papers) > MAX_PAPERS:
        raise InvalidEvent("paper", f"{len(papers)} papers; a request names at most {MAX_PAPERS}")
    return frozenset(normalise_arxiv(p, "paper") for p in papers)


def _answer(
    request: Request, page: Page, fmt: str, collection: str | None, changes: bool, checkpoint: str | None
) -> Response:
    body = page_json(page, collection)
    body["checkpoint"] = checkpoint
    headers = {**head_headers(page.head), **VARY}
    if fmt == "json":
        return Response(canonical(body), media_type=JSON, headers=headers)
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.writer(out, lineterminator="\r\n")
        writer.writerow(CSV_COLUMNS)
        for item in page.items:
            writer.writerow(item_row(page, item))
        if page.next_page is not None:
            headers["Link"] = f'<{_href(request, page=page.next_page, format="csv")}>; rel="next"'
        return Response(out.getvalue(), media_type="text/csv; charset=utf-8", headers=headers)
    return HTMLResponse(_render(request, page, body, changes), headers=headers)


def _href(request: Request, **override: str) -> str:
    """This request's path and query with some parameters replaced."""
    params = [(k, v) for k, v in request.query_params.multi_items() if k not in override]
    params += list(override.items())
    return request.url.path + ("?" + urlencode(params) if params else "")


def _render(request: Request, page: Page, body: JsonObject, changes: bool) -> str:
    items = body["items"]
    assert isinstance(items, list)
    groups: list[tuple[Json, Json, list[JsonObject]]] = []
    for line in map(json_object, items):
        citing = json_object(line["citing"])
        if not groups or groups[-1][0] != citing["arxiv_id"]:
            groups.append((citing["arxiv_id"], citing["title"], []))
        groups[-1][2].append(line)
    filters = json_object(body["filters"])
    papers = filters["papers"]
    who = (
        f"collection {filters['collection']}"
        if filters["collection"]
        else (f"{len(papers)} named papers" if isinstance(papers, list) and papers else "every paper")
    )
    if changes:
        heading = f"What changed from {body['from']} to {body['to']}"
        lead = f"References of {who} that became flagged or were cleared between the two instants."
    else:
        heading = f"Screen of {who} as of {body['as_of']}"
        lead = (
            f"References of {who} resolved to a work that carries a standing notice as of {body['as_of']}"
            + (f", as the ledger knew it at {body['known_at']}." if body["known_at"] else ".")
        )
    return ENV.get_template("screen.html").render(
        body=body,
        groups=groups,
        count=len(items),
        heading=heading,
        lead=lead,
        changes=changes,
        action=request.url.path,
        csv_href=_href(request, format="csv"),
        json_href=_href(request, format="json"),
        bundle_href=None if changes else _href(request, bundle="true"),
        next_href=None if page.next_page is None else _href(request, page=page.next_page),
    )


@router.get(
    "/screen",
    tags=["records"],
    summary="The references of a set of papers resolved to works carrying a standing notice, as of T",
    # 404: a collection not made by then; 409 and 503: a bundle a read-only server cannot sign, or
    # one past the streams a process serves at once
    responses=docs.responses(200, 404, 409, 422, 503, html=True),
)
async def get_screen(
    request: Request,
    paper: _Papers = None,
    collection: _Collection = None,
    as_of: Annotated[str | None, Query(description=_Instant + "; default now")] = None,
    known_at: Annotated[str | None, Query(description="What the ledger knew then (recorded time)")] = None,
    kind: _Kinds = None,
    exact_only: _Exact = False,
    page: _Page = None,
    limit: _Limit = None,
    format: _Format = None,
    bundle: _Bundle = False,
) -> Response:
    """Each citing paper with each reference whose latest resolution as of T (verified exact or fuzzy,
    by any resolver or a person) ties it to a work carrying a standing notice: the notice, when the
    ledger learned it, who resolved the reference (its evidence link), and the seq of every event shown,
    with the head (tree size and hash) it was computed at. A page of lines at a time: `next_page` is the
    token of the next one."""
    html_default = prefers_html(request.headers.get("accept"))
    try:
        fmt = _format(request, format)
        t, k = instant(request, as_of, "as_of"), instant(request, known_at, "known_at")
        query = ScreenQuery(
            _papers(request, paper, collection, k),
            ledger_of(request).clock.now_us() if t is None else t,
            k,
            check_kinds(kind),
            exact_only,
        )
        size = check_limit(limit, settings_of(request).screen_page_max)
        ledger = ledger_of(request)
        answer = await run_in_threadpool(ledger.records.screen, query, page, size)
        sign = not settings_of(request).read_only
        if bundle:
            body = page_json(answer, collection)
            return await run_in_threadpool(
                bundle_response,
                request,
                lambda sign: bundle_of_page(ledger, body, sign=sign),
                "screen.bundle.json",
            )
        note = await run_in_threadpool(lambda: screen_checkpoint(ledger, answer.head.seq, sign=sign))
    except LedgerError as e:
        return negotiated.error(request, e, [("Papers", "/")], html=html_default and format in (None, "html"))
    return _answer(request, answer, fmt, collection, False, note)


@router.get(
    "/screen/changes",
    tags=["records"],
    summary="What became flagged or cleared between two instants, with the events responsible",
    responses=docs.responses(200, 404, 422, html=True),
)
async def get_screen_changes(
    request: Request,
    paper: _Papers = None,
    collection: _Collection = None,
    from_: Annotated[str | None, Query(alias="from", description=_Instant + "; required")] = None,
    to: Annotated[str | None, Query(description=_Instant + "; default now")] = None,
    known_at: Annotated[str | None, Query(description="What the ledger knew then (recorded time)")] = None,
    kind: _Kinds = None,
    exact_only: _Exact = False,
    page: _Page = None,
    limit: _Limit = None,
    format: _Format = None,
) -> Response:
    """Each flag that appeared (`flagged`) or went (`cleared`) from `from` to `to`, both as known at K,
    with the events of the later state that made it so (a newer resolution, citation or check)."""
    html_default = prefers_html(request.headers.get("accept"))
    try:
        fmt = _format(request, format)
        start = instant(request, from_, "from")
        if start is None:
            raise InvalidEvent("from", "required: the earlier instant, e.g. from=2026-01-01")
        end, k = instant(request, to, "to"), instant(request, known_at, "known_at")
        query = ScreenQuery(
            _papers(request, paper, collection, k),
            ledger_of(request).clock.now_us() if end is None else end,
            k,
            check_kinds(kind),
            exact_only,
        )
        size = check_limit(limit, settings_of(request).screen_page_max)
        ledger = ledger_of(request)
        answer = await run_in_threadpool(ledger.records.screen_changes, query, start, page, size)
        sign = not settings_of(request).read_only
        note = await run_in_threadpool(lambda: screen_checkpoint(ledger, answer.head.seq, sign=sign))
    except LedgerError as e:
        return negotiated.error(request, e, [("Papers", "/")], html=html_default and format in (None, "html"))
    return _answer(request, answer, fmt, collection, True, note)
