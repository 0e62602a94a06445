"""The sources router on a minimal app: POST /ingest/{source} and GET /paper/{id}/changes."""

from __future__ import annotations

import dataclasses
import json

import pytest
from fastapi.testclient import TestClient

from api.app import install_state
from api.state import state_of
from service.ledger import Ledger
from tests.api.app_support import sources_app
from tests.service.sources.test_sources_support import SOURCES_DIR, T_INGEST

TOKEN = "test-token-for-ingest"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
RW = (SOURCES_DIR / "retraction_watch.csv").read_bytes()


def _client(ledger: Ledger, **options: object) -> TestClient:
    return sources_app(ledger, TOKEN, **options)


@pytest.fixture
def client(imported_ledger: Ledger) -> TestClient:
    return _client(imported_ledger)


def test_ingest_appends_once_and_answers_the_summary(client: TestClient, imported_ledger: Ledger) -> None:
    r = client.post("/ingest/retraction-watch", params={"observed_at": T_INGEST}, content=RW, headers=AUTH)
    assert r.status_code == 201, r.text
    body = r.json()
    assert (body["matched"], body["notices"], body["works_checked"], body["appended"]) == (1, 1, 1, 1)
    assert body["skipped"] == {"no_matching_work": 10}
    head = imported_ledger.head()
    assert r.headers["Ledger-Head"] == f"{head.seq} {head.hash}"
    again = client.post(
        "/ingest/retraction-watch", params={"observed_at": T_INGEST}, content=RW, headers=AUTH
    )
    assert again.status_code == 200 and again.json()["appended"] == 0
    assert imported_ledger.head() == head


def test_ingest_needs_the_write_token(client: TestClient, imported_ledger: Ledger) -> None:
    head = imported_ledger.head()
    r = client.post("/ingest/retraction-watch", params={"observed_at": T_INGEST}, content=RW)
    assert r.status_code == 401 and r.json()["error"]["code"] == "unauthorized"
    wrong = {"Authorization": "Bearer nope"}
    r = client.post("/ingest/retraction-watch", params={"observed_at": T_INGEST}, content=RW, headers=wrong)
    assert r.status_code == 401
    assert imported_ledger.head() == head


def test_read_only_server_refuses(imported_ledger: Ledger) -> None:
    client = _client(imported_ledger, read_only=True)
    r = client.post("/ingest/crossref", params={"observed_at": T_INGEST}, content=b"{}", headers=AUTH)
    assert r.status_code == 403 and r.json()["error"]["code"] == "writes_disabled"


@pytest.mark.parametrize(
    ("path", "params", "body", "where"),
    [
        ("/ingest/crossref", {"observed_at": T_INGEST}, RW, "file"),
        ("/ingest/pubmed", {"observed_at": T_INGEST}, RW, "source"),
        ("/ingest/retraction-watch", {"observed_at": "2026-09-01"}, RW, "observed_at"),
        ("/ingest/opencitations", {"observed_at": T_INGEST}, b'[{"count": "3"}]', "id"),
    ],
)
def test_refusals_are_422_and_write_nothing(
    client: TestClient, imported_ledger: Ledger, path: str, params: dict[str, str], body: bytes, where: str
) -> None:
    head = imported_ledger.head()
    r = client.post(path, params=params, content=body, headers=AUTH)
    assert r.status_code == 422, r.text
    assert r.json()["error"]["details"]["where"] == where
    assert imported_ledger.head() == head


def test_missing_observed_at_is_422(client: TestClient) -> None:
    r = client.post("/ingest/retraction-watch", content=RW, headers=AUTH)
    assert r.status_code == 422 and r.json()["error"]["code"] == "invalid"


def test_opencitations_with_id(client: TestClient) -> None:
    params = {"observed_at": T_INGEST, "id": "doi:10.48550/arXiv.2509.02480"}
    r = client.post("/ingest/opencitations", params=params, content=b'[{"count": "3"}]', headers=AUTH)
    assert r.status_code == 201 and r.json()["measurements"] == 1


