"""LEDGER_LOG_FORMAT=json in one process (backend under test): one JSON object per line for every request
and every append, with the id answered as X-Request-Id; never a token nor a body."""

from __future__ import annotations

import io
import json
import logging
import warnings
from collections.abc import Iterator
from typing import Any

import pytest

from api.app import create_app
from api.ops import logs
from api.settings import Settings
from api.state import state_of
from tests.conftest import FIXTURE_PATH, NewDb
from tests.factories import measurement_json
from tests.service.sources.test_sources_support import SOURCES_DIR, T_INGEST, sample_events

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # starlette's notice about httpx in its TestClient
    from fastapi.testclient import TestClient

TOKEN = "tok-0123456789-never-logged"
OTHER = "tok-not-configured-never-logged"


@pytest.fixture
def lines() -> Iterator[io.StringIO]:
    """What the app logs, formatted as the server formats it (api.logs.JsonFormatter)."""
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(logs.JsonFormatter())
    root = logging.getLogger()
    old = root.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    try:
        yield out
    finally:
        root.removeHandler(handler)
        root.setLevel(old)


def _parsed(out: io.StringIO) -> list[dict[str, Any]]:
    text = out.getvalue()
    assert text.endswith("\n")
    return [json.loads(line) for line in text.splitlines()]  # each line is one whole JSON object


def _client(db: str, **settings: Any) -> TestClient:
    return TestClient(create_app(Settings(db=db, tokens=(TOKEN,), log_format="json", **settings)))


def test_every_request_and_append_is_one_json_line_with_its_request_id(
    new_db: NewDb, lines: io.StringIO
) -> None:
    client = _client(new_db())
    auth = {"Authorization": f"Bearer {TOKEN}"}
    posted = client.post("/events", json={"events": [measurement_json()]}, headers=auth)
    health = client.get("/healthz")
    record = client.post("/records", content=FIXTURE_PATH.read_bytes(), headers=auth)
    assert (posted.status_code, health.status_code, record.status_code) == (201, 200, 201)
    got = _parsed(lines)
    requests = [g for g in got if g["logger"] == "ledger.http"]
    appends = [g for g in got if g["logger"] == "ledger.append"]
    ids = [r.headers["x-request-id"] for r in (posted, health, record)]
    assert [r["request_id"] for r in requests] == ids
    assert [(r["method"], r["route"], r["status"]) for r in requests] == [
        ("POST", "/events", 201),
        ("GET", "/healthz", 200),
        ("POST", "/records", 201),
    ]
    assert all(r["seconds"] >= 0 and r["client"] and r["level"] == "info" for r in requests)
    assert [(a["request_id"], a["route"], a["events"], a["appended"]) for a in appends] == [
        (ids[0], "events", 1, 1),
        (ids[2], "records", 132, 132),
    ]
    assert appends[1]["head_seq"] == 133 and appends[1]["duplicates"] == 0
    assert all(isinstance(g["pid"], int) and g["time"].endswith("Z") for g in got)


def test_an_ingest_logs_its_append_with_its_source(new_db: NewDb, lines: io.StringIO) -> None:
    client = _client(new_db())
    state_of(client.app).ledger.append(sample_events())
    r = client.post(
        "/ingest/retraction-watch",
        params={"observed_at": T_INGEST},
        content=(SOURCES_DIR / "retraction_watch.csv").read_bytes(),
        headers={"Authorization": f"Bearer {TOKEN}"},
    )
    assert r.status_code == 201
    (append,) = [g for g in _parsed(lines) if g["logger"] == "ledger.append"]
    assert (append["route"], append["source"], append["appended"]) == ("ingest", "retraction-watch", 1)
    assert append["request_id"] == r.headers["x-request-id"]


def test_no_token_and_no_body_is_ever_logged(new_db: NewDb, lines: io.StringIO) -> None:
    """Right and wrong tokens, in the header and in the body (an event's value), on writes and refusals."""
    client = _client(new_db())
    body = {"events": [measurement_json(query_url=f"https://example.org/?t={TOKEN}&o={OTHER}")]}
    for token in (TOKEN, OTHER, f"{TOKEN} {OTHER}"):
        client.post("/events", json=body, headers={"Authorization": f"Bearer {token}"})
        client.post(
            "/records", content=json.dumps({"token": TOKEN}), headers={"Authorization": f"Bearer {token}"}
        )
        client.get("/metrics", headers={"Authorization": f"Bearer {token}", "X-Request-Id": "id-1"})
    client.post("/events", content=b"{" + TOKEN.encode(), headers={"Authorization": f"Bearer {TOKEN}"})
    text = lines.getvalue()
    assert text.count("\n") >= 10
    _parsed(lines)
    for secret in (TOKEN, OTHER, "Bearer", "example.org"):
        assert secret not in text


@pytest.mark.parametrize(
    ("sent", "kept"),
    [
        ("3f2a9c1e-77b0-4c4e-9a55-0c5b1f5f8f0e", True),
        ("trace.1:span-2_x", True),
        ("x" * 128, True),
        ("x" * 129, False),
        ("has space", False),
        ('quote"d', False),
        ("", False),
    ],
)
def test_a_clients_request_id_is_kept_only_when_it_is_a_safe_token(
    new_db: NewDb, sent: str, kept: bool
) -> None:
    r = _client(new_db()).get("/healthz", headers={"X-Request-Id": sent})
    assert (r.headers["x-request-id"] == sent) is kept
    if not kept:
        assert len(r.headers["x-request-id"]) == 16


def test_the_formatter_escapes_newlines_and_keeps_exceptions_on_one_line() -> None:
    try:
        raise ValueError("line one\nline two")
    except ValueError:
        record = logging.getLogger("t").makeRecord("t", logging.ERROR, __file__, 1, "bad\n%s", ("x",), None)
        import sys

        record.exc_info = sys.exc_info()
    line = logs.JsonFormatter().format(record)
    assert "\n" not in line
    parsed = json.loads(line)
    assert parsed["message"] == "bad\nx" and "ValueError: line one\nline two" in parsed["exception"]
    assert parsed["level"] == "error" and "request_id" not in parsed


def test_text_logs_leave_requests_to_uvicorn(new_db: NewDb, lines: io.StringIO) -> None:
    client = TestClient(create_app(Settings(db=new_db(), tokens=(TOKEN,))))
    r = client.post(
        "/events", json={"events": [measurement_json()]}, headers={"Authorization": f"Bearer {TOKEN}"}
    )
    assert r.status_code == 201 and r.headers["x-request-id"]  # metrics on: the id is answered anyway
    assert "ledger.http" not in lines.getvalue() and "ledger.append" not in lines.getvalue()
