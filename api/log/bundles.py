"""The evidence bundle of a record as a download, streamed as it is read (service/proofs/bundle.py)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Protocol
from urllib.parse import quote

from fastapi import APIRouter, Request, Response
from starlette.responses import StreamingResponse

from api import docs
from api.common import JSON, check_id, head_headers, instant, ledger_of, settings_of
from api.errors import RetryLater
from api.records.routes import ArxivId, AsOf, KnownAt
from service.proofs.bundle import open_bundle

router = APIRouter(tags=["integrity"])

# A bundle of a much-cited paper is hundreds of MB read and hashed; memory stays bounded per stream,
# but the time does not, so a process writes only this many at once (503 with Retry-After past it).
MAX_STREAMS = 4
RETRY_AFTER = "5"


class TooManyBundles(RetryLater, code="too_many_bundles", status=503):
    """This server process is already writing MAX_STREAMS bundles."""


class _Slots:
    """How many bundles this process is writing, capped."""

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self.busy = 0
        self._lock = threading.Lock()

    def take(self) -> None:
        """Count one more stream, or TooManyBundles at the cap."""
        with self._lock:
            if self.busy >= self.cap:
                raise TooManyBundles(
                    f"this server is already writing {self.cap} bundles; retry after {RETRY_AFTER} s",
                    retry_after=RETRY_AFTER,
                    details={"max_streams": self.cap},
                )
            self.busy += 1

    def give(self) -> None:
        """One stream fewer."""
        with self._lock:
            self.busy -= 1


SLOTS = _Slots(MAX_STREAMS)
_RESPONSES = docs.responses(200, 308, 404, 409, 422, 503)
_RESPONSES[200]["description"] = (
    "One line of canonical JSON: the record, every event that built it, an inclusion proof of each, "
    "the signed checkpoint they lead to and its public key"
)
_RESPONSES[200]["content"] = {"application/json": {}}
_RESPONSES[409]["description"] = "Read-only server whose last signed checkpoint does not cover the record"
_RESPONSES[503]["description"] = f"This process is already writing {MAX_STREAMS} bundles (`too_many_bundles`)"


def _read_only(request: Request) -> bool:
    return settings_of(request).read_only


class Chunked(Protocol):
    """A bundle ready to be written: a record's (BundleStream) or a screen's (ScreenBundle)."""

    def chunks(self) -> Iterator[bytes]: ...


def _released(bundle: Chunked) -> Iterator[bytes]:
    # the slot is given back when the body is written or the client goes away (the generator closes)
    try:
        yield from bundle.chunks()
    finally:
        SLOTS.give()


def bundle_response(request: Request, open_stream: Callable[[bool], Chunked], filename: str) -> Response:
    """A bundle as a download, streamed in one of this process's MAX_STREAMS slots: open_stream(sign)
    raises what refuses it (NotFound, NotSigned) before the first byte; a read-only server signs nothing."""
    ledger = ledger_of(request)
    SLOTS.take()
    try:
        stream = open_stream(not _read_only(request))
    except BaseException:
        SLOTS.give()
        raise
    headers = {
        **head_headers(ledger.head()),
        "Content-Disposition": f"attachment; filename={quote(filename)}",
    }
    return StreamingResponse(_released(stream), media_type=JSON, headers=headers)


@router.get(
    "/paper/{arxiv_id:path}/bundle",
    summary="The record's offline evidence bundle, streamed (check it with `ledger check-bundle`)",
    responses=_RESPONSES,
)
def bundle(request: Request, arxiv_id: ArxivId, as_of: AsOf = None, known_at: KnownAt = None) -> Response:
    """The bundle `ledger bundle` writes; on a read-only server, proved in the last signed checkpoint."""
    arxiv_id = check_id(request, arxiv_id)
    t, k = instant(request, as_of, "as_of"), instant(request, known_at, "known_at")
    ledger = ledger_of(request)
    return bundle_response(
        request,
        lambda sign: open_bundle(ledger, arxiv_id, t, k, sign=sign),
        f"{arxiv_id.replace('/', '_')}.bundle.json",
    )
