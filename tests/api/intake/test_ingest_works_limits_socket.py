"""POST /ingest/works over a real socket against `ledger serve` (both backends): a work whose DOI is off
the DOI syntax or too long, or whose title is 10 MB, is skipped and counted, the reason naming the field
and its LEDGER_WORK_MAX_* setting; the answer names the DOIs whose title or first author it changed."""

from __future__ import annotations

import httpx
import pytest

from tests.api_fixtures import running_server
from tests.conftest import NewDb
from tests.service.test_works_limits import HOSTILE_DOIS, TEN_MB, item, ndjson

TOKEN = "works-limits-socket-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
T = "2026-11-01T00:00:00Z"
T2 = "2026-11-02T00:00:00Z"


def _post(base: str, body: bytes, at: str = T) -> httpx.Response:
    return httpx.post(
        f"{base}/ingest/works", params={"observed_at": at}, content=body, headers=AUTH, timeout=60
    )


@pytest.mark.process
def test_hostile_works_are_skipped_by_name_and_changes_are_listed(new_db: NewDb) -> None:
    db = new_db()
    with running_server(db, env={"LEDGER_TOKENS": TOKEN}, args=["--no-samples"]) as server:
        hostile = [item(doi) for doi, _, _ in HOSTILE_DOIS] + [item("10.1000/big", title=[TEN_MB])]
        r = _post(server.base, ndjson(item("10.1000/fine"), *hostile))
        assert r.status_code == 201, r.text
        body = r.json()
        assert (body["read"], body["works"], body["appended"]) == (len(hostile) + 1, 1, 1)
        assert body["skipped"] == {
            "doi longer than LEDGER_WORK_MAX_DOI": 1,
            "doi not a DOI": len(HOSTILE_DOIS) - 1,
            "title longer than LEDGER_WORK_MAX_TITLE": 1,
        }
        assert body["examples"]["title longer than LEDGER_WORK_MAX_TITLE"] == [
            f"item {len(hostile) + 1}: title is {len(TEN_MB)} characters; at most 2000"
        ]
        assert all(
            e.startswith(("item 3: doi", "item 4: doi", "item 5: doi"))
            for e in body["examples"]["doi not a DOI"]
        )
        assert r.headers["Ledger-Head"].split()[0] == "1"

        again = _post(server.base, ndjson(item("10.1000/fine", title=["A copy's title"])), T2)
        assert again.status_code == 201, again.text
        assert again.json()["changed"] == {
            "count": 1,
            "listed": [{"doi": "10.1000/fine", "fields": ["title"]}],
        }


@pytest.mark.process
def test_the_server_reads_the_limits_from_its_environment(new_db: NewDb) -> None:
    db = new_db()
    env = {"LEDGER_TOKENS": TOKEN, "LEDGER_WORK_MAX_TITLE": "30"}
    with running_server(db, env=env, args=["--no-samples"]) as server:
        r = _post(server.base, ndjson(item("10.1/a", title=["x" * 31]), item("10.1/b", title=["x" * 30])))
        assert r.status_code == 201, r.text
        assert r.json()["skipped"] == {"title longer than LEDGER_WORK_MAX_TITLE": 1}
        assert r.json()["examples"]["title longer than LEDGER_WORK_MAX_TITLE"] == [
            "item 1: title is 31 characters; at most 30"
        ]