def test_body_over_the_ingest_limit_is_413(imported_ledger: Ledger) -> None:
    client = _client(imported_ledger, max_ingest_body=len(RW) - 1)
    r = client.post("/ingest/retraction-watch", params={"observed_at": T_INGEST}, content=RW, headers=AUTH)
    assert r.status_code == 413 and r.json()["error"]["code"] == "payload_too_large"
    assert "ingest limit" in r.json()["error"]["message"]
    # the same file at the limit is taken
    at_limit = _client(imported_ledger, max_ingest_body=len(RW))
    r = at_limit.post("/ingest/retraction-watch", params={"observed_at": T_INGEST}, content=RW, headers=AUTH)
    assert r.status_code in (200, 201), r.text


def test_changes_route(client: TestClient, imported_ledger: Ledger) -> None:
    client.post("/ingest/retraction-watch", params={"observed_at": T_INGEST}, content=RW, headers=AUTH)
    r = client.get("/paper/2509.02480/changes", params={"from": "2026-08-08T08:47:00Z", "to": "2026-09-02"})
    assert r.status_code == 200, r.text
    assert r.headers["content-type"] == "application/json"
    d = json.loads(r.content)
    assert r.content == json.dumps(d, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    [o] = d["observations"]
    assert o["observation_id"] == "ce9ea7f7-381d-48ca-ab94-cb46c01aba5f"
    assert [c["kind"] for c in o["changes"]] == ["receipt_moved", "notice_appeared"]
    head = imported_ledger.head()
    assert r.headers["Ledger-Head"] == f"{head.seq} {head.hash}"
    # `to` defaults to now
    assert client.get("/paper/2509.02480/changes", params={"from": "2026-08-08"}).json()["observations"]


@pytest.mark.parametrize(
    ("path", "params", "status"),
    [
        ("/paper/2509.02480/changes", {}, 422),
        ("/paper/2509.02480/changes", {"from": "yesterday"}, 422),
        ("/paper/2509.02480/changes", {"from": "2026-09-02", "to": "2026-09-01"}, 422),
        ("/paper/25.1/changes", {"from": "2026-09-01"}, 422),
        ("/paper/2101.09999/changes", {"from": "2026-09-01"}, 404),
    ],
)
def test_changes_errors(client: TestClient, path: str, params: dict[str, str], status: int) -> None:
    r = client.get(path, params=params)
    assert r.status_code == status and "error" in r.json()


def test_openapi_documents_both_routes(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    assert "text/csv" in paths["/ingest/{source}"]["post"]["requestBody"]["content"]
    assert {p["name"] for p in paths["/paper/{arxiv_id}/changes"]["get"]["parameters"]} >= {"from", "to"}


def test_ingest_is_charged_to_the_tokens_rate(imported_ledger: Ledger) -> None:
    """An ingest is let in while its token is not in debt, then charged its events; refused files cost one."""
    from api.auth import hash_token
    from api.limits import RateLimiter

    key = hash_token(TOKEN)
    client = _client(imported_ledger)
    now = [1000.0]
    limiter = RateLimiter(1.0, 2.0, clock=lambda: now[0])
    install_state(client.app, dataclasses.replace(state_of(client.app), rate_limiter=limiter))
    bad = client.post("/ingest/crossref", params={"observed_at": T_INGEST}, content=b"not json", headers=AUTH)
    assert bad.status_code == 422
    assert limiter.wait(key) == 0  # charged 1 of its 2
    r = client.post("/ingest/retraction-watch", params={"observed_at": T_INGEST}, content=RW, headers=AUTH)
    assert r.status_code == 201 and r.json()["appended"] >= 1
    head = imported_ledger.head()
    again = client.post(
        "/ingest/retraction-watch", params={"observed_at": T_INGEST}, content=RW, headers=AUTH
    )
    assert again.status_code == 429 and again.json()["error"]["code"] == "rate_limited"
    assert imported_ledger.head() == head
    now[0] += 60  # refilled
    assert limiter.wait(key) == 0
    ok = client.post("/ingest/retraction-watch", params={"observed_at": T_INGEST}, content=RW, headers=AUTH)
    assert ok.status_code == 200 and ok.json()["duplicates"] >= 1
