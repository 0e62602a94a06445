"""api/integrity.py: a record that counts more inbound observations than it shows is proven page by
page, every page recomputed from its own events, and a forged count is caught."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.app import create_app
from api.settings import Settings
from api.state import state_of
from service.ledger import Ledger
from tests.conftest import NewDb
from tests.factories import citation, oid_of, paper, resolution, ts
from tests.raw import edit

P = "2101.00001"
CITING = 10


@pytest.fixture
def cited(new_db: NewDb, monkeypatch: pytest.MonkeyPatch) -> TestClient:
    """A paper cited by CITING others; the record shows 4 of them, a page proves 3 more."""
    monkeypatch.setitem(__import__("projections.record").record.CAPS, "inbound", 4)
    monkeypatch.setattr("api.records.integrity.PAGE_OBSERVATIONS", 3)
    db = new_db()
    ledger = Ledger(db)
    events: list[Any] = [paper(P, ts(0))]
    for n in range(CITING):
        citing = f"2201.{n:05d}"
        events += [
            paper(citing, ts(1, n)),
            citation(oid_of(n), citing, ts(2, n), 0),
            resolution(oid_of(n), ts(3, n), cited_arxiv=P),
        ]
    ledger.append(events)
    # one more citing paper whose observation is not resolved to P
    ledger.append([citation(oid_of(99), "2201.00099", ts(2, 99), 0)])
    ledger.ops.project()  # the spans the forged count is made from
    return TestClient(create_app(Settings(db=db)))


def _page(client: TestClient, page: int) -> Any:
    r = client.get(f"/paper/{P}/integrity", params={"as_of": ts(10), "page": page})
    assert r.status_code == 200, r.text
    return r.json()


def test_every_counted_observation_is_proven_on_some_page(cited: TestClient) -> None:
    first = _page(cited, 1)
    assert first["ok"], first["problems"]
    assert first["counts"]["inbound"] | {"how": ""} == {"total": 10, "shown": 4, "not_shown": 6, "how": ""}
    assert "counted by the database over inbound_spans" in first["counts"]["inbound"]["how"]
    assert first["page"]["pages"] == 3 and first["page"]["next"].endswith("&page=2")
    assert first["recomputed"]["record_identical"] and first["recomputed"]["observations_checked"] == 4
    proven = {o["observation_id"] for o in first["recomputed"]["observations"]}
    for page in (2, 3):
        report = _page(cited, page)
        assert report["ok"], report["problems"]
        listed = report["recomputed"]["observations"]
        assert [o["inbound"] for o in listed] == [True] * 3
        assert {e["seq"] for e in report["events"]} == {p["seq"] for p in report["proofs"]}
        proven |= {o["observation_id"] for o in listed}
    assert proven == {oid_of(n) for n in range(CITING)}
    assert _page(cited, 3)["page"]["next"] is None


def test_a_page_past_the_last_is_not_found(cited: TestClient) -> None:
    r = cited.get(f"/paper/{P}/integrity", params={"as_of": ts(10), "page": 4})
    assert r.status_code == 404 and "has 3 pages" in r.json()["error"]["message"]


@pytest.mark.parametrize("page", ["0", "-1", "x", "1e3"])
def test_a_bad_page_is_refused(cited: TestClient, page: str) -> None:
    r = cited.get(f"/paper/{P}/integrity", params={"page": page})
    assert r.status_code == 422 and "page" in r.text


def test_a_forged_count_shows_on_the_page_that_lists_it(cited: TestClient) -> None:
    """A span made for the unresolved observation: the ledger now counts 11, and the page listing it
    recomputes it from its events as not inbound."""
    ledger: Ledger = state_of(cited.app).ledger
    edit(
        ledger.url,
        "INSERT INTO inbound_spans SELECT cited, '2201.00099', reference_index, ?, t_from, t_to, "
        "(SELECT seq FROM events WHERE type = 'citation.observed' ORDER BY seq DESC LIMIT 1), "
        "resolution_seq, k_from, k_to FROM inbound_spans LIMIT 1",
        params=(oid_of(99),),
    )
    first = _page(cited, 1)
    assert (first["counts"]["inbound"]["total"], first["page"]["pages"]) == (11, 4)
    last = _page(cited, 4)  # the forged observation's citing paper sorts last
    assert not last["ok"]
    listed = {o["observation_id"]: o["inbound"] for o in last["recomputed"]["observations"]}
    assert listed[oid_of(99)] is False
    assert not ledger.verify().ok
