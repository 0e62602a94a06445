"""The event log: paged (GET /evidence) and as a live Server-Sent Events subscription."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Annotated
from urllib.parse import urlencode

import msgspec
from fastapi import APIRouter, Header, Query, Request, Response
from starlette.responses import StreamingResponse
from starlette.types import Receive, Scope, Send

from api import docs
from api.common import after_query, counter_header, head_headers, head_json, ledger_of
from api.log.live import Subscription, follow
from api.records import negotiated
from api.records.render import ENV
from api.state import state_of
from ledger.model.codec import canonical, envelope_json
from ledger.model.errors import InvalidEvent
from ledger.model.events import DATA_TYPES, StoredEvent
from ledger.model.facts import Head

router = APIRouter(tags=["evidence"])
DEFAULT_LIMIT = 100
MAX_LIMIT = 1000

After = Annotated[int, after_query("Only events with seq > after.")]
StreamName = Annotated[
    str | None, Query(description="Only this stream, e.g. `paper:2509.02480` or `source:crossref`.")
]
TypeName = Annotated[
    str | None,
    Query(description="Only this event type.", json_schema_extra={"enum": sorted(DATA_TYPES)}),
]


def _check_type(type_: str | None) -> None:
    if type_ is not None and type_ not in DATA_TYPES:
        raise InvalidEvent("type", f"unknown event type {type_!r}; one of " + ", ".join(DATA_TYPES))


@router.get(
    "/evidence",
    summary="The event log in seq order, with full envelopes and the chain hashes",
    responses=docs.responses(200, 422, ok="EvidencePage", html=True),
)
def evidence(
    request: Request,
    after: After = 0,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT, description="Page size (max 1000).")] = DEFAULT_LIMIT,
    stream: StreamName = None,
    type: TypeName = None,
) -> Response:
    """One page of stored envelopes after `after`, the head, and the cursor for the next page. A page for
    a browser (text/html above JSON in Accept), JSON for any other client."""
    _check_type(type)
    ledger = ledger_of(request)
    # One extra row tells whether another page exists without a second query.
    rows = ledger.log.read_log(after, limit + 1, stream, type)
    head = ledger.head()  # read after the page, so it is never behind the events listed
    page = _within_budget(rows[:limit])
    more = len(rows) > len(page)
    next_after = page[-1].seq if more else None
    next_url = None
    if next_after is not None:
        query = {"after": next_after, "limit": limit, "stream": stream, "type": type}
        next_url = "/evidence?" + urlencode({k: v for k, v in query.items() if v is not None})

    def body() -> bytes:
        envelopes = [envelope_json(e) for e in page]
        return canonical(
            {"events": envelopes, "head": head_json(head), "next_after": next_after, "next": next_url}
        )

    shown = lambda: events_page(page, head, next_url, after, stream, type)  # noqa: E731
    return negotiated.answer(request, body, head_headers(head), shown)


def events_page(
    page: list[StoredEvent],
    head: Head,
    next_url: str | None,
    after: int,
    stream: str | None,
    type_: str | None,
) -> str:
    """A page of the log for a browser: each event's envelope, its data indented, its proof linked."""
    events = []
    for e in map(envelope_json, page):
        rest = [(k, v) for k, v in e.items() if k not in ("seq", "type", "stream", "observed_at", "data")]
        raw = e["data"]
        assert isinstance(raw, msgspec.Raw)  # envelope_json keeps the stored data as it was
        data = json.dumps(json.loads(bytes(raw)), indent=2, ensure_ascii=False, sort_keys=True)
        events.append({**e, "rest": rest, "data": data})
    return ENV.get_template("events.html").render(
        events=events, head=head_json(head), next=next_url, after=after, stream=stream, type=type_
    )


# an evidence page ends early past this many bytes of event data (at least one event), so that no
# answer nears 10 MB: an event can be as large as a request body (8 MB by default)
PAGE_DATA_BYTES = 4 * 1024 * 1024


def _within_budget(rows: list[StoredEvent]) -> list[StoredEvent]:
    """The first rows whose data fits the page's byte budget (the first row always)."""
    total = 0
    for i, e in enumerate(rows):
        total += len(e.data)
        if i and total > PAGE_DATA_BYTES:
            return rows[:i]
    return rows


class SSEResponse(StreamingResponse):
    """A stream that always watches for the client leaving, whatever the server's ASGI version, and
    ends its subscription with it; a subscriber dropped as too slow has its connection closed."""

    media_type = "text/event-stream"

    def __init__(
        self,
        content: AsyncIterator[bytes],
        status_code: int = 200,  # FastAPI's OpenAPI reads the default status from this signature
        headers: dict[str, str] | None = None,
        *,
        subscription: Subscription | None = None,
    ) -> None:
        super().__init__(content, status_code, headers=headers)
        self.subscription = subscription

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Stream until the events end, the client disconnects or the subscriber is dropped."""
        watcher = asyncio.ensure_future(_disconnected(receive))
        streamer = asyncio.ensure_future(self.stream_response(send))
        tasks: set[asyncio.Future[None]] = {watcher, streamer}
        if self.subscription is not None:
            # A dropped subscriber's client is not reading: its stream may be stuck in send() for
            # good, so it is cancelled and the response left unfinished, which makes the server close
            # the connection (the client reconnects with Last-Event-ID).
            tasks.add(asyncio.ensure_future(_dropped(self.subscription)))
        try:
            await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            if self.subscription is not None:
                self.subscription.close()
        if streamer.done() and not streamer.cancelled() and streamer.exception() is not None:
            raise streamer.exception()  # type: ignore[misc]


async def _dropped(subscription: Subscription) -> None:
    await subscription.dropped.wait()


async def _disconnected(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


@router.get(
    "/evidence/stream",
    summary="The same events as Server-Sent Events, then new ones live",
    response_class=SSEResponse,
    responses=docs.stream_response(),
)
async def evidence_stream(
    request: Request,
    after: After = 0,
    stream: StreamName = None,
    type: TypeName = None,
    last_event_id: Annotated[
        str,
        Header(
            description="Resume after this seq (sent by EventSource on reconnect); wins over `after`.",
            json_schema_extra={"pattern": "^[0-9]{0,18}$"},
        ),
    ] = "",
) -> Response:
    """SSE: `id: <seq>`, `event: <type>`, `data: <envelope>`; resumes from Last-Event-ID; 503 past the cap."""
    _check_type(type)
    resume = last_event_id.strip()
    if resume:
        after = counter_header(resume, "Last-Event-ID", "the seq of the last event received")
    # past the cap this raises 503 too_many_subscribers, before any byte of the stream
    subscription = state_of(request.app).live.notifier().subscribe(stream, type)
    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return SSEResponse(follow(subscription, after), headers=headers, subscription=subscription)
