"""POST /ingest/works?observed_at=T: a write token, the ingest limit, refusals as 422 naming the file."""

from __future__ import annotations

import gzip
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from service.ledger import Ledger
from tests.api.app_support import sources_app

DATA = Path(__file__).resolve().parents[2] / "data" / "works"
T = "2026-11-01T00:00:00Z"
TOKEN = "test-token-for-works"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def _client(ledger: Ledger, **options: object) -> TestClient:
    return sources_app(ledger, TOKEN, **options)


def test_works_are_appended_once(fresh_ledger: Ledger) -> None:
    client = _client(fresh_ledger)
    body = (DATA / "openalex-results.json").read_bytes()
    r = client.post("/ingest/works", params={"observed_at": T}, content=body, headers=AUTH)
    assert r.status_code == 201, r.text
    assert (r.json()["appended"], r.json()["skipped"]) == (1, {"no DOI": 1})
    head = fresh_ledger.head()
    assert r.headers["Ledger-Head"] == f"{head.seq} {head.hash}"
    again = client.post("/ingest/works", params={"observed_at": T}, content=body, headers=AUTH)
    assert again.status_code == 200 and again.json()["unchanged"] == 1
    assert fresh_ledger.head() == head


def test_a_gzipped_body_is_read(fresh_ledger: Ledger) -> None:
    body = gzip.compress((DATA / "crossref-items.ndjson").read_bytes())
    r = _client(fresh_ledger).post("/ingest/works", params={"observed_at": T}, content=body, headers=AUTH)
    assert r.status_code == 201 and r.json()["appended"] == 2


def test_the_write_token_is_needed(fresh_ledger: Ledger) -> None:
    body = (DATA / "crossref-work.json").read_bytes()
    r = _client(fresh_ledger).post("/ingest/works", params={"observed_at": T}, content=body)
    assert r.status_code == 401
    assert fresh_ledger.head().seq == 0


@pytest.mark.parametrize(
    "params,body,where",
    [
        ({"observed_at": T}, b'{"results": 7}', "file"),
        ({"observed_at": T}, b"", "file"),
        ({"observed_at": "soon"}, b"{}", "observed_at"),
    ],
)
def test_refusals_are_422_naming_the_place(
    fresh_ledger: Ledger, params: dict[str, str], body: bytes, where: str
) -> None:
    r = _client(fresh_ledger).post("/ingest/works", params=params, content=body, headers=AUTH)
    assert r.status_code == 422, r.text
    assert r.json()["error"]["details"]["where"] == where
    assert fresh_ledger.head().seq == 0


def test_a_body_over_the_ingest_limit_is_413(fresh_ledger: Ledger) -> None:
    body = (DATA / "crossref-works.json").read_bytes()
    client = _client(fresh_ledger, max_ingest_body=100)
    r = client.post("/ingest/works", params={"observed_at": T}, content=body, headers=AUTH)
    assert r.status_code == 413 and r.json()["error"]["code"] == "payload_too_large"
    assert fresh_ledger.head().seq == 0
