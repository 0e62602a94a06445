"""The FastAPI app over one ledger file; `create_app` is also uvicorn's factory for workers."""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager

from fastapi import FastAPI
from fastapi.middleware.cors import CORSMiddleware
from fastapi.openapi.utils import get_openapi
from fastapi_offline import FastAPIOffline
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp

from api import docs
from api.alerts import alerting, watches
from api.collections import routes as collection_routes
from api.errors import install_error_handlers
from api.intake import sources, writes
from api.limits import RateLimiter
from api.log import bundles, evidence, live, proofs, witnesses
from api.ops import metrics, projector, scrub, telemetry
from api.records import negotiated, routes, screen, search
from api.records.record_cache import RecordCache
from api.records.timeline_cache import TimelineCache
from api.resolve import routes as resolve_routes
from api.settings import Settings
from api.state import AppState, state_of
from ledger.model.instants import SYSTEM_CLOCK
from ledger.model.jsonvalue import JsonObject
from service.ledger import Ledger
from service.resolver.defaults import default_resolver
from service.resolver.jobs import Jobs

DESCRIPTION = """\
An append-only, hash-chained ledger of citation observations, serving point-in-time
Paper Citation Records (`pith.paper-citation-record.v1`).

Reads are open. Writes (`POST /events`, `POST /records`) need `Authorization: Bearer <token>`;
with no token configured the server refuses writes (403 `writes_disabled`).
Every error is `{"error": {"code", "message", "details"}}`. Every answer about a record carries
`Ledger-Head: <seq> <hash>`, the head it was computed from.
"""


# Background work of one app (one server process): each `start(app)` returns its `stop()`.
Stop = Callable[[], Awaitable[None]]


async def _metrics_start(app: FastAPI) -> Stop:
    """Nothing to start; at shutdown this process's live gauges go (multiprocess mode)."""

    async def ended() -> None:
        metrics.process_ended()

    return ended


async def _live_start(app: FastAPI) -> Stop:
    return await live.start(state_of(app).live)


async def _witnesses_start(app: FastAPI) -> Stop:
    state = state_of(app)
    return await witnesses.start(state.settings, state.cosigner, state.witness_clients)


async def _alerting_start(app: FastAPI) -> Stop:
    return await alerting.start(state_of(app).alerting)


# each takes what it starts from the app's state, so the modules it starts need not know the state
BACKGROUND: list[Callable[[FastAPI], Awaitable[Stop]]] = [
    _metrics_start,
    scrub.start,
    projector.start,
    _live_start,
    _witnesses_start,
    _alerting_start,
]


_SETTLED = False


def settle_heap() -> None:
    """Keep what start-up made (the app, its routes, FastAPI's and pydantic's schemas: objects that live
    as long as the process) out of the cyclic collector's full passes, once per process: a full pass
    over them cost a request about 50 ms, and a page that reads thousands of events set one off every
    few requests (gc.freeze; what dies later is still freed by reference counting)."""
    global _SETTLED
    if not _SETTLED:
        gc.collect()
        gc.freeze()
        _SETTLED = True


@asynccontextmanager
async def lifespan(app: FastAPI) -> AsyncIterator[None]:
    """Start the app's background work when the server starts, and stop it (in reverse) on shutdown."""
    settle_heap()
    stops = [await start(app) for start in BACKGROUND]
    try:
        yield
    finally:
        for stop in reversed(stops):
            await stop()


def build_state(settings: Settings, ledger: Ledger) -> AppState:
    """Everything the routes and the background work of an app over `ledger` share, made now: no
    route makes a cache or a service on its first request."""
    counting = settings.counting
    alerts = None
    if not settings.read_only:
        deliveries = metrics.webhook_delivery if counting else None
        alerts = alerting.Alerting(ledger, settings.webhook_backoff, settings.webhook_allow, deliveries,
                                   settings.webhook_timeout)  # fmt: skip
        ledger.intake.on_commit(alerts.committed)
    cosigner, clients = witnesses.cosigner_for(ledger, settings)
    return AppState(
        settings=settings,
        ledger=ledger,
        clock=ledger.clock,
        rate_limiter=RateLimiter(settings.rate_limit, settings.burst) if settings.rate_limit > 0 else None,
        record_cache=RecordCache(),
        timeline_cache=TimelineCache(),
        # a read-only server writes nothing to the database: its passes are kept in memory
        passes=ledger.ops.passes(
            writable=not settings.read_only, on_record=metrics.scrub_recorded if counting else None
        ),
        live=live.Live(ledger, settings),
        resolver=default_resolver(),
        resolve_jobs=Jobs(ledger),
        alerting=alerts,
        cosigner=cosigner,
        witness_clients=clients,
    )


def install_state(app: ASGIApp, state: AppState) -> None:
    """Give `app` its state (api/state.py's `state_of` reads it)."""
    if not isinstance(app, Starlette):
        raise TypeError(f"an app with a state was expected, not {type(app).__name__}")
    app.state.typed = state


def create_app(settings: Settings | None = None) -> FastAPI:
    """The app; with no settings, they come from LEDGER_* environment variables (uvicorn workers)."""
    settings = settings or Settings.from_env()
    # /docs loads Swagger UI's files from the package (under /static-offline-docs): it renders on a
    # machine with no network, and no visit tells a CDN. No /redoc: ReDoc's bundle fetches its logo
    # from its maker's CDN.
    app = FastAPIOffline(
        redoc_url=None,
        title="citation-ledger",
        version="1",
        description=DESCRIPTION,
        # our own JSON 404 for unknown routes: no redirect from /x/ to /x
        redirect_slashes=False,
        lifespan=lifespan,
    )
    # Concurrent requests share one transaction and one fsync; each batch is still atomic in its own
    # savepoint and acknowledged only after COMMIT. Other processes are serialised by BEGIN IMMEDIATE.
    # its alerts are raised by the alerting thread (api/alerts/alerting.py), not by the request that appended
    ledger = Ledger(
        settings.db,
        group_commit=True,
        raise_alerts=False,
        project_on_read=not settings.read_only,
        projector_lease=True,
        clock=SYSTEM_CLOCK,
    )
    if settings.counting:
        ledger.intake.on_group_commit(metrics.group_committed)
    install_state(app, build_state(settings, ledger))
    if settings.cors_origins:
        # Off unless configured: a browser page elsewhere gets no access to the answers by default.
        # Bearer tokens, not cookies, so no credentials are allowed cross-origin.
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(settings.cors_origins),
            allow_methods=["GET", "POST"],
            allow_headers=["Authorization", "Content-Type", "Last-Event-ID"],
            expose_headers=["Ledger-Head", "Ledger-Chain", "Ledger-Checkpoint", "Retry-After"],
            allow_credentials=False,
            max_age=600,
        )
    if settings.counting or settings.json_logs:
        # outermost: it sees every answer (CORS preflights and error pages too) and its end
        app.add_middleware(telemetry.Telemetry, settings=settings)
    install_error_handlers(app)
    app.add_exception_handler(HTTPException, negotiated.no_such_page)  # a browser's 404 is a page
    if settings.counting:
        app.include_router(telemetry.router)
    # /paper/{id}/changes must come before routes' /paper/{id:path}
    app.include_router(sources.router)
    app.include_router(watches.router)  # before routes: /paper/{id:path} would take /paper/{id}/alerts.atom
    app.include_router(proofs.router)
    app.include_router(bundles.router)  # before routes: /paper/{id:path} would take /paper/{id}/bundle
    app.include_router(resolve_routes.router)  # before routes: /paper/{id:path} would take its page
    app.include_router(routes.router)
    app.include_router(search.router)
    app.include_router(screen.router)
    app.include_router(evidence.router)
    app.include_router(writes.router)
    app.include_router(collection_routes.router)

    def openapi() -> JsonObject:
        if app.openapi_schema is None:
            schema = get_openapi(
                title=app.title,
                version=app.version,
                description=app.description,
                routes=app.routes,
            )
            components = schema.setdefault("components", {}).setdefault("schemas", {})
            # The request bodies and the record are the ledger's msgspec types; the answers are
            # documentation models. Both are referenced by name from the routes.
            components.update(docs.schema_components())
            components.update(docs.pydantic_components())
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app
