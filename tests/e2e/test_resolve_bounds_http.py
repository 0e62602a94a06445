"""Resolving within bounds, over real sockets against `ledger serve` (docs/resolver.md "Bounds"): at most
LEDGER_RESOLVE_AT_ONCE resolves across every worker (429 with Retry-After past it), a request whose client
went away stops with its worker processes, each token's budget of references slows it and never refuses
it for ever, and jobs are their token's, keyed by what they do."""

from __future__ import annotations

import gzip
import json
import socket
import subprocess
import threading
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench.resolver.resolve_throughput import DATA, citations
from service.ledger import Ledger
from tests.api_fixtures import Server, ledger_command, running_server, worker_of
from tests.conftest import FIXTURE_PATH, NewDb
from tests.waiting import wait_until

pytestmark = pytest.mark.process

A, B = "bounds-token-a", "bounds-token-b"
AUTH_A = {"Authorization": f"Bearer {A}"}
AUTH_B = {"Authorization": f"Bearer {B}"}
CITING = "2509.02480"  # the real record: 47 references the resolver examines
EXAMINED = 47


def _fixture_ledger(db: str) -> None:
    ledger = Ledger(db)
    ledger.import_bytes(FIXTURE_PATH.read_bytes())
    ledger.close()


def _resolve(server: Server, body: dict[str, Any], auth: dict[str, str]) -> httpx.Response:
    return httpx.post(f"{server.base}/resolve", json=body, headers=auth, timeout=120)


def _done(server: Server, path: str, auth: dict[str, str]) -> dict[str, Any]:
    def finished() -> dict[str, Any] | None:
        body: dict[str, Any] = httpx.get(server.base + path, headers=auth, timeout=30).json()
        return body if body["state"] != "running" else None

    return wait_until(finished, lambda: f"{path} to end:\n{server.log()}", 180)


def test_past_the_resolves_at_once_every_worker_answers_429_with_retry_after(new_db: NewDb) -> None:
    """One slot, held by a resolve of 10,000 references running in one worker: a resolve through either
    worker is 429 meanwhile, a job too; once it ends, the next one runs."""
    db = new_db()
    papers = _big_ledger(db)
    env = {"LEDGER_TOKENS": f"{A},{B}", "LEDGER_LOG_FORMAT": "json", "LEDGER_RESOLVE_AT_ONCE": "1"}
    with running_server(db, env=env, args=["--workers", "2"]) as server:
        first: list[httpx.Response] = []
        running = threading.Thread(
            target=lambda: first.append(_resolve(server, {"papers": papers, "dry_run": True}, AUTH_A))
        )
        running.start()
        ledger = Ledger(db)
        try:
            wait_until(lambda: ledger.store.jobs.slots(), lambda: f"the slot taken:\n{server.log()}")
            workers: set[int] = set()
            for _ in range(200):
                refused = _resolve(server, {"papers": papers[:1]}, AUTH_B)
                assert refused.status_code == 429, refused.text
                assert int(refused.headers["Retry-After"]) >= 1
                error = refused.json()["error"]
                assert error["details"]["limit"] == "LEDGER_RESOLVE_AT_ONCE"
                assert "LEDGER_RESOLVE_AT_ONCE" in error["message"]
                workers.add(worker_of(server, refused))
                if len(workers) == 2:
                    break
            assert len(workers) == 2, server.log()
            assert _resolve(server, {"all": True}, AUTH_B).status_code == 429  # a job needs a slot too
        finally:
            running.join()
            ledger.close()
        assert first[0].status_code == 200, first[0].text
        assert _resolve(server, {"papers": papers[:1], "dry_run": True}, AUTH_B).status_code == 200


def test_a_token_over_its_budget_is_slowed_then_let_in_and_its_job_is_paced_to_the_end(
    new_db: NewDb,
) -> None:
    """47 references against a budget of 45 a minute: the second request is 429 with Retry-After, and
    let in once it has waited; a job of that token waits for the budget and ends done."""
    db = new_db()
    _fixture_ledger(db)
    env = {"LEDGER_TOKENS": A, "LEDGER_RESOLVE_PER_MINUTE": "45"}
    with running_server(db, env=env) as server:
        first = _resolve(server, {"papers": [CITING], "dry_run": True}, AUTH_A)
        assert first.status_code == 200 and first.json()["examined"] == EXAMINED
        refused = _resolve(server, {"papers": [CITING], "dry_run": True}, AUTH_A)
        assert refused.status_code == 429, refused.text
        assert refused.json()["error"]["details"]["limit"] == "LEDGER_RESOLVE_PER_MINUTE"
        wait = int(refused.headers["Retry-After"])
        assert wait >= 1

        def let_in() -> httpx.Response | None:
            answer = _resolve(server, {"papers": [CITING], "dry_run": True}, AUTH_A)
            return answer if answer.status_code == 200 else None

        # never refused for ever: once the debt is paid the same request goes through
        assert wait_until(let_in, lambda: f"the request let in again:\n{server.log()}", 120, every=wait)
        job = _resolve(server, {"all": True}, AUTH_A)
        assert job.status_code == 202, job.text
        done = _done(server, job.headers["Location"], AUTH_A)
        assert done["state"] == "done", done
        assert done["summary"]["examined"] == EXAMINED and done["summary"]["appended"] > 0


