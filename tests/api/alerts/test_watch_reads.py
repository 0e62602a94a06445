"""Reading a watch is a read: it needs the token that made the watch, not a server that takes writes."""

from __future__ import annotations

import warnings

import pytest

from api.app import create_app
from api.settings import Settings
from tests.conftest import NewDb

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # starlette's notice about httpx in its TestClient
    from fastapi.testclient import TestClient

TOKEN = {"Authorization": "Bearer s3cret"}
READS = ["", "/alerts", "/deliveries"]


def _client(db: str, **settings: object) -> TestClient:
    return TestClient(create_app(Settings(db=db, **settings)))  # type: ignore[arg-type]


@pytest.fixture
def db(new_db: NewDb) -> str:
    """A new ledger on the backend under test."""
    return new_db()


@pytest.fixture
def watch(db: str) -> str:
    """A watch made over HTTP with the token s3cret, on a server that takes writes."""
    made = _client(db, tokens=("s3cret",)).post("/watches", json={"arxiv_id": "2509.02480"}, headers=TOKEN)
    assert made.status_code == 201, made.text
    return str(made.json()["id"])


@pytest.mark.parametrize("route", READS)
def test_a_read_only_server_shows_a_watch_to_the_token_that_made_it(db: str, watch: str, route: str):
    reader = _client(db, tokens=("s3cret",), read_only=True)
    assert reader.get(f"/watches/{watch}{route}", headers=TOKEN).status_code == 200
    assert [w["id"] for w in reader.get("/watches", headers=TOKEN).json()["watches"]] == [watch]


@pytest.mark.parametrize("route", READS)
def test_a_read_without_a_token_is_told_it_needs_one_not_that_writes_are_off(db: str, watch: str, route: str):
    answer = _client(db, tokens=("s3cret",)).get(f"/watches/{watch}{route}")
    assert answer.status_code == 401
    assert answer.json()["error"] == {
        "code": "unauthorized",
        "message": "reading a watch needs the header `Authorization: Bearer <token>`",
        "details": None,
    }


def test_a_server_without_tokens_says_reading_needs_one_configured(db: str, watch: str):
    answer = _client(db).get(f"/watches/{watch}/deliveries", headers=TOKEN)
    assert answer.status_code == 401
    message = answer.json()["error"]["message"]
    assert message.startswith(
        "reading a watch needs a bearer token, and none is configured (set LEDGER_TOKENS"
    )


def test_making_and_removing_a_watch_stay_writes(db: str, watch: str):
    reader = _client(db, tokens=("s3cret",), read_only=True)
    for answer in (reader.post("/watches", json={"arxiv_id": "2509.02480"}, headers=TOKEN),
                   reader.delete(f"/watches/{watch}", headers=TOKEN)):  # fmt: skip
        assert answer.status_code == 403 and answer.json()["error"]["code"] == "writes_disabled"
