"""Resolutions that claim the ledger's own resolver or a person, over real sockets against `ledger serve`
(on the backend under test): refused at every door that takes events from a client, named, with nothing
written and no writer recorded; the resolver's own POST /resolve still appends; each write's token is
recorded beside the chain and shown with the evidence; and a forged resolution written below the API
(as an attacker with database access, or an old ledger, would have) is caught by the integrity report."""

from __future__ import annotations

import copy
import hashlib
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from ledger.model.events import CitedWork, ResolutionData, ResolutionObserved
from ledger.model.works import Evidence
from service.ledger import Ledger
from tests.api_fixtures import Server, now_rfc3339, running_server
from tests.conftest import FIXTURE_PATH, NewDb
from tests.waiting import wait_until

pytestmark = pytest.mark.process

TOKEN = "forged-resolutions-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
WRITER = "token:" + hashlib.sha256(TOKEN.encode()).hexdigest()
PAPER = "2509.02480"
WORKS = Path(__file__).parent.parent / "data" / "works" / "fixture-cited-works.ndjson"
SAMPLE_RW = Path(__file__).parent.parent.parent / "ledger" / "samples" / "sources" / "retraction_watch.csv"
RECORD = json.loads(FIXTURE_PATH.read_bytes())
OID = RECORD["outbound"][0]["observation_id"]
SWAP_OID, SWAP_DOI = "5a5a5a5a-0000-4000-8000-000000000099", "10.5555/3373376.3378530"
SWAP_TITLE = "SwapAdvisor: Pushing Deep Learning Beyond the GPU Memory Limit via Smart Swapping"


def _forged(source: str, observation_id: str = OID) -> dict[str, Any]:
    """A verified_exact resolution naming `source`, any DOI, and evidence at an unrelated event."""
    return {
        "type": "resolution.observed",
        "observed_at": now_rfc3339(),
        "data": {
            "observation_id": observation_id,
            "status": "verified_exact",
            "resolver_source": source,
            "cited_work": {"arxiv_id": None, "doi": "10.9999/forged", "metadata_source": "crossref",
                           "pith_arxiv_id": None, "snapshot_observed_at": "2026-01-01T00:00:00Z",
                           "title": "A forged work", "venue": None, "work_id": None, "year": 2020},
            "cited_arxiv_id": None,
            "evidence": {"method": "identifier", "catalogue_seq": 1, "score": 100, "agreed": ["title"],
                         "disagreed": [], "runner_up": None},
        },
    }  # fmt: skip


def _head(server: Server) -> int:
    return int(httpx.get(f"{server.base}/healthz", timeout=10).json()["head"]["seq"])


def _writer_rows(db: str) -> list[Any]:
    ledger = Ledger(db)
    try:
        return ledger.store.writers.rows_between(1, 2**62)
    finally:
        ledger.close()


@pytest.fixture
def served(new_db: NewDb) -> Any:
    """A server over a ledger holding the real record (POST /records), its cited works (POST
    /ingest/works) and the resolver's answers for it (POST /resolve), each written with TOKEN."""
    db = new_db()
    with running_server(db, env={"LEDGER_TOKENS": TOKEN}, args=["--no-samples"], timeout=60) as server:
        r = httpx.post(f"{server.base}/records", content=FIXTURE_PATH.read_bytes(), headers=AUTH, timeout=60)
        assert r.status_code == 201, r.text
        url = f"{server.base}/ingest/works?observed_at=2026-09-01T00:00:00Z"
        r = httpx.post(url, content=WORKS.read_bytes(), headers=AUTH, timeout=60)
        assert r.status_code == 201, r.text
        # a reference naming one of those works by its DOI, for the resolver to match to its work.observed
        reference = {"DOI": SWAP_DOI, "article-title": SWAP_TITLE, "author": "Huang", "year": "2020"}
        cited = {**RECORD["outbound"][0]["citation"]["cited_work"], "title": SWAP_TITLE, "work_id": None}
        citation = {"type": "citation.observed", "observed_at": now_rfc3339(),
                    "data": {"observation_id": SWAP_OID, "citing_arxiv_id": PAPER, "reference_index": 99,
                             "source": "pdf_text", "cited_work": cited, "reference": reference}}  # fmt: skip
        r = httpx.post(f"{server.base}/events", json={"events": [citation]}, headers=AUTH, timeout=30)
        assert r.status_code == 201, r.text
        yield server, db


