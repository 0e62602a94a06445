"""The witness's HTTP door: C2SP tlog-witness `POST /add-checkpoint` over a service.proofs.witness.Witness."""

from __future__ import annotations

import time
from collections.abc import Callable

from fastapi import FastAPI, Request, Response
from starlette.concurrency import run_in_threadpool

from api.common import body_chunks
from api.errors import PayloadTooLarge, install_error_handlers
from api.settings import Settings
from service.proofs.witness import MAX_BODY_BYTES, TEXT_CONTENT_TYPE, Witness


def _too_large() -> Response:
    return Response(f"the body is over {MAX_BODY_BYTES} bytes\n", 413, media_type=TEXT_CONTENT_TYPE)


def create_witness_app(
    witness: Witness, clock: Callable[[], float] = time.time, settings: Settings | None = None
) -> FastAPI:
    """The witness app; `clock` gives the cosignature time (unix seconds), `settings` the body deadline."""
    app = FastAPI(title="citation-ledger witness", docs_url=None, redoc_url=None, openapi_url=None)
    # the body deadline (LEDGER_BODY_TIMEOUT, LEDGER_BODY_MIN_RATE) is the ledger server's own
    limits = settings if settings is not None else Settings.from_env()
    # a refusal made here before tlog-witness has a say (a body too slow) leaves in the JSON error shape
    install_error_handlers(app)

    @app.post("/add-checkpoint")
    async def add_checkpoint(request: Request) -> Response:
        # at most one byte past the limit is read, whatever Content-Length claimed (or if it is absent);
        # a body trickled slower than the settings allow is a 408 (RequestTimeout)
        body = bytearray()
        try:
            async for chunk in body_chunks(request, MAX_BODY_BYTES, settings=limits):
                body += chunk
        except PayloadTooLarge:
            return _too_large()  # tlog-witness answers in text
        # SQLite's write lock and the signature are blocking work: off the event loop
        answer = await run_in_threadpool(witness.add_checkpoint, bytes(body), int(clock()))
        # the header as given: Starlette would append "; charset=utf-8" to a text/* media_type, and
        # tlog-witness names the 409 content type exactly (text/x.tlog.size)
        return Response(answer.body, answer.status, headers={"content-type": answer.content_type})

    return app
