"""Resolving over HTTP (api/resolve/routes.py): POST /resolve, its jobs, a person's resolution, the
evidence of one resolution, and the record page and integrity report that link to it."""

from __future__ import annotations

import dataclasses
import uuid
from typing import Any

import httpx
import pytest

from api.app import create_app, install_state
from api.settings import Settings
from api.state import state_of
from service.resolver.jobs import Jobs
from tests.api.test_api import AUTH, TOKEN, TestClient, ledger_of
from tests.api_fixtures import running_server
from tests.conftest import NewDb
from tests.resolver_doubles import (
    CITING,
    DOI,
    METHOD,
    OIDS,
    known_work_event,
    live_resolver,
    seed_world,
)

HTML = {"Accept": "text/html"}


class Api:
    """The app over a ledger where CITING cites CITED's title, a DOI the catalogue knows and a title
    nobody knows; its resolver is the test double, its jobs run when the test says."""

    def __init__(self, db: str) -> None:
        self.app = create_app(Settings(db=db, tokens=(TOKEN,)))
        self.client = TestClient(self.app)
        ledger = ledger_of(self.client)
        seed_world(ledger)
        # the DOI's work stands at its own work.observed, an event no record of CITING uses
        work = known_work_event(ledger)
        self.work_seq = work.seq
        self.started: list[Any] = []
        jobs = Jobs(ledger, spawn=self.started.append)
        install_state(
            self.app, dataclasses.replace(state_of(self.app), resolver=live_resolver(work), resolve_jobs=jobs)
        )

    def head(self) -> int:
        return ledger_of(self.client).head().seq


@pytest.fixture
def api(new_db: NewDb) -> Api:
    return Api(new_db())


def test_resolving_papers_answers_the_summary_and_a_rerun_appends_nothing(api: Api) -> None:
    r = api.client.post("/resolve", json={"papers": [CITING]}, headers=AUTH)
    assert r.status_code == 200, r.text
    body = r.json()
    assert (body["examined"], body["unchanged"], body["appended"]) == (4, 1, 3)
    assert body["changed"] == {"unresolved": 1, "verified_exact": 2}
    assert r.headers["Ledger-Head"].split()[0] == str(api.head())
    again = api.client.post("/resolve", json={"papers": [f"arXiv:{CITING}v1"]}, headers=AUTH).json()
    assert (again["examined"], again["appended"], again["changes"]) == (2, 0, [])


def test_a_dry_run_over_http_writes_nothing(api: Api) -> None:
    head = api.head()
    body = api.client.post("/resolve", json={"papers": [CITING], "dry_run": True}, headers=AUTH).json()
    assert api.head() == head and body["dry_run"] is True and body["appended"] == 0
    assert len(body["changes"]) == 3


def test_all_is_a_job_one_at_a_time_polled_until_done(api: Api) -> None:
    r = api.client.post("/resolve", json={"all": True}, headers=AUTH)
    assert r.status_code == 202 and r.json()["state"] == "running"
    job = r.json()["id"]
    assert r.headers["Location"] == f"/resolve/jobs/{job}"
    second = api.client.post("/resolve", json={"all": True}, headers=AUTH)
    assert second.status_code == 202 and second.json()["id"] == job and len(api.started) == 1
    api.started.pop()()
    polled = api.client.get(f"/resolve/jobs/{job}", headers=AUTH).json()
    assert polled["state"] == "done" and polled["summary"]["appended"] == 3
    missing = api.client.get(f"/resolve/jobs/{uuid.UUID(int=7)}", headers=AUTH)
    assert missing.status_code == 404


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"papers": [CITING], "extra": 1}, "extra"),
        ({"papers": CITING}, "papers"),
        ({"papers": []}, "papers"),
        ({"papers": [CITING] * 101}, "papers"),
        ({"papers": [7]}, "papers[0]"),
        ({"papers": ["not an id"]}, "papers[0]"),
        ({"papers": [CITING, "2999.00001"]}, "papers"),
        ({"all": False}, "all"),
        ({"all": True, "papers": [CITING]}, "papers"),
        ({"papers": [CITING], "dry_run": "yes"}, "dry_run"),
        ([CITING], "$"),
    ],
)
def test_a_bad_body_is_422_naming_the_field_and_nothing_written(api: Api, body: Any, field: str) -> None:
    head = api.head()
    r = api.client.post("/resolve", json=body, headers=AUTH)
    assert r.status_code == 422, r.text
    assert r.json()["error"]["details"]["where"] == field
    assert api.head() == head and api.started == []


def test_resolving_needs_a_token(api: Api) -> None:
    assert api.client.post("/resolve", json={"papers": [CITING]}).status_code == 401
    assert api.client.post("/resolve/person", json={}).status_code == 401


def test_a_person_sets_a_match_over_http_and_the_resolver_keeps_it(api: Api) -> None:
    body = {"observation_id": OIDS[0], "by": "Ada Lovelace", "none": True}
    r = api.client.post("/resolve/person", json=body, headers=AUTH)
    assert r.status_code == 201, r.text
    assert r.json()["resolver_source"] == "person:Ada Lovelace"
    api.client.post("/resolve", json={"papers": [CITING]}, headers=AUTH)
    view = api.client.get(f"/paper/{CITING}/observations/{OIDS[0]}/resolution").json()
    assert view["resolution"]["by_person"] == "Ada Lovelace" and view["resolution"]["status"] == "unresolved"
    page = api.client.get(f"/paper/{CITING}/observations/{OIDS[0]}/resolution", headers=HTML).text
    assert "a person, Ada Lovelace, on " in page and "by by" not in page


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"observation_id": OIDS[0], "by": "A", "none": True, "x": 1}, "x"),
        ({"observation_id": "short", "by": "A", "none": True}, "observation_id"),
        ({"observation_id": OIDS[0], "by": "", "none": True}, "by"),
        ({"observation_id": OIDS[0], "by": "A"}, "doi"),
        ({"observation_id": OIDS[0], "by": "A", "none": "yes"}, "none"),
        ({"observation_id": OIDS[0], "by": "A", "doi": "not a doi"}, "doi"),
    ],
)
def test_a_bad_person_body_is_422_naming_the_field(api: Api, body: dict[str, Any], field: str) -> None:
    head = api.head()
    r = api.client.post("/resolve/person", json=body, headers=AUTH)
    assert r.status_code == 422 and r.json()["error"]["details"]["where"] == field
    assert api.head() == head


def test_a_person_names_an_observation_that_exists_over_http(api: Api) -> None:
    body = {"observation_id": str(uuid.UUID(int=99)), "by": "A", "none": True}
    assert api.client.post("/resolve/person", json=body, headers=AUTH).status_code == 404


def test_the_evidence_of_a_resolution_is_json_for_clients_and_a_page_for_browsers(api: Api) -> None:
    api.client.post("/resolve", json={"papers": [CITING]}, headers=AUTH)
    url = f"/paper/{CITING}/observations/{OIDS[1]}/resolution"
    view = api.client.get(url).json()
    assert view["resolution"]["resolver_source"] == "citation-ledger/" + METHOD
    assert view["evidence"]["method"] == "identifier" and view["evidence"]["catalogue_seq"] == api.work_seq
    assert view["catalogue_event"]["seq"] == api.work_seq
    assert view["catalogue_event"]["links"]["proof"] == f"/evidence/{api.work_seq}/proof"
    page = api.client.get(url, headers=HTML)
    assert page.headers["content-type"].startswith("text/html")
    for text in ("verified exact", "citation-ledger/" + METHOD, "the DOI in the reference", "title",
                 "Runner-up", f"/evidence/{api.work_seq}/proof"):  # fmt: skip
        assert text in page.text
    pending = api.client.get(f"/paper/{CITING}/observations/{uuid.UUID(int=77)}/resolution")
    assert pending.status_code == 404


def test_the_record_page_says_how_each_reference_was_resolved(api: Api) -> None:
    api.client.post("/resolve", json={"papers": [CITING]}, headers=AUTH)
    api.client.post("/resolve/person", json={"observation_id": OIDS[2], "by": "Bo", "doi": DOI}, headers=AUTH)
    page = api.client.get(f"/paper/{CITING}/citation-record", headers=HTML).text
    assert f"/paper/{CITING}/observations/{OIDS[1]}/resolution" in page
    assert "by person Bo" in page
    assert f"/paper/{CITING}/observations/{OIDS[3]}/resolution" not in page  # no resolver of ours


def test_the_integrity_report_proves_the_resolution_and_its_catalogue_event(api: Api) -> None:
    api.client.post("/resolve", json={"papers": [CITING]}, headers=AUTH)
    report = api.client.get(f"/paper/{CITING}/integrity").json()
    listed = {e["seq"] for e in report["events"]}
    resolved = [e.seq for e in ledger_of(api.client).store.read_log(type="resolution.observed")]
    assert set(resolved) <= listed and api.work_seq not in listed
    assert report["ok"] is True
    [used] = report["catalogue_events"]
    assert used["seq"] == api.work_seq and used["hash_ok"] and used["linked"] and used["proof_ok"]
    assert api.work_seq in {p["seq"] for p in report["proofs"]}
    page = api.client.get(f"/paper/{CITING}/integrity", headers=HTML).text
    assert "The catalogue events its resolutions matched" in page


@pytest.mark.process
def test_refusals_over_a_real_socket(new_db: NewDb) -> None:
    db = new_db()
    with running_server(db, env={"LEDGER_TOKENS": TOKEN}, args=["--no-samples"]) as server:
        r = httpx.post(f"{server.base}/resolve", json={"papers": ["x"], "more": 1}, headers=AUTH)
        assert r.status_code == 422 and r.json()["error"]["details"]["where"] == "more"
        assert httpx.post(f"{server.base}/resolve", json={"all": True}).status_code == 401
        r = httpx.post(f"{server.base}/resolve", json={"papers": ["2999.00001"]}, headers=AUTH)
        assert r.status_code == 422 and r.json()["error"]["details"]["where"] == "papers"


def test_a_pending_reference_is_shown_as_given_its_markup_as_text(api: Api) -> None:
    oid = str(uuid.UUID(int=4242))
    reference = {"unstructured": "<script>alert(1)</script> A. Author, 2020", "volume": "<b>3</b>"}
    data = {"observation_id": oid, "citing_arxiv_id": CITING, "reference_index": 9, "source": "crossref",
            "cited_work": None, "reference": reference}  # fmt: skip
    event = {"type": "citation.observed", "observed_at": "2026-01-02T00:00:00Z", "data": data}
    assert api.client.post("/events", json={"events": [event]}, headers=AUTH).status_code == 201
    page = api.client.get(f"/paper/{CITING}/observations/{oid}/resolution", headers=HTML)
    assert page.status_code == 200 and page.headers["vary"] == "Accept"
    assert "Resolution: pending (not yet resolved)." in page.text
    assert "&lt;script&gt;alert(1)&lt;/script&gt; A. Author, 2020" in page.text
    assert "<script>alert" not in page.text
    assert "&lt;b&gt;3&lt;/b&gt;" in page.text
    events = api.client.get("/evidence?type=citation.observed&limit=1000", headers=HTML).text
    assert "<script>alert" not in events and "&lt;script&gt;alert(1)" in events
