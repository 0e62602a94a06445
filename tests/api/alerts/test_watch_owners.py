"""Whose a watch is (api/watches.py, service/alerts.py): the token that made it alone lists, reads and
deletes it; another token gets 404 as for no watch; the CLI's and the old ones are the operator's;
a token holds at most LEDGER_MAX_WATCHES; making one is charged by LEDGER_RATE_LIMIT."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from concurrent.futures import ThreadPoolExecutor

import httpx
from click.testing import CliRunner, Result

from api.app import create_app
from api.settings import Settings
from api.state import state_of
from cli.main import main
from ledger.storage.backend import is_pg_url
from service.ledger import Ledger
from tests.api.test_api import TestClient
from tests.api_fixtures import running_server
from tests.conftest import NewDb
from tests.old_layout import build_old_ledger, version_before

A, B = "token-a", "token-b"
PAPER = "2101.00001"
SECRET_URL = "https://hooks.example/a/very-secret-path"
ROUTES = ["", "/alerts", "/deliveries", "/alerts/stream"]


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _cli(db: str, *args: str) -> Result:
    done = CliRunner().invoke(main, [*args, "--db", db])
    assert done.exit_code == 0, done.output
    return done


def _owner_of(token: str) -> str:
    return f"token sha256:{hashlib.sha256(token.encode()).hexdigest()[:16]}"


def test_a_watch_is_seen_and_removed_only_by_the_token_that_made_it(new_db: NewDb) -> None:
    db = new_db()
    Ledger(db).close()
    operators = CliRunner().invoke(main, ["watch", "add", "--paper", PAPER, "--json", "--db", db])
    assert operators.exit_code == 0, operators.output
    env = {"LEDGER_TOKENS": f"{A},{B}"}
    with running_server(db, env=env, args=["--no-samples"]) as server:
        a = httpx.Client(base_url=server.base, headers=_auth(A), timeout=30)
        b = httpx.Client(base_url=server.base, headers=_auth(B), timeout=30)
        made = a.post("/watches", json={"arxiv_id": PAPER, "callback_url": SECRET_URL})
        assert made.status_code == 201, made.text
        mine = made.json()["id"]
        assert [w["id"] for w in a.get("/watches").json()["watches"]] == [mine]
        assert b.get("/watches").json() == {"watches": [], "next": None}
        unknown = b.get("/watches/no-such-watch").json()["error"]
        for route in ROUTES:
            theirs = b.get(f"/watches/{mine}{route}")
            assert theirs.status_code == 404, (route, theirs.text)
            # the same answer as for no watch at all: its existence is not confirmed
            assert theirs.json()["error"]["code"] == unknown["code"] == "not_found"
            assert theirs.json()["error"]["message"] == unknown["message"].replace("no-such-watch", mine)
            assert SECRET_URL not in theirs.text
        removed = b.delete(f"/watches/{mine}")
        assert removed.status_code == 404 and removed.json()["error"]["code"] == "not_found"
        assert a.get(f"/watches/{mine}").json()["callback_url"] == SECRET_URL  # still A's, in force
        assert a.get(f"/watches/{mine}/alerts").status_code == 200
        assert a.get(f"/watches/{mine}/deliveries").status_code == 200
        theirs_made = b.post("/watches", json={"works": ["doi:10.1000/x"]}).json()["id"]
        listed = _cli(db, "watch", "list").stdout.splitlines()
        owners = {line.split("  ", 1)[0]: line.rsplit("owner ", 1)[1].rstrip(")") for line in listed}
        assert owners == {
            json.loads(operators.stdout)["id"]: "operator",
            mine: _owner_of(A),
            theirs_made: _owner_of(B),
        }
        assert a.delete(f"/watches/{mine}").json() == {"id": mine, "removed": True}
        a.close()
        b.close()


def test_a_token_holds_at_most_max_watches_even_asked_at_once_and_the_rest_write_nothing(
    new_db: NewDb,
) -> None:
    db = new_db()
    Ledger(db).close()
    env = {"LEDGER_TOKENS": f"{A},{B}", "LEDGER_MAX_WATCHES": "3"}
    with running_server(db, env=env, args=["--no-samples"]) as server:
        a = httpx.Client(base_url=server.base, headers=_auth(A), timeout=30)
        b = httpx.Client(base_url=server.base, headers=_auth(B), timeout=30)
        # eight at once: the count and the insert are one transaction, so exactly three get in
        with ThreadPoolExecutor(8) as pool:
            answers = list(
                pool.map(lambda i: a.post("/watches", json={"arxiv_id": f"2101.0000{i}"}), range(8))
            )
        made = [m for m in answers if m.status_code == 201]
        assert sorted(m.status_code for m in answers) == [201] * 3 + [409] * 5, [m.text for m in answers]
        over = next(m for m in answers if m.status_code == 409)
        error = over.json()["error"]
        assert error["code"] == "too_many_watches" and "LEDGER_MAX_WATCHES=3" in error["message"]
        assert error["details"] == {"limit": 3, "watches": 3, "variable": "LEDGER_MAX_WATCHES"}
        assert len(a.get("/watches").json()["watches"]) == 3
        assert len(_cli(db, "watch", "list").stdout.splitlines()) == 3  # nothing written
        assert b.post("/watches", json={"arxiv_id": "2101.00009"}).status_code == 201  # per token
        assert a.delete(f"/watches/{made[0].json()['id']}").status_code == 200
        assert a.post("/watches", json={"arxiv_id": "2101.00009"}).status_code == 201  # room again
        a.close()
        b.close()


def test_making_a_watch_is_charged_by_the_rate_limit(new_db: NewDb) -> None:
    db = new_db()
    Ledger(db).close()
    # one saved up, then one per 100 s: the second goes in on credit, the third waits
    env = {"LEDGER_TOKENS": A, "LEDGER_RATE_LIMIT": "0.01", "LEDGER_RATE_BURST": "1"}
    with running_server(db, env=env, args=["--no-samples"]) as server:
        a = httpx.Client(base_url=server.base, headers=_auth(A), timeout=30)
        answers = [a.post("/watches", json={"arxiv_id": f"2101.0000{i}"}) for i in range(1, 4)]
        assert answers[-1].status_code == 429, [x.status_code for x in answers]
        assert answers[-1].json()["error"]["code"] == "rate_limited" and answers[-1].headers["retry-after"]
        stored = _cli(db, "watch", "list").stdout.splitlines()
        assert len(stored) == sum(x.status_code == 201 for x in answers) <= 2
        a.close()


def _old_watch(db: str, watch_id: str) -> None:
    """A watch stored as the schema before owners kept it."""
    row = (watch_id, "paper", PAPER, SECRET_URL, None, "2026-01-01T00:00:00Z", 0, None)
    sql = "INSERT INTO watches (id, kind, target, callback_url, secret, created_at, created_seq, removed_at) "
    if is_pg_url(db):
        import psycopg

        with psycopg.connect(db, autocommit=True) as conn:
            conn.execute(sql + "VALUES (%s, %s, %s, %s, %s, %s, %s, %s)", row)
        return
    lite = sqlite3.connect(db)
    with lite:
        lite.execute(sql + "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", row)
    lite.close()


def _owner_step(db: str) -> int:
    return version_before(db, "watch_owners")


def test_the_migration_gives_the_watches_made_before_it_to_the_operator(new_db: NewDb) -> None:
    source = Ledger(new_db("source.db"))
    old = new_db("old.db")
    build_old_ledger(old, _owner_step(old), source)
    source.close()
    _old_watch(old, "old-watch")
    api = TestClient(create_app(Settings(db=old, tokens=(A,))))
    assert api.get("/watches", headers=_auth(A)).json()["watches"] == []
    assert api.get("/watches/old-watch", headers=_auth(A)).status_code == 404
    assert api.delete("/watches/old-watch", headers=_auth(A)).status_code == 404
    (line,) = _cli(old, "watch", "list").stdout.splitlines()
    assert line.startswith("old-watch  paper 2101.00001") and line.endswith("owner operator)")
    state_of(api.app).ledger.close()
