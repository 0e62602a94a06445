"""The one typed state of an app: every setting, cache, pool and service its routes use, made by
`create_app` (api/app.py) before the first request and read through `state_of`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from starlette.applications import Starlette
from starlette.types import ASGIApp

if TYPE_CHECKING:
    from api.alerts.alerting import Alerting
    from api.limits import RateLimiter
    from api.log.live import Live
    from api.log.witnesses import WitnessClients
    from api.records.record_cache import RecordCache
    from api.records.timeline_cache import TimelineCache
    from api.settings import Settings
    from ledger.model.instants import Clock
    from service.ledger import Ledger
    from service.ops.scrub import PassLog
    from service.ops.witnessing import Cosigner
    from service.resolver.defaults import Resolver
    from service.resolver.jobs import Jobs


@dataclass(frozen=True)
class AppState:
    """What an app's routes and background work share, made once when the app is built."""

    settings: Settings
    ledger: Ledger
    clock: Clock  # the ledger's: what every route and thread of the app takes for now
    rate_limiter: RateLimiter | None  # None: no write rate configured
    record_cache: RecordCache
    timeline_cache: TimelineCache
    passes: PassLog  # the full walks of the chain (service/ops/scrub.py)
    live: Live  # the SSE notifier
    resolver: Resolver
    resolve_jobs: Jobs
    alerting: Alerting | None  # None on a read-only server: it raises and delivers nothing
    cosigner: Cosigner | None  # None without LEDGER_WITNESSES
    witness_clients: WitnessClients | None


def state_of(app: ASGIApp) -> AppState:
    """The typed state of `app` (a Starlette app: a request's `app`, or a test client's)."""
    if not isinstance(app, Starlette):
        raise TypeError(f"an app with a state was expected, not {type(app).__name__}")
    state: AppState = app.state.typed
    return state
