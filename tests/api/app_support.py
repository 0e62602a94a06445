"""Apps the API tests build: the whole app answering a server error instead of raising it (for the
hostile-input properties), and a minimal app holding only the sources router."""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, settings

from api.app import build_state, create_app, install_state
from api.errors import install_error_handlers
from api.intake import sources
from api.settings import Settings
from service.ledger import Ledger
from tests.conftest import examples

# a hostile-input property: many examples, each a request through the whole app
HOSTILE = settings(
    max_examples=examples(300),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


def answering_app(ledger: Ledger, token: str) -> TestClient:
    """The whole app over `ledger` with one write token; a server error comes back as a 500 answer."""
    return TestClient(create_app(Settings(db=ledger.url, tokens=(token,))), raise_server_exceptions=False)


def sources_app(ledger: Ledger, token: str, **options: object) -> TestClient:
    """An app of the sources router alone over `ledger`, with one write token and the settings given."""
    app = FastAPI()
    install_error_handlers(app)
    settings = Settings(db=ledger.url, tokens=(token,), **options)  # type: ignore[arg-type]
    install_state(app, build_state(settings, ledger))
    app.include_router(sources.router)
    return TestClient(app)