def _resolved(server: Server) -> dict[str, Any]:
    """POST /resolve of the paper (the resolver's own appends), answered with its summary."""
    r = httpx.post(f"{server.base}/resolve", json={"papers": [PAPER]}, headers=AUTH, timeout=120)
    assert r.status_code == 200, r.text
    return r.json()  # type: ignore[no-any-return]


@pytest.mark.parametrize(
    "source",
    ["citation-ledger/title-author-year/1", "person:Mallory", "Citation-Ledger/x", "ｐerson:Mallory",
     "person\u200b:Mallory"],
)  # fmt: skip
def test_a_resolution_claiming_the_resolver_or_a_person_is_refused_and_nothing_written(
    served: Any, source: str
) -> None:
    server, db = served
    head, writers = _head(server), _writer_rows(db)
    ok = {"type": "measurement.observed", "observed_at": now_rfc3339(),
          "data": {"arxiv_id": PAPER, "source": "opencitations", "metric": "citation_count", "value": 3,
                   "source_release": None, "query_url": None}}  # fmt: skip
    r = httpx.post(f"{server.base}/events", json={"events": [ok, _forged(source)]}, headers=AUTH, timeout=30)
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert error["details"]["where"] == "events[1].data.resolver_source"
    assert "--keep-resolver-events" in error["message"]
    assert (_head(server), _writer_rows(db)) == (head, writers)


def test_a_record_claiming_the_resolver_is_refused_forced_or_not(served: Any) -> None:
    server, db = served
    _resolved(server)
    # the record as this ledger serves it now: its digests hold, its resolutions name the resolver
    own = httpx.get(f"{server.base}/paper/{PAPER}/citation-record.json", timeout=30).json()
    at = next(
        i
        for i, o in enumerate(own["outbound"])
        if (o["resolution"]["resolver_source"] or "").startswith("citation-ledger/")
    )
    head, writers = _head(server), _writer_rows(db)
    r = httpx.post(f"{server.base}/records", json=own, headers=AUTH, timeout=30)
    assert r.status_code == 422, r.text
    assert r.json()["error"]["details"]["where"] == f"outbound[{at}].resolution.resolver_source"
    edited = copy.deepcopy(RECORD)
    edited["outbound"][2]["resolution"]["resolver_source"] = "person:Mallory"
    r = httpx.post(f"{server.base}/records?force=true", json=edited, headers=AUTH, timeout=30)
    assert r.status_code == 422, r.text
    assert r.json()["error"]["details"]["where"] == "outbound[2].resolution.resolver_source"
    assert (_head(server), _writer_rows(db)) == (head, writers)


def test_the_resolvers_own_appends_go_on_and_each_write_names_its_token(served: Any) -> None:
    server, db = served
    summary = _resolved(server)
    assert summary["appended"] > 0
    # a reference matched to a work of the catalogue ingested (not to a paper the record holds)
    [changed] = [c for c in summary["changes"] if c["observation_id"] == SWAP_OID]
    assert (changed["after"], changed["doi"]) == ("verified_exact", SWAP_DOI)
    view = httpx.get(
        f"{server.base}/paper/{PAPER}/observations/{changed['observation_id']}/resolution", timeout=30
    ).json()
    assert view["resolution"]["resolver_source"].startswith("citation-ledger/")
    assert view["writer"]["writer"] == WRITER and view["writer"]["via"] == "POST /resolve"
    assert view["evidence_check"]["names_work"] is True
    assert view["catalogue_event"]["writer"]["via"] == "POST /ingest/works"
    page = httpx.get(
        f"{server.base}/paper/{PAPER}/observations/{changed['observation_id']}/resolution",
        headers={"Accept": "text/html"},
        timeout=30,
    ).text
    assert WRITER in page and "kept beside the chain, not proven by it" in page
    report = httpx.get(f"{server.base}/paper/{PAPER}/integrity", timeout=60).json()
    assert report["ok"] is True and report["resolutions"]["ok"] is True
    assert report["resolutions"]["checked"]
    vias = {e["writer"]["via"] for e in [*report["events"], *report["catalogue_events"]]}
    assert vias == {"POST /records", "POST /events", "POST /ingest/works", "POST /resolve"}
    assert {e["writer"]["writer"] for e in report["events"]} == {WRITER}
    assert TOKEN not in json.dumps(report) and TOKEN not in json.dumps(view)
    # every write acknowledged so far has its writer, each seq in exactly one write
    rows = _writer_rows(db)
    covered = [s for row in rows for s in range(row.first_seq, row.last_seq + 1)]
    assert covered == list(range(1, _head(server) + 1))


