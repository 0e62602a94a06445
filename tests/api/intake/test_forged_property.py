"""Property: any resolution a client posts (any resolver_source, any evidence seq, any cited DOI) is
refused, named, when it claims the resolver or a person, and otherwise appended with its writer; then its
page and the integrity report answer 200, and say whether its evidence names its work exactly when the
catalogue event it names is the work.observed of the cited DOI. Never a 5xx."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from api.app import create_app
from api.settings import Settings
from ledger.model.claims import claimed
from tests.api.test_api import AUTH, TOKEN, TestClient, ledger_of
from tests.api_fixtures import now_rfc3339
from tests.conftest import examples
from tests.resolver_doubles import CITING, DOI, OIDS, known_work_event, seed_world

sources = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["citation-ledger/", "person:", "Citation-Ledger/", "ｐerson:", "local_arxiv"]).flatmap(
        lambda p: st.text(max_size=10).map(lambda rest: p + rest)
    ),
)


class World:
    def __init__(self, db: str) -> None:
        self.client = TestClient(create_app(Settings(db=db, tokens=(TOKEN,))))
        ledger = ledger_of(self.client)
        seed_world(ledger)
        self.work_seq = known_work_event(ledger).seq
        self.head = ledger.head().seq


@pytest.fixture(scope="module")
def world(db_factory: Callable[[Path, str], str], tmp_path_factory: pytest.TempPathFactory) -> World:
    """One ledger on the backend under test for every example."""
    return World(db_factory(tmp_path_factory.mktemp("forged"), "ledger.db"))


_COUNT = itertools.count()


@settings(
    max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    source=sources,
    at=st.one_of(st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1), st.sampled_from([1, 2, 7, 8, 9])),
    doi=st.sampled_from([DOI, "10.9999/forged", None]),
)
def test_a_posted_resolution_is_refused_or_checked(
    world: World, source: str, at: int, doi: str | None
) -> None:
    at = world.work_seq if at == 9 else at
    cited = {"arxiv_id": None, "doi": doi, "metadata_source": "crossref", "pith_arxiv_id": None,
             "snapshot_observed_at": "2026-01-01T00:00:00Z", "title": f"t{next(_COUNT)}", "venue": None,
             "work_id": None, "year": 2020}  # fmt: skip
    event = {"type": "resolution.observed", "observed_at": now_rfc3339(),
             "data": {"observation_id": OIDS[1], "status": "verified_exact", "resolver_source": source,
                      "cited_work": cited, "cited_arxiv_id": None,
                      "evidence": {"method": "identifier", "catalogue_seq": at, "score": 1, "agreed": [],
                                   "disagreed": [], "runner_up": None}}}  # fmt: skip
    client = world.client
    before = ledger_of(client).head().seq
    r = client.post("/events", json={"events": [event]}, headers=AUTH)
    assert r.status_code < 500, r.text
    if claimed(source) is not None:
        assert (
            r.status_code == 422 and r.json()["error"]["details"]["where"] == "events[0].data.resolver_source"
        )
        assert ledger_of(client).head().seq == before
        return
    if r.status_code == 422:  # a source the ledger refuses for another reason (its length, U+0000)
        assert ledger_of(client).head().seq == before
        return
    assert r.status_code == 201, r.text
    seq = r.json()["events"][0]["seq"]
    names = at == world.work_seq and doi == DOI
    view = client.get(f"/paper/{CITING}/observations/{OIDS[1]}/resolution")
    assert view.status_code == 200, view.text
    body: dict[str, Any] = view.json()
    assert body["resolution"]["seq"] == seq and body["writer"]["via"] == "POST /events"
    assert body["evidence_check"]["names_work"] is names
    report = client.get(f"/paper/{CITING}/integrity")
    assert report.status_code == 200, report.text
    [mine] = [c for c in report.json()["resolutions"]["checked"] if c["seq"] == seq]
    assert mine["names_work"] is names
    if not names:
        assert report.json()["ok"] is False
