"""Schemathesis against the OpenAPI schema, with a write token: no 5xx, every JSON refusal in the error
shape, and the ledger head unchanged after every refused request.

RELIABILITY_FULL=1 raises the examples per operation (RELIABILITY.md); reliability/fuzz.sh runs the
schemathesis CLI against a real `ledger serve`.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from api.app import create_app, install_state
from api.settings import Settings
from api.state import state_of
from service.resolver.jobs import Jobs
from tests.conftest import examples
from tests.paths import ROOT

schemathesis = pytest.importorskip("schemathesis")

TOKEN = "schemathesis-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
FULL = os.environ.get("RELIABILITY_FULL") == "1"
EXAMPLES = 150 if FULL else examples(10)


class Target:
    """The ASGI app the cases are sent to: while collecting, an app over a throwaway SQLite file that
    only serves the OpenAPI document; from the `app` fixture on, the app over the ledger under test."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        await self.app(scope, receive, send)


# Collected once per session: schemathesis builds one test per operation from a module-level schema,
# before any database of the run exists (its lazy `from_fixture` loader, 4.32, fails under pytest 9:
# "'Function' object has no attribute '_nodeid'").
_DIR = tempfile.TemporaryDirectory(prefix="ledger-schemathesis-")
TARGET = Target(create_app(Settings(db=str(Path(_DIR.name) / "openapi.db"), tokens=(TOKEN,))))
_TOML = (ROOT / "reliability" / "schemathesis.toml").read_text()
# The coverage phase (every boundary case the schema defines, ~1000 for a record body) takes minutes:
# the full run and reliability/fuzz.sh keep it; the default suite runs the examples and random fuzzing.
CONFIG = schemathesis.Config.from_str(_TOML if FULL else _TOML + "\n[phases.coverage]\nenabled = false\n")
# The SSE subscription never ends by itself; tests/api/test_api.py covers it.
SCHEMA = schemathesis.openapi.from_asgi("/openapi.json", TARGET, config=CONFIG).exclude(
    path="/evidence/stream"
)


@pytest.fixture(scope="module")
def app(db_factory: Callable[[Path, str], str], tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """One app for every operation, over a ledger on the backend under test holding the real record."""
    state = tmp_path_factory.mktemp("schemathesis")
    schema_app = TARGET.app
    with pytest.MonkeyPatch.context() as env:
        env.setenv("LEDGER_STATE_DIR", str(state))  # a PostgreSQL ledger's key file goes here
        app = create_app(Settings(db=db_factory(state, "ledger.db"), tokens=(TOKEN,)))
        state_of(app).ledger.import_bytes((ROOT / "tests" / "data" / "2509.02480.record.json").read_bytes())
        # a whole-ledger resolve runs before its 202 is sent, so no job appends while a later case
        # checks that a refused request left the head where it was
        jobs = Jobs(state_of(app).ledger, spawn=lambda run: run())
        install_state(app, dataclasses.replace(state_of(app), resolve_jobs=jobs))
        TARGET.app = app
        try:
            yield app
        finally:
            TARGET.app = schema_app
            state_of(app).ledger.close()


@SCHEMA.parametrize()
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
def test_every_operation_answers_within_its_contract(case, app) -> None:
    assert TARGET.app is app  # the case goes to the ledger under test
    ledger = state_of(app).ledger
    before = ledger.head()
    # not_a_server_error, status code and response schema conformance, positive/negative data...
    response = case.call_and_validate(headers=AUTH)
    assert response.status_code < 500, response.text
    if response.status_code >= 400:
        assert ledger.head() == before, f"{case.method} {case.path} was refused but the head moved"
        content_type = response.headers.get("content-type", [""])[0]
        if content_type.startswith("application/json"):
            body = response.json()
            assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}, body
            assert body["error"]["code"] and body["error"]["message"]
        else:  # the HTML routes answer an error page with the same status
            assert content_type.startswith("text/html"), response.headers
