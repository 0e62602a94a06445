"""Security: hashed tokens compared in constant time, no SQL built from input, validated path parameters,
CORS off unless configured, read-only mode, private key and backup files."""

from __future__ import annotations

import copy
import functools
import hashlib
import hmac
import logging
import sqlite3
import warnings
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from api import auth
from api.app import create_app
from api.docs import EVENT_EXAMPLES
from api.settings import Settings
from api.state import state_of
from ledger.storage.backend import is_pg_url
from ledger.tlog.checkpoint import Checkpointer
from service.ledger import Ledger
from tests.paths import DATA

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

TOKEN = "security-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SAMPLE = DATA / "2509.02480.record.json"
PAPER = "2509.02480"


def _client(db: str, **overrides: Any) -> TestClient:
    settings = Settings(**{"db": db, "tokens": (TOKEN,), **overrides})
    return TestClient(create_app(settings))


def _ledger(client: TestClient) -> Ledger:
    ledger: Ledger = state_of(client.app).ledger
    return ledger


def _error(r: Any, status: int) -> dict[str, Any]:
    assert r.status_code == status, r.text
    body = r.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}, body
    error: dict[str, Any] = body["error"]
    return error


# -- tokens ---------------------------------------------------------------------------------------


def test_tokens_are_never_shown_and_compared_as_hashes_against_every_one(new_db, monkeypatch) -> None:
    settings = Settings(db=new_db("l.db"), tokens=("first", TOKEN, "third"))
    assert TOKEN not in repr(settings)
    calls: list[tuple[str, str]] = []
    real = hmac.compare_digest

    def counting(a: Any, b: Any) -> bool:
        calls.append((a, b))
        return real(a, b)

    monkeypatch.setattr(auth.hmac, "compare_digest", counting)
    client = TestClient(create_app(settings))
    for token in ("first", "wrong"):
        calls.clear()
        client.post("/events", json={"events": []}, headers={"Authorization": f"Bearer {token}"})
        # every configured hash is compared, even after a match: the time says nothing of which one
        assert len(calls) == 3
        # only digests are compared, never the token itself
        assert all(len(a) == len(b) == 64 and token not in (a, b) for a, b in calls)
        assert calls[0][0] == hashlib.sha256(token.encode()).hexdigest()


def test_a_token_file_others_can_write_is_warned_about(tmp_path: Path, caplog) -> None:
    path = tmp_path / "ledger.db.tokens"
    path.write_text(hashlib.sha256(b"t").hexdigest() + "\n")
    path.chmod(0o600)
    with caplog.at_level(logging.WARNING, logger="api"):
        assert auth.read_token_file(str(path))
    assert not caplog.records
    path.chmod(0o666)
    with caplog.at_level(logging.WARNING, logger="api"):
        assert auth.read_token_file(str(path))
    assert "writable by other users" in caplog.text


# -- no SQL built from input ----------------------------------------------------------------------

MARK = "zq1x'); DROP TABLE events; --\"mark"