def test_a_batch_refused_inside_its_transaction_records_no_writer(served: Any) -> None:
    server, db = served
    head, writers = _head(server), _writer_rows(db)
    orphan = _forged("local_arxiv", "00000000-0000-4000-8000-000000000000")
    r = httpx.post(f"{server.base}/events", json={"events": [orphan]}, headers=AUTH, timeout=30)
    assert r.status_code == 422 and r.json()["error"]["details"]["where"] == "events[0].data.observation_id"
    assert (_head(server), _writer_rows(db)) == (head, writers)


def test_the_integrity_report_catches_a_resolution_whose_evidence_names_another_work(served: Any) -> None:
    server, db = served
    _resolved(server)
    ledger = Ledger(db)
    try:
        works = ledger.store.read_log(type="work.observed", limit=2)
        unrelated = works[1]
        method = "citation-ledger/" + "forged/1"
        at = unrelated.observed_at
        cited = CitedWork(None, "10.9999/forged", "crossref", None, at, "A forged work", None, None, 2020)
        evidence = Evidence("identifier", unrelated.seq, 100, ["title"], [], None)
        forged = ResolutionObserved(
            observed_at=now_rfc3339(),
            data=ResolutionData(OID, "verified_exact", method, cited, None, evidence),
        )
        seq = ledger.append([forged], resolver_events=True).items[0].seq
    finally:
        ledger.close()
    report = httpx.get(f"{server.base}/paper/{PAPER}/integrity", timeout=60).json()
    assert report["ok"] is False and report["resolutions"]["ok"] is False
    [bad] = [c for c in report["resolutions"]["checked"] if not c["names_work"]]
    assert (bad["seq"], bad["observation_id"], bad["catalogue_seq"]) == (seq, OID, unrelated.seq)
    assert "10.9999/forged" in bad["mismatch"] and "does not name" in bad["mismatch"]
    assert bad["writer"] is None  # written below the API: no writer was recorded
    page = httpx.get(f"{server.base}/paper/{PAPER}/integrity", headers={"Accept": "text/html"}, timeout=60)
    assert "Not verified" in page.text and OID in page.text and "10.9999/forged" in page.text


def test_a_whole_ledger_job_records_the_token_that_asked(served: Any) -> None:
    server, db = served
    head = _head(server)
    started = httpx.post(f"{server.base}/resolve", json={"all": True}, headers=AUTH, timeout=30)
    assert started.status_code == 202, started.text
    path = f"{server.base}/resolve/jobs/{started.json()['id']}"

    def finished() -> dict[str, Any] | None:
        body: dict[str, Any] = httpx.get(path, headers=AUTH, timeout=30).json()
        return body if body["state"] != "running" else None

    done = wait_until(finished, server.log, 120)
    assert done["state"] == "done" and done["summary"]["appended"] > 0, done
    rows = [r for r in _writer_rows(db) if r.first_seq > head]
    assert rows and {(r.writer, r.via) for r in rows} == {(WRITER, "POST /resolve")}
    assert rows[-1].last_seq == _head(server)


def test_a_source_ingest_records_its_token(served: Any) -> None:
    server, db = served
    head = _head(server)
    url = f"{server.base}/ingest/retraction-watch?observed_at=2026-09-02T00:00:00Z"
    r = httpx.post(url, content=SAMPLE_RW.read_bytes(), headers=AUTH, timeout=60)
    assert r.status_code == 201, r.text
    rows = [r for r in _writer_rows(db) if r.first_seq > head]
    assert [(r.first_seq, r.last_seq, r.writer, r.via) for r in rows] == [
        (head + 1, _head(server), WRITER, "POST /ingest/retraction-watch")
    ]
