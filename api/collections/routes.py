"""Collections: `POST /collections/{name}` adds and removes papers (one `collection.changed` event,
recorded as the token's write); `GET /collections` and `GET /collections/{name}` answer the membership
the ledger knew at `known_at` (default now)."""

from __future__ import annotations

from typing import Annotated, TypedDict

from fastapi import APIRouter, Path, Query, Request, Response
from starlette.concurrency import run_in_threadpool

from api import docs
from api.auth import require_writer
from api.common import JSON, head_headers, head_json, instant, ledger_of, read_body, settings_of
from api.limits import RateLimiter
from api.state import state_of
from ledger.model.codec import canonical, decode_json
from ledger.model.errors import InvalidEvent, NotFound
from ledger.model.instants import format_recorded
from ledger.model.jsonvalue import Json, JsonObject
from service.collections import Changed, change_data, check_name
from service.ledger import Ledger, as_writer, by_token

router = APIRouter(tags=["collections"])

PAGE = 1000  # members one answer lists at most
_NAME = Path(
    description="The collection's name: letters, digits, '.', '_' and '-', a letter or digit first "
    "(LEDGER_COLLECTION_MAX_NAME characters at most; checked in code, naming the setting)",
    examples=["integrity-office"],
)
_KNOWN_AT = Query(
    description="What the ledger knew at this instant (recorded time; RFC 3339 or YYYY-MM-DD). Default: now."
)


def _json(body: bytes, status: int = 200, headers: dict[str, str] | None = None) -> Response:
    return Response(body, status_code=status, media_type=JSON, headers=headers)


def _body(raw: bytes) -> tuple[Json, Json]:
    """The change asked: `{"add": [...], "remove": [...]}`, either list left out for none."""
    value = decode_json(raw)
    if not isinstance(value, dict):
        raise InvalidEvent("$", 'a change is a JSON object: {"add": [...], "remove": [...]}')
    unknown = sorted(set(value) - {"add", "remove"})
    if unknown:
        raise InvalidEvent(unknown[0], "unknown field (expected add and remove, lists of arXiv ids)")
    return value.get("add", []), value.get("remove", [])


class _Appended(TypedDict):
    seq: int
    event_id: str
    hash: str
    duplicate: bool


class _ChangedAnswer(TypedDict):
    """The answer of a change: what it asked, the collection's size after it, and its event."""

    name: str
    add: list[str]
    remove: list[str]
    members: int
    event: _Appended
    head: JsonObject


def _changed_json(done: Changed) -> _ChangedAnswer:
    item = done.result.items[0]
    return {
        "name": done.data.name,
        "add": done.data.add,
        "remove": done.data.remove,
        "members": done.members,
        "event": _Appended(seq=item.seq, event_id=item.event_id, hash=item.hash, duplicate=item.duplicate),
        "head": head_json(done.result.head),
    }


@router.post(
    "/collections/{name}",
    summary="Add papers to a collection (making it) and remove papers from it",
    status_code=201,
    responses=docs.responses(201, 200, 401, 403, 404, 413, 422, 429),
    openapi_extra=docs.object_body(
        {
            "add": {"type": "array", "items": {"type": "string"}, "description": "arXiv ids, as pasted"},
            "remove": {"type": "array", "items": {"type": "string"}, "description": "arXiv ids, as pasted"},
        },
        example={"add": ["arXiv:2509.02480v1", "https://arxiv.org/abs/2310.04610"], "remove": []},
    ),
)
async def post_collection(request: Request, name: Annotated[str, _NAME]) -> Response:
    """`{"add": [ids], "remove": [ids]}` (arXiv ids as pasted): one `collection.changed` event,
    recorded as this token's write; 201 with the change and the collection's size after it (200 when
    the same change was appended already). Removing from a collection never made is 404."""
    settings = settings_of(request)
    token = require_writer(request, settings)
    limiter: RateLimiter | None = state_of(request.app).rate_limiter
    try:
        check_name(name, "name", settings.collection_limits)
        raw = await read_body(request, settings.max_body)
        add, remove = _body(raw)
        data = change_data(name, add, remove, settings.collection_limits)
        ledger = ledger_of(request)
        by = by_token(token, "POST /collections/{name}")
        done: Changed = await run_in_threadpool(as_writer(by, lambda: ledger.intake.change_collection(data)))
    finally:
        if limiter is not None:
            limiter.charge(token, 1)  # one event; a refused change costs the attempt too
    status = 201 if not done.result.items[0].duplicate else 200
    return _json(canonical(_changed_json(done)), status, head_headers(done.result.head))


@router.get(
    "/collections",
    summary="The collections the ledger knew at an instant, each with its size",
    responses=docs.responses(200, 422),
)
def list_collections(request: Request, known_at: Annotated[str | None, _KNOWN_AT] = None) -> Response:
    """`{"collections": [{"name", "members"}], "known_at"}`, by name."""
    known_us = instant(request, known_at, "known_at")
    ledger = ledger_of(request)
    head = ledger.head()  # the answer is the ledger's at this head, which its header names
    sizes = ledger.collections.sizes(known_us, upto_seq=head.seq)
    listed = [{"name": n, "members": k} for n, k in sizes.items()]
    return _json(canonical({"collections": listed, "known_at": _at(known_us)}), headers=head_headers(head))


@router.get(
    "/collections/{name}",
    summary="A collection's papers as the ledger knew them at an instant",
    responses=docs.responses(200, 404, 422),
)
def get_collection(
    request: Request,
    name: Annotated[str, _NAME],
    known_at: Annotated[str | None, _KNOWN_AT] = None,
    after: Annotated[str, Query(max_length=64, description="List the papers after this arXiv id")] = "",
) -> Response:
    """`{"name", "members": [ids], "total", "next", "known_at"}`: its papers by id, a page of at most
    1,000 (`next` names the next page's `after`); 404 for a collection not made by then."""
    settings = settings_of(request)
    check_name(name, "name", settings.collection_limits)
    known_us = instant(request, known_at, "known_at")
    ledger: Ledger = ledger_of(request)
    head = ledger.head()
    members = ledger.collections.members(name, known_us, upto_seq=head.seq)
    if members is None:
        when = f" at {_at(known_us)}" if known_us is not None else ""
        raise NotFound(f"no collection {name!r}{when}", details={"name": name, "known_at": _at(known_us)})
    ordered = sorted(members)
    page = [m for m in ordered if m > after][:PAGE]
    more = len(page) == PAGE and page[-1] < ordered[-1]
    body = {
        "name": name,
        "members": page,
        "total": len(ordered),
        "next": page[-1] if more else None,
        "known_at": _at(known_us),
    }
    return _json(canonical(body), headers=head_headers(head))


def _at(known_us: int | None) -> str | None:
    return None if known_us is None else format_recorded(known_us)