@pytest.fixture
def recorded_sql(monkeypatch) -> list[str]:
    """Every SQL text the ledger hands its database (parameters are not part of it): each statement
    sqlite3 is given; on PostgreSQL each one a psycopg cursor executes, which binds parameters on
    the server (a ClientCursor would merge them into the text, so one is refused here)."""
    seen: list[str] = []

    class Recording(sqlite3.Connection):
        def execute(self, sql: str, *args: Any) -> sqlite3.Cursor:  # type: ignore[override]
            seen.append(sql)
            return super().execute(sql, *args)

        def executemany(self, sql: str, *args: Any) -> sqlite3.Cursor:  # type: ignore[override]
            seen.append(sql)
            return super().executemany(sql, *args)

        def executescript(self, sql: str) -> sqlite3.Cursor:  # type: ignore[override]
            seen.append(sql)
            return super().executescript(sql)

    monkeypatch.setattr(sqlite3, "connect", functools.partial(sqlite3.connect, factory=Recording))
    try:
        import psycopg
    except ImportError:  # SQLite only: nothing else to record
        return seen

    def recording(name: str) -> Any:
        real = getattr(psycopg.Cursor, name)

        def method(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
            assert not isinstance(self, psycopg.ClientCursor), "parameters merged into the SQL text"
            seen.append(query if isinstance(query, str) else repr(query))
            return real(self, query, *args, **kwargs)

        return method

    for name in ("execute", "executemany", "stream", "copy"):
        monkeypatch.setattr(psycopg.Cursor, name, recording(name))
    return seen


def test_input_reaches_the_database_only_as_bound_parameters(new_db, recorded_sql: list[str]) -> None:
    client = _client(new_db())
    _ledger(client).import_bytes(SAMPLE.read_bytes())
    paper = copy.deepcopy(EVENT_EXAMPLES["paper.observed"])
    paper["data"]["title"] = MARK
    measurement = copy.deepcopy(EVENT_EXAMPLES["measurement.observed"])
    measurement["data"].update(source=MARK, metric=MARK)
    r = client.post("/events", json={"events": [paper, measurement]}, headers=AUTH)
    assert r.status_code == 201, r.text
    q = quote(MARK, safe="")
    for url in (
        f"/paper/{PAPER}{q}/citation-record.json",
        f"/paper/{q}",
        f"/paper/{PAPER}/citation-record.json?as_of={q}",
        f"/paper/{PAPER}/integrity?known_at={q}",
        f"/paper/{PAPER}/changes?from={q}",
        f"/evidence?stream={q}",
        f"/evidence?stream=paper:{q}&type=paper.observed",
        f"/evidence?type={q}",
        f"/evidence/{q}/proof",
        f"/checkpoint/consistency?from={q}",
    ):
        assert client.get(url).status_code < 500, url
    record = SAMPLE.read_text().replace(PAPER, PAPER + MARK.replace('"', ""))
    assert client.post("/verify", content=record).status_code < 500
    assert (
        client.post(f"/ingest/{q}?observed_at=2026-01-01T00:00:00Z", content=b"x", headers=AUTH).status_code
        < 500
    )
    assert recorded_sql, "the recorder saw nothing"
    assert any(sql.lstrip().startswith("INSERT INTO events") for sql in recorded_sql), "no insert recorded"
    leaked = [sql for sql in recorded_sql if "zq1x" in sql]
    assert not leaked, leaked[:3]
    # ... and the input did reach the database, as data
    stored = _ledger(client).store.read_log(0, None, f"paper:{PAPER}", "measurement.observed")
    assert any(b"zq1x')" in e.data for e in stored)
    assert _ledger(client).verify().ok


# -- path parameters ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "/paper/..%2F..%2Fetc%2Fpasswd/citation-record.json",
        "/paper/../../etc/passwd",
        "/paper/2509.02480%00/citation-record.json",
        "/paper/" + "9" * 5000 + "/citation-record.json",
        "/paper/2509.02480v0/integrity",
        "/paper/hep-th%2F9901001%2F..%2F..%2Fx/citation-record.json",
        "/evidence/-1/proof",
        "/evidence/99999999999999999999999/proof",
        "/evidence/1e3/proof",
        "/paper/%E2%80%AE2509.02480/changes?from=2026-01-01",
    ],
)
def test_bad_path_parameters_are_refused_in_the_error_shape(new_db, path: str) -> None:
    client = _client(new_db())
    r = client.get(path, headers={"accept": "application/json"})
    assert r.status_code in (404, 422), (r.status_code, r.text[:300])
    if r.headers["content-type"].startswith("application/json"):
        _error(r, r.status_code)


def test_an_unknown_ingest_source_is_refused_after_auth(new_db) -> None:
    client = _client(new_db())
    url = "/ingest/nosuch%27%3B--?observed_at=2026-01-01T00:00:00Z"
    assert _error(client.post(url, content=b"x"), 401)["code"] == "unauthorized"
    assert _error(client.post(url, content=b"x", headers=AUTH), 422)["code"] == "invalid"
    assert _ledger(client).head().seq == 0


