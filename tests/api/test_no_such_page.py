"""An address no route takes: a page leading back to the index for a browser, JSON for the rest."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from api.app import create_app
from api.settings import Settings

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # starlette's notice about httpx in its TestClient
    from fastapi.testclient import TestClient

BROWSER = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"


@pytest.fixture
def client(tmp_path: Path) -> TestClient:
    return TestClient(create_app(Settings(db=str(tmp_path / "ledger.db"))))


def test_a_browser_gets_a_page_that_leads_back(client: TestClient):
    answer = client.get("/papers/2509.02480<b>", headers={"accept": BROWSER})
    assert answer.status_code == 404
    assert answer.headers["content-type"].startswith("text/html")
    assert answer.headers["vary"] == "Accept"
    assert "There is no page at /papers/2509.02480&lt;b&gt;." in answer.text  # escaped
    assert '<a href="/">The papers this ledger holds</a>' in answer.text


@pytest.mark.parametrize("accept", ["*/*", "application/json", "text/html;q=0.5, application/json", None])
def test_every_other_client_gets_the_json_error(client: TestClient, accept: str | None):
    headers = {"accept": accept} if accept else {}
    answer = client.get("/nope", headers=headers)
    assert answer.status_code == 404
    assert answer.json() == {"error": {"code": "not_found", "message": "Not Found", "details": None}}
    assert answer.headers["vary"] == "Accept"


def test_a_wrong_method_stays_json_even_for_a_browser(client: TestClient):
    answer = client.post("/checkpoint/key", headers={"accept": BROWSER})
    assert answer.status_code == 405
    assert answer.json()["error"]["code"] == "method_not_allowed"