def test_jobs_are_their_tokens_and_a_dry_run_is_never_handed_to_a_real_run(new_db: NewDb) -> None:
    """A's dry-run job (made to wait for A's budget) is not B's real run: B gets a job of its own that
    appends, and neither token can see the other's job (404, as for no job)."""
    db = new_db()
    _fixture_ledger(db)
    env = {"LEDGER_TOKENS": f"{A},{B}", "LEDGER_RESOLVE_PER_MINUTE": "5"}
    with running_server(db, env=env, args=["--workers", "2"]) as server:
        assert _resolve(server, {"papers": [CITING], "dry_run": True}, AUTH_A).status_code == 200
        dry = _resolve(server, {"all": True, "dry_run": True}, AUTH_A)
        assert dry.status_code == 202 and dry.json()["dry_run"] is True
        real = _resolve(server, {"all": True}, AUTH_B)
        assert real.status_code == 202, real.text
        assert real.json()["id"] != dry.json()["id"] and real.json()["dry_run"] is False
        for path, auth in ((dry.headers["Location"], AUTH_B), (real.headers["Location"], AUTH_A)):
            hidden = httpx.get(server.base + path, headers=auth, timeout=30)
            assert hidden.status_code == 404, hidden.text
        assert httpx.get(server.base + dry.headers["Location"], headers=AUTH_A, timeout=30).status_code == 200
        done = _done(server, real.headers["Location"], AUTH_B)
        assert done["state"] == "done" and done["summary"]["dry_run"] is False
        assert done["summary"]["appended"] > 0, done


# -- a client that goes away -------------------------------------------------------------------------

PAPERS, PER_PAPER = 100, 100  # 10,000 references: ten batches decided by the resolver's workers


def _big_ledger(db: str) -> list[str]:
    """The evaluation catalogue and 10,000 of its references, 100 per citing paper; the papers."""
    run = subprocess.run(
        [*ledger_command(), "ingest", "works", str(DATA / "catalogue.ndjson.gz"),
         "--observed-at", "2026-01-01T00:00:00Z", "--db", db],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stdout + run.stderr
    with gzip.open(DATA / "references.jsonl.gz", "rt") as f:
        rows = [r for r in map(json.loads, f) if r["split"] == "test"][: PAPERS * PER_PAPER]
    events = citations(rows, per_paper=PER_PAPER)
    ledger = Ledger(db)
    for i in range(0, len(events), 1000):
        ledger.append(events[i : i + 1000])
    ledger.close()
    return [f"2601.{n:05d}" for n in range(PAPERS)]


def _descendants(pid: int) -> list[int]:
    out, todo = [], [pid]
    while todo:
        for task in Path(f"/proc/{todo.pop()}/task").glob("*/children"):
            try:
                kids = [int(k) for k in task.read_text().split()]
            except OSError:
                continue
            out.extend(kids)
            todo.extend(kids)
    return out


def _pool_workers(server: Server) -> list[int]:
    """The resolver's worker processes under the server (spawned: `spawn_main` in their command line)."""
    found = []
    for pid in _descendants(server.proc.pid):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        if b"spawn_main" in cmdline:
            found.append(pid)
    return found


def test_a_resolve_whose_client_goes_away_stops_with_its_workers(new_db: NewDb) -> None:
    """The client closes its socket while the resolver's workers decide: they end, the run stops short
    of its 10,000 references (the server says how far it went), the slot is free again, and what was
    appended before the stop verifies."""
    db = new_db()
    papers = _big_ledger(db)
    env = {"LEDGER_TOKENS": A, "LEDGER_LOG_FORMAT": "json", "LEDGER_RESOLVE_AT_ONCE": "1",
           "LEDGER_RESOLVE_PER_MINUTE": "0"}  # fmt: skip
    with running_server(db, env=env) as server:
        assert _pool_workers(server) == []
        body = json.dumps({"papers": papers}).encode()
        port = int(server.base.rsplit(":", 1)[1])
        client = socket.create_connection(("127.0.0.1", port), timeout=30)
        head = (f"POST /resolve HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {A}\r\n"
                f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n")  # fmt: skip
        client.sendall(head.encode() + body)
        working = wait_until(lambda: _pool_workers(server), lambda: f"its workers:\n{server.log()}")
        client.close()
        for pid in working:
            gone = Path(f"/proc/{pid}")
            wait_until(lambda: not gone.exists(), f"worker {pid} to end")  # noqa: B023

        def stopped() -> dict[str, Any] | None:
            for line in server.log().splitlines():
                if line.startswith("{") and "its client went away" in line:
                    return dict(json.loads(line))
            return None

        said = wait_until(stopped, lambda: f"the stop in the log:\n{server.log()}")
        examined = int(said["message"].split(" after ")[1].split()[0])
        print(f"stopped after {examined} of {PAPERS * PER_PAPER} references")
        assert examined < PAPERS * PER_PAPER, said
        # the slot was given back: the one resolve allowed at once may run again
        again = _resolve(server, {"papers": papers[:1], "dry_run": True}, AUTH_A)
        assert again.status_code == 200, again.text
    check = subprocess.run([*ledger_command(), "verify", "--db", db], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr
