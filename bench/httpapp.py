"""The product app plus two reference routes that exist only in the benchmark (never in the product).

    uvicorn --factory bench.httpapp:create_bench_app

POST /bench/noop reads the body and answers a constant; GET /bench/static answers the bytes of the
file named by $BENCH_STATIC_FILE. Both go through the same app, server, middleware and error handlers.
"""

from __future__ import annotations

import os
from pathlib import Path

from fastapi import FastAPI, Request, Response

from api.app import create_app

_NOOP = b'{"appended":0}'


def create_bench_app() -> FastAPI:
    """create_app() from LEDGER_* variables, with the reference routes added."""
    app = create_app()
    static_file = os.environ.get("BENCH_STATIC_FILE")
    static = Path(static_file).read_bytes() if static_file else b"{}"

    async def noop(request: Request) -> Response:
        await request.body()
        return Response(_NOOP, status_code=201, media_type="application/json")

    async def static_route() -> Response:
        return Response(static, media_type="application/json")

    app.add_api_route("/bench/noop", noop, methods=["POST"], include_in_schema=False)
    app.add_api_route("/bench/static", static_route, methods=["GET"], include_in_schema=False)
    # the product's /paper/{id:path} would swallow nothing here, but keep ours first anyway
    app.router.routes.insert(0, app.router.routes.pop())
    app.router.routes.insert(0, app.router.routes.pop())
    return app
