"""POST /events with the resolver's additions: work.observed on its stream, a citation's reference, and
refusals naming the field (resolver-v1.md); the documented examples are accepted."""

from __future__ import annotations

import copy
import warnings
from typing import Any

import pytest

from api.app import create_app
from api.docs import EVENT_EXAMPLES, events_body
from api.settings import Settings
from ledger.model.jsonvalue import Json
from tests.conftest import NewDb

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

TOKEN = "work-events-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


@pytest.fixture
def client(new_db: NewDb) -> TestClient:
    return TestClient(create_app(Settings(db=new_db(), tokens=(TOKEN,))))


def _example(name: str) -> dict[str, Any]:
    node: Json = events_body()
    for key in ("requestBody", "content", "application/json", "examples", name, "value"):
        assert isinstance(node, dict), key
        node = node[key]
    assert isinstance(node, dict)
    return copy.deepcopy(node)


def test_a_work_observed_is_stored_on_its_doi_stream(client: TestClient) -> None:
    r = client.post("/events", json={"events": [EVENT_EXAMPLES["work.observed"]]}, headers=AUTH)
    assert r.status_code == 201, r.text
    stored = client.get("/evidence", params={"type": "work.observed"}).json()
    (event,) = stored["events"]
    assert event["stream"] == "work:10.1109/sc41405.2020.00024"


def test_the_reference_example_is_accepted_and_kept(client: TestClient) -> None:
    body = _example("citation_with_reference")
    r = client.post("/events", json=body, headers=AUTH)
    assert r.status_code == 201, r.text
    (event,) = client.get("/evidence", params={"type": "citation.observed"}).json()["events"]
    assert event["data"]["reference"] == body["events"][0]["data"]["reference"]


@pytest.mark.parametrize(
    "path,value,where",
    [
        ("reference", {"bogus": "x"}, "events[0].data.reference.bogus"),
        ("reference", {"year": 2020}, "events[0].data.reference.year"),
        ("reference", None, "events[0].data.reference"),
    ],
)
def test_a_bad_reference_is_422_naming_the_field(
    client: TestClient, path: str, value: Any, where: str
) -> None:
    body = _example("citation_with_reference")
    body["events"][0]["data"][path] = value
    r = client.post("/events", json=body, headers=AUTH)
    assert r.status_code == 422, r.text
    assert r.json()["error"]["details"]["where"] == where
    assert client.get("/evidence").json()["events"] == []


@pytest.mark.parametrize(
    "field,value,where",
    [
        ("doi", "10.1109/SC41405.2020.00024", "events[0].data.doi"),
        ("source", "", "events[0].data.source"),
        ("orcid", "x", "events[0].data.orcid"),
    ],
)
def test_a_bad_work_is_422_naming_the_field(client: TestClient, field: str, value: Any, where: str) -> None:
    event = copy.deepcopy(EVENT_EXAMPLES["work.observed"])
    event["data"][field] = value
    r = client.post("/events", json={"events": [event]}, headers=AUTH)
    assert r.status_code == 422, r.text
    assert r.json()["error"]["details"]["where"] == where