# -- CORS -----------------------------------------------------------------------------------------

ORIGIN = "https://reader.example"


def test_cors_is_off_unless_configured(new_db) -> None:
    client = _client(new_db())
    r = client.get("/healthz", headers={"Origin": ORIGIN})
    assert r.status_code == 200 and "access-control-allow-origin" not in r.headers
    preflight = client.options("/events", headers={"Origin": ORIGIN, "Access-Control-Request-Method": "POST"})
    assert "access-control-allow-origin" not in preflight.headers
    assert preflight.status_code >= 400


def test_cors_allows_only_the_configured_origins(new_db) -> None:
    client = _client(new_db(), cors_origins=(ORIGIN,))
    r = client.get("/healthz", headers={"Origin": ORIGIN})
    assert r.headers["access-control-allow-origin"] == ORIGIN
    assert "Ledger-Head" in r.headers["access-control-expose-headers"]
    assert "Ledger-Chain" in r.headers["access-control-expose-headers"]  # a broken chain, read by a page
    assert "access-control-allow-credentials" not in r.headers
    preflight = client.options(
        "/events",
        headers={
            "Origin": ORIGIN,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type",
        },
    )
    assert preflight.status_code == 200 and preflight.headers["access-control-allow-origin"] == ORIGIN
    other = client.get("/healthz", headers={"Origin": "https://evil.example"})
    assert "access-control-allow-origin" not in other.headers
    assert Settings.from_env({"LEDGER_CORS_ORIGINS": f"{ORIGIN}, https://b.example"}).cors_origins == (
        ORIGIN,
        "https://b.example",
    )


# -- read-only ------------------------------------------------------------------------------------


def test_read_only_refuses_every_write_route_and_still_reads(new_db) -> None:
    db = new_db()
    writer = Ledger(db)
    writer.import_bytes(SAMPLE.read_bytes())
    writer.close()
    client = _client(db, read_only=True)
    before = _ledger(client).head()
    writes = [
        ("/events", {"events": [EVENT_EXAMPLES["measurement.observed"]]}),
        ("/records?force=true", SAMPLE.read_bytes()),
        ("/ingest/retraction-watch?observed_at=2026-01-01T00:00:00Z", b"Record ID,Title\n"),
    ]
    for path, body in writes:
        kwargs: dict[str, Any] = {"json": body} if isinstance(body, dict) else {"content": body}
        assert _error(client.post(path, headers=AUTH, **kwargs), 403)["code"] == "writes_disabled", path
    assert _ledger(client).head() == before
    assert client.get(f"/paper/{PAPER}/citation-record.json?as_of=2026-08-08T08:47:00Z").status_code == 200
    assert client.post("/verify", content=SAMPLE.read_bytes()).status_code == 200  # a read, with a body
    assert client.get("/healthz").json()["read_only"] is True


# -- files ----------------------------------------------------------------------------------------


def test_the_signing_key_is_private(new_db, tmp_path: Path) -> None:
    db = new_db()
    ledger = Ledger(db)
    ledger.import_bytes(SAMPLE.read_bytes())
    Checkpointer.for_db(ledger.store).latest()
    key = ledger.store.tree.side_file(".key")
    assert key.parent == tmp_path  # next to the SQLite file; in $LEDGER_STATE_DIR for PostgreSQL
    assert key.stat().st_mode & 0o777 == 0o600
    if not is_pg_url(db):  # PostgreSQL's files are the server's
        assert (tmp_path / "ledger.db").stat().st_mode & 0o777 == 0o600
    # the checkpoint is public by design (anyone may hold it); nothing else is left around
    public = [p.name for p in tmp_path.iterdir() if p.stat().st_mode & 0o077]
    assert public == [ledger.store.tree.side_file(".checkpoint").name]
