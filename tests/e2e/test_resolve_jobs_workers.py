"""Resolve jobs behind `ledger serve --workers 2`: a job started through one worker is answered by both
(the jobs live in the ledger's database, not in one process), over real sockets."""

from __future__ import annotations

import httpx

from service.ledger import Ledger
from tests.api_fixtures import from_both_workers, running_server
from tests.conftest import FIXTURE_PATH, NewDb
from tests.waiting import wait_until

TOKEN = "jobs-workers-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def test_a_job_started_on_one_worker_is_answered_by_every_worker(new_db: NewDb) -> None:
    db = new_db()
    ledger = Ledger(db)
    ledger.import_bytes(FIXTURE_PATH.read_bytes())
    ledger.close()
    env = {"LEDGER_LOG_FORMAT": "json", "LEDGER_TOKENS": TOKEN}
    with running_server(db, env=env, args=["--workers", "2"]) as server:
        started = httpx.post(f"{server.base}/resolve", json={"all": True}, headers=AUTH, timeout=30)
        assert started.status_code == 202, started.text
        job = started.json()
        path = f"/resolve/jobs/{job['id']}"
        assert started.headers["location"] == path
        for answer in from_both_workers(server, path, headers=AUTH):
            assert answer.status_code == 200, answer.text
            assert answer.json()["id"] == job["id"]

        def finished() -> dict[str, object] | None:
            body = httpx.get(server.base + path, headers=AUTH, timeout=30).json()
            return body if body["state"] != "running" else None

        done = wait_until(finished, lambda: server.log())
        assert done["state"] == "done", done
        # a second whole-ledger run may start now that none runs
        again = httpx.post(f"{server.base}/resolve", json={"all": True}, headers=AUTH, timeout=30)
        assert again.status_code == 202 and again.json()["id"] != job["id"]
