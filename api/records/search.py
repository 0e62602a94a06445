"""GET /search: papers and references found by the words of their titles, as a page or as JSON."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import HTMLResponse, RedirectResponse
from starlette.concurrency import run_in_threadpool

from api import docs
from api.common import JSON, head_headers, ledger_of, settings_of
from api.negotiate import VARY, prefers_json
from api.ops.scrub import broken_walk, chain_headers
from api.records import negotiated
from api.records.render import render_search_page
from ledger.model.codec import canonical
from ledger.model.errors import LedgerError
from service.search import MAX_PAGE, PER_PAGE, Answer, record_href, search

router = APIRouter()


@router.get(
    "/search",
    **docs.records_page(
        "Papers and references whose titles hold every word of q, each with the path of its record",
        {
            **docs.responses(200, 404, 422, ok="SearchAnswer", html=True),
            303: {"description": "q is the arXiv id of a paper this ledger holds (HTML): its page"},
        },
    ),
)
async def search_titles(
    request: Request,
    q: Annotated[
        str | None,
        Query(
            description="Title words (letters and digits; each matches the start of a word, all must match)",
            examples=["memory offloading"],
            max_length=1000,
        ),
    ] = None,
    page: Annotated[int, Query(ge=1, le=MAX_PAGE, description=f"{PER_PAGE} hits a page")] = 1,
) -> Response:
    """HTML by default; JSON when application/json ranks above text/html in Accept (both Vary on
    Accept). A writable server
    first indexes the events appended since the last search; a read-only one searches what is indexed.
    A q that is an arXiv id as pasted (bare, arXiv:, a version, an abs URL, a DOI) names that paper:
    HTML is sent to its page (303); JSON answers it as the one hit, with `arxiv_id` set (a search
    client reads the same shape either way); an id the ledger does not hold is 404 saying so."""
    as_json = prefers_json(request.headers.get("accept"))
    ledger, read_only = ledger_of(request), settings_of(request).read_only
    try:
        answer: Answer = await run_in_threadpool(search, ledger, q, page, index=not read_only)
    except LedgerError as e:
        return negotiated.error(request, e, [("Papers", "/")], html=not as_json)
    if answer.arxiv_id is not None and not as_json:
        location = request.scope.get("root_path", "") + f"/paper/{answer.arxiv_id}"
        return RedirectResponse(location, status_code=303, headers=VARY)
    broken = await run_in_threadpool(broken_walk, request.app)
    head = {**head_headers(ledger.head()), **chain_headers(broken), **VARY}
    if as_json:
        return Response(canonical(answer.to_dict()), media_type=JSON, headers=head)
    hits = [(hit, record_href(hit)) for hit in answer.hits]
    return HTMLResponse(render_search_page(answer, hits, PER_PAGE, broken), headers=head)
