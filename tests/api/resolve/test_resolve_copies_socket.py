"""Over a real socket against `ledger serve` (both backends): a works file that adds a copy of a
catalogued work under a new DOI (dated before it) and observes the original again does not take the
reference's match: `POST /resolve` answers the original, and the resolution's evidence names the copy
as the runner-up."""

from __future__ import annotations

import uuid

import httpx
import pytest

from ledger.model import events as ev
from ledger.model.codec import decode_data
from ledger.model.works import Reference
from service.ledger import Ledger
from tests.api_fixtures import running_server
from tests.conftest import NewDb
from tests.service.resolver.test_resolver_copies import COPY, OTHER, REAL, REF, work
from tests.service.test_works_limits import ndjson

TOKEN = "resolve-copies-socket-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
AT = "2026-01-01T00:00:00Z"
CITING = "2601.00001"


def _seed(db: str) -> None:
    ledger = Ledger(db)
    try:
        oid = str(uuid.uuid5(uuid.NAMESPACE_URL, "copies"))
        ledger.append(
            [
                ev.PaperObserved(observed_at=AT, data=ev.PaperData(CITING, "Citing", "cs.DL", AT, AT, 1)),
                ev.CitationObserved(
                    observed_at=AT,
                    data=ev.CitationData(oid, CITING, 0, "pdf_text", None, Reference(unstructured=REF)),
                ),
            ]
        )
    finally:
        ledger.close()


def _ingest(base: str, body: bytes, at: str) -> httpx.Response:
    r = httpx.post(f"{base}/ingest/works", params={"observed_at": at}, content=body, headers=AUTH, timeout=60)
    assert r.status_code in (200, 201), r.text
    return r


@pytest.mark.process
def test_a_copy_posted_as_a_works_file_does_not_take_the_match(new_db: NewDb) -> None:
    db = new_db()
    _seed(db)
    with running_server(db, env={"LEDGER_TOKENS": TOKEN}, args=["--no-samples"]) as server:
        _ingest(server.base, ndjson(work(REAL), OTHER), "2026-01-02T00:00:00Z")
        _ingest(server.base, ndjson(work(COPY)), "2025-06-01T00:00:00Z")
        again = _ingest(server.base, ndjson(work(REAL, type="journal-article-v2")), "2026-01-03T00:00:00Z")
        assert again.json()["changed"] == {"count": 0, "listed": []}  # neither title nor first author
        r = httpx.post(f"{server.base}/resolve", json={"papers": [CITING]}, headers=AUTH, timeout=120)
        assert r.status_code == 200, r.text
        (change,) = r.json()["changes"]
        assert (change["doi"], change["after"]) == (REAL, "verified_fuzzy")
    ledger = Ledger(db)
    try:
        (resolution,) = [e for e in ledger.store.read_log() if e.type == "resolution.observed"]
        evidence = decode_data(resolution.type, resolution.data).evidence
        assert evidence is not None and evidence.runner_up is not None and evidence.runner_up.doi == COPY
    finally:
        ledger.close()
