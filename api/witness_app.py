"""The witness's HTTP door: C2SP tlog-witness `POST /add-checkpoint` over a service.witness.Witness."""

from __future__ import annotations

import time
from collections.abc import Callable

from fastapi import FastAPI, Request, Response
from starlette.concurrency import run_in_threadpool

from service.witness import MAX_BODY_BYTES, TEXT_CONTENT_TYPE, Witness


def _too_large() -> Response:
    return Response(f"the body is over {MAX_BODY_BYTES} bytes\n", 413, media_type=TEXT_CONTENT_TYPE)


def create_witness_app(witness: Witness, clock: Callable[[], float] = time.time) -> FastAPI:
    """The witness app; `clock` gives the cosignature time (unix seconds)."""
    app = FastAPI(title="citation-ledger witness", docs_url=None, redoc_url=None, openapi_url=None)

    @app.post("/add-checkpoint")
    async def add_checkpoint(request: Request) -> Response:
        declared = request.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > MAX_BODY_BYTES:
            return _too_large()
        # read at most one byte past the limit, whatever Content-Length claimed (or if it is absent)
        body = bytearray()
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_BODY_BYTES:
                return _too_large()
        # SQLite's write lock and the signature are blocking work: off the event loop
        answer = await run_in_threadpool(witness.add_checkpoint, bytes(body), int(clock()))
        # the header as given: Starlette would append "; charset=utf-8" to a text/* media_type, and
        # tlog-witness names the 409 content type exactly (text/x.tlog.size)
        return Response(answer.body, answer.status, headers={"content-type": answer.content_type})

    return app
