"""Answers that are a page for a browser and JSON for every other client, from the same URL.

HTML only when text/html ranks above JSON in Accept (api.negotiate); both answers, errors included,
carry `Vary: Accept`, so a cache keys them apart.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import quote

from fastapi import Request, Response
from fastapi.responses import HTMLResponse, JSONResponse
from starlette.exceptions import HTTPException

from api.common import JSON
from api.errors import error_answer, http_error, status_of
from api.negotiate import VARY, prefers_html
from api.records.render import render_error_page
from ledger.model.errors import LedgerError

# what to type where an instant goes, said on the page that refused one: the record page's boxes by name
INSTANT_HINT = (
    "type a date as YYYY-MM-DD (the end of that day, UTC), or an instant in RFC 3339 with its offset, "
    "e.g. 2026-08-08 or 2026-08-08T08:47:00Z."
)
_INSTANT_FIELDS = {
    "from": "In the “What changed since” box, ",
    "as_of": "In the “Show record as of” box (or the as_of parameter), ",
    "to": "In the to parameter, ",
    "known_at": "In the known_at parameter, ",
}


def wants_html(request: Request) -> bool:
    """Whether this request is answered with a page (text/html ranks above JSON in its Accept)."""
    return prefers_html(request.headers.get("accept"))


def answer(
    request: Request, body: Callable[[], bytes], headers: dict[str, str], page: Callable[[], str]
) -> Response:
    """The page `page()` renders for a browser, else the JSON `body()` encodes; both Vary on Accept."""
    if wants_html(request):
        return HTMLResponse(page(), headers={**headers, **VARY})
    return Response(body(), media_type=JSON, headers={**headers, **VARY})


def error_page(err: LedgerError, back: list[tuple[str, str]] | None = None) -> HTMLResponse:
    """The error as a page saying what to fix, linking to the first record there is when the paper
    exists later, and to `back` (label, href)."""
    links = []
    details = err.details if isinstance(err.details, dict) else {}
    first, arxiv_id = details.get("first_observed_at"), details.get("arxiv_id")
    if first and arxiv_id:
        href = f"/paper/{arxiv_id}/citation-record?as_of={quote(first, safe='')}"
        links = [(f"The record as of {first}, when it was first observed", href)]
        links.append(("Its snapshots over time", f"/paper/{arxiv_id}"))
    where = details.get("where")
    fix = _INSTANT_FIELDS[where] + INSTANT_HINT if where in _INSTANT_FIELDS else None
    if where == "arxiv_id":
        back = None  # the way back would hold the same unreadable id
    status = status_of(err)
    page = render_error_page(status, err.message, [*links, *(back or [])], fix=fix)
    return HTMLResponse(page, status_code=status)


async def no_such_page(request: Request, exc: Exception) -> Response:
    """A routing error: for a browser at an address no route takes (mistyped, say), a page leading back
    to the index; else, and for every client, the JSON error shape. Both Vary on Accept."""
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404 and wants_html(request):
        where = [("The papers this ledger holds", "/")]
        page = render_error_page(404, f"There is no page at {request.url.path}.", where)
        return HTMLResponse(page, status_code=404, headers=VARY)
    answered = await http_error(request, exc)
    answered.headers.update(VARY)
    return answered


def error(
    request: Request, err: LedgerError, back: list[tuple[str, str]] | None = None, *, html: bool | None = None
) -> Response:
    """The error as a page for a browser, else in the JSON error shape; both Vary on Accept. `html`: the
    route's own choice (one whose default is the page), else `wants_html`."""
    if wants_html(request) if html is None else html:
        answered: Response = error_page(err, back)
    else:
        answered = JSONResponse(error_answer(err), status_code=status_of(err))
    answered.headers.update({**(getattr(err, "headers", None) or {}), **VARY})
    return answered
