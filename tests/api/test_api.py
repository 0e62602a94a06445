"""The HTTP API through the ASGI app: every route, every error, and nothing written on refusal."""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
import threading
import warnings
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlencode

import pytest
from blake3 import blake3

from api.app import create_app
from api.docs import EVENT_EXAMPLES, ExampleEvent
from api.settings import Settings
from api.state import state_of
from ledger.model.codec import canonical, digest
from ledger.model.facts import Head
from ledger.model.instants import SYSTEM_CLOCK, format_as_of
from ledger.storage.backend import side_path
from service.ledger import Ledger
from tests import raw
from tests.conftest import NewDb

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # starlette's notice about httpx in its TestClient
    from fastapi.testclient import TestClient

TOKEN = "s3cret-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
PAPER = "2509.02480"
AS_OF = "2026-08-08T08:47:00Z"
TITLE = "MLP-Offload: Multi-Level, Multi-Path Offloading for LLM Pre-training to Break the GPU Memory Wall"
GENESIS = "0" * 64


# -- fixtures ------------------------------------------------------------------------------


@pytest.fixture
def make_client(new_db: NewDb) -> Callable[..., TestClient]:
    """A TestClient over a fresh ledger on the backend under test; keyword arguments override Settings."""

    def make(**overrides: Any) -> TestClient:
        options: dict[str, Any] = {"db": new_db(), "tokens": (TOKEN,)}
        options.update(overrides)
        return TestClient(create_app(Settings(**options)))

    return make


@pytest.fixture
def client(make_client: Callable[..., TestClient]) -> TestClient:
    """An empty ledger that accepts TOKEN."""
    return make_client()


@pytest.fixture
def loaded(client: TestClient, fixture_bytes: bytes) -> TestClient:
    """The same, holding the real record's events."""
    ledger_of(client).import_bytes(fixture_bytes)
    return client


def ledger_of(client: TestClient) -> Ledger:
    ledger: Ledger = state_of(client.app).ledger
    return ledger


def head_of(client: TestClient) -> Head:
    return ledger_of(client).head()


def assert_error(response: Any, status: int, code: str) -> dict[str, Any]:
    """The one error shape, with the expected status and code; returns the error object."""
    assert response.status_code == status, response.text
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}
    assert body["error"]["code"] == code
    assert body["error"]["message"]
    error: dict[str, Any] = body["error"]
    return error


def assert_head_header(response: Any, head: Head) -> None:
    assert response.headers["Ledger-Head"] == f"{head.seq} {head.hash}"


@pytest.fixture
def unchanged(client: TestClient) -> Iterator[None]:
    """Asserts, after the test, that the ledger head did not move (nothing was written)."""
    before = head_of(client)
    yield
    assert head_of(client) == before


def measurement(observed_at: str = "2026-08-09T10:00:00Z", value: int = 4) -> ExampleEvent:
    """A measurement.observed event for the fixture paper."""
    event = copy.deepcopy(EVENT_EXAMPLES["measurement.observed"])
    event["observed_at"] = observed_at
    event["data"]["value"] = value
    return event


# -- record reads --------------------------------------------------------------------------


def test_record_json_is_the_fixture_bytes_with_the_head(loaded: TestClient, fixture_record):
    r = loaded.get(f"/paper/{PAPER}/citation-record.json", params={"as_of": AS_OF})
    assert r.status_code == 200
    assert r.headers["content-type"] == "application/json"
    assert r.content == canonical(fixture_record)
    assert_head_header(r, head_of(loaded))


def test_record_json_defaults_to_now_and_honours_known_at(loaded: TestClient):
    r = loaded.get(f"/paper/{PAPER}/citation-record.json")
    assert r.status_code == 200 and r.json()["as_of"] > AS_OF
    # Nothing was recorded by 2026-01-01: as known then, the paper has no snapshot.
    r = loaded.get(f"/paper/{PAPER}/citation-record.json", params={"as_of": AS_OF, "known_at": "2026-01-01"})
    assert assert_error(r, 404, "not_found")
    # as known now (a later instant the ledger cannot know: test_future_instants.py)
    now = format_as_of(SYSTEM_CLOCK.now_us())
    r = loaded.get(f"/paper/{PAPER}/citation-record.json", params={"as_of": AS_OF, "known_at": now})
    assert r.status_code == 200 and r.json()["as_of"] == AS_OF


def test_record_404_says_when_the_paper_was_first_observed(loaded: TestClient):
    r = loaded.get(f"/paper/{PAPER}/citation-record.json", params={"as_of": "2026-08-06"})
    error = assert_error(r, 404, "not_found")
    assert "first observed at 2026-08-07T16:39:03.985890Z" in error["message"]
    assert error["details"]["first_observed_at"] == "2026-08-07T16:39:03.985890Z"
    r = loaded.get("/paper/2101.00001/citation-record.json")
    assert "never been observed" in assert_error(r, 404, "not_found")["message"]


@pytest.mark.parametrize("bad", ["2509.024", "2509.02480v0", "arxiv:2509.024", "hep-th/99", "x"])
def test_bad_ids_are_422(loaded: TestClient, bad: str):
    for path in (
        f"/paper/{bad}/citation-record.json",
        f"/paper/{bad}/integrity",
    ):
        error = assert_error(loaded.get(path), 422, "invalid")
        assert error["details"]["where"] == "arxiv_id"
    r = loaded.get(f"/paper/{bad}/citation-record")
    assert r.status_code == 422 and "text/html" in r.headers["content-type"]
    assert "bad arXiv id" in r.text


@pytest.mark.parametrize("param", ["as_of", "known_at"])
@pytest.mark.parametrize("bad", ["yesterday", "2026-08-08T08:47:00", "2026-13-01", "2026-08-08T25:00:00Z"])
def test_bad_instants_are_422(loaded: TestClient, param: str, bad: str):
    r = loaded.get(f"/paper/{PAPER}/citation-record.json", params={param: bad})
    assert assert_error(r, 422, "invalid")["details"]["where"] == param
    r = loaded.get(f"/paper/{PAPER}/integrity", params={param: bad})
    assert_error(r, 422, "invalid")


def test_old_style_ids_with_a_slash(client: TestClient):
    paper = copy.deepcopy(EVENT_EXAMPLES["paper.observed"])
    paper["data"]["arxiv_id"] = "hep-th/9901001"
    paper["data"]["title"] = "An old-style paper"
    assert client.post("/events", json={"events": [paper]}, headers=AUTH).status_code == 201
    r = client.get("/paper/hep-th/9901001/citation-record.json")
    assert r.status_code == 200 and r.json()["paper"]["arxiv_id"] == "hep-th/9901001"
    assert r.json()["links"]["html"] == "/paper/hep-th/9901001/citation-record"
    assert client.get("/paper/hep-th/9901001/citation-record").status_code == 200
    assert client.get("/paper/hep-th/9901001/integrity").json()["ok"] is True
    assert "An old-style paper" in client.get("/paper/hep-th/9901001").text
    assert_error(client.get("/paper/hep-th/9901002/citation-record.json"), 404, "not_found")


def test_record_html_page(loaded: TestClient, fixture_record):
    r = loaded.get(f"/paper/{PAPER}/citation-record", params={"as_of": AS_OF})
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert_head_header(r, head_of(loaded))
    assert f"<h1>{TITLE}</h1>" in r.text
    assert fixture_record["thesis"] in r.text
    assert head_of(loaded).hash in r.text
    # the form submits as_of back to the same route
    assert f'action="/paper/{PAPER}/citation-record"' in r.text and 'name="as_of"' in r.text


def test_record_html_errors_are_pages(loaded: TestClient):
    r = loaded.get(f"/paper/{PAPER}/citation-record", params={"as_of": "2026-08-01"})
    assert r.status_code == 404 and r.headers["content-type"].startswith("text/html")
    assert "404 Not Found" in r.text and "first observed at" in r.text
    assert f'href="/paper/{PAPER}/citation-record?as_of=2026-08-07T16%3A39%3A03.985890Z"' in r.text
    r = loaded.get(f"/paper/{PAPER}/citation-record", params={"as_of": "soon"})
    assert r.status_code == 422 and "422 Unprocessable" in r.text


def test_paper_page_html_and_json(loaded: TestClient):
    r = loaded.get(f"/paper/{PAPER}")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/html")
    assert TITLE in r.text and "2026-08-07T16:39:03.985890Z" in r.text
    assert f"/paper/{PAPER}/citation-record?as_of=2026-08-07T16%3A39%3A03.985890Z" in r.text
    r = loaded.get(f"/paper/{PAPER}", headers={"Accept": "application/json"})
    body = r.json()
    assert body["arxiv_id"] == PAPER and len(body["snapshots"]) == 1
    assert body["snapshots"][0]["observed_at"] == "2026-08-07T16:39:03.985890Z"
    assert body["links"]["json"] == f"/paper/{PAPER}/citation-record.json"
    assert_head_header(r, head_of(loaded))
    bundle = loaded.get(body["links"]["bundle"])  # routed before /paper/{id:path} takes it
    assert bundle.status_code == 200 and bundle.json()["schema"] == "citation-ledger.evidence-bundle.v1"


def test_paper_page_errors(loaded: TestClient):
    r = loaded.get("/paper/2101.00001")
    assert r.status_code == 404 and "never been observed" in r.text
    json_accept = {"Accept": "application/json"}
    assert_error(loaded.get("/paper/2101.00001", headers=json_accept), 404, "not_found")
    assert_error(loaded.get("/paper/nope", headers=json_accept), 422, "invalid")


# -- integrity -----------------------------------------------------------------------------


def test_integrity_report_says_what_was_verified(loaded: TestClient, fixture_record):
    r = loaded.get(f"/paper/{PAPER}/integrity", params={"as_of": AS_OF})
    assert r.status_code == 200
    head = head_of(loaded)
    assert_head_header(r, head)
    report = r.json()
    assert report["ok"] is True and report["as_of"] == AS_OF
    chain = report["chain"]
    assert chain["ok"] is True and chain["first_bad_seq"] is None
    assert chain["events_checked"] == head.seq == 132
    assert chain["head"] == {"seq": head.seq, "hash": head.hash}
    events = report["events"]
    assert [e["seq"] for e in events] == sorted(e["seq"] for e in events)
    assert len(events) == report["record"]["events_used"] == 132
    assert {"seq", "type", "observed_at", "hash"} <= set(events[0])
    assert all(e["hash_ok"] for e in events)
    recomputed = report["recomputed"]
    assert recomputed["context_digest"] == {
        "ledger": fixture_record["context_digest"],
        "recomputed": fixture_record["context_digest"],
        "match": True,
    }
    assert recomputed["observations_checked"] == recomputed["observations_matching"] == 56
    first = fixture_record["outbound"][0]
    assert recomputed["observations"][0]["observation_id"] == first["observation_id"]
    assert recomputed["observations"][0]["recomputed"] == first["observation_digest"]
    assert recomputed["record_identical"] is True


def test_integrity_of_a_small_record_lists_only_its_events(client: TestClient):
    events = [EVENT_EXAMPLES["paper.observed"], measurement()]
    client.post("/events", json={"events": events}, headers=AUTH)
    report = client.get(f"/paper/{PAPER}/integrity").json()
    assert [(e["seq"], e["type"]) for e in report["events"]] == [
        (1, "paper.observed"),
        (2, "measurement.observed"),
    ]
    assert report["ok"] is True


def test_integrity_reports_tampered_stored_data(loaded: TestClient):
    db = ledger_of(loaded).url
    # "MLP" -> "LLP" in the stored data of seq 1, as someone with write access to the database would
    raw.edit(db, "UPDATE events SET data = replace(data, 'MLP-Offload', 'LLP-Offload') WHERE seq = 1")
    assert "LLP-Offload" in raw.one(db, "SELECT data FROM events WHERE seq = 1")
    client = TestClient(create_app(Settings(db=db)))
    report = client.get(f"/paper/{PAPER}/integrity", params={"as_of": AS_OF}).json()
    assert report["ok"] is False
    assert report["chain"]["ok"] is False and report["chain"]["first_bad_seq"] == 1
    assert report["events"][0]["seq"] == 1 and report["events"][0]["hash_ok"] is False


def test_integrity_404(loaded: TestClient):
    assert_error(loaded.get(f"/paper/{PAPER}/integrity?as_of=2026-08-01"), 404, "not_found")


# -- POST /verify --------------------------------------------------------------------------


def test_verify_a_matching_record(loaded: TestClient, fixture_bytes: bytes):
    r = loaded.post("/verify", content=fixture_bytes)
    assert r.status_code == 200
    assert_head_header(r, head_of(loaded))
    answer = r.json()
    assert answer["ok"] is True
    assert answer["digests"]["ok"] is True and answer["digests"]["observations_checked"] == 56
    assert answer["ledger"]["found"] is True and answer["ledger"]["matches"] is True
    assert answer["ledger"]["differences"] == []


def test_verify_an_altered_record(loaded: TestClient, fixture_record):
    altered = copy.deepcopy(fixture_record)
    altered["outbound"][3]["resolution"]["status"] = "verified_exact"
    answer = loaded.post("/verify", json=altered).json()
    assert answer["ok"] is False
    digests = answer["digests"]
    assert digests["ok"] is False and digests["context_digest"]["match"] is False
    assert [m["path"] for m in digests["observation_mismatches"]] == ["outbound[3].observation_digest"]
    assert answer["ledger"]["differences"] == ["outbound[3].resolution.status"]


def test_verify_a_consistent_record_that_differs_from_the_ledger(loaded: TestClient, fixture_record):
    other = copy.deepcopy(fixture_record)
    other["paper"]["title"] = "Another title"
    other["context_digest"] = digest({k: v for k, v in other.items() if k not in ("as_of", "context_digest")})
    answer = loaded.post("/verify", json=other).json()
    assert answer["digests"]["ok"] is True
    ledger = answer["ledger"]
    assert ledger["matches"] is False and answer["ok"] is False
    assert ledger["differences"] == ["context_digest", "paper.title"]
    assert ledger["context_digest"] == fixture_record["context_digest"]


def test_verify_a_record_of_a_paper_not_in_the_ledger(client: TestClient, fixture_bytes: bytes):
    r = client.post("/verify", content=fixture_bytes)
    answer = r.json()
    assert answer["digests"]["ok"] is True
    assert answer["ledger"]["found"] is False and "never been observed" in answer["ledger"]["message"]
    assert_head_header(r, head_of(client))


def test_verify_refuses_what_is_not_a_record(client: TestClient, fixture_record):
    assert_error(client.post("/verify", content=b"{not json"), 422, "invalid")
    assert_error(client.post("/verify", json={"events": []}), 422, "invalid")
    broken = copy.deepcopy(fixture_record)
    broken["outbound"][2]["citation"]["reference_index"] = "two"
    error = assert_error(client.post("/verify", json=broken), 422, "invalid")
    assert error["message"].startswith("outbound[2].citation.reference_index: Expected `int`")


# -- evidence ------------------------------------------------------------------------------


def _recompute(envelope: dict[str, Any]) -> str:
    """blake3(prev_hash || canonical body), with nothing but the standard library and blake3."""
    body = {k: v for k, v in envelope.items() if k not in ("prev_hash", "hash")}
    raw = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    return blake3(bytes.fromhex(envelope["prev_hash"]) + raw).hexdigest()


def test_evidence_pages_re_verify_with_no_server_code(loaded: TestClient):
    head = head_of(loaded)
    events, url, pages = [], "/evidence", 0
    while url:
        r = loaded.get(url)
        assert r.status_code == 200
        page = r.json()
        assert page["head"] == {"seq": head.seq, "hash": head.hash}
        events += page["events"]
        url = page["next"]
        pages += 1
    assert pages == 2 and [e["seq"] for e in events] == list(range(1, 133))
    prev = GENESIS
    for e in events:
        assert e["prev_hash"] == prev and _recompute(e) == e["hash"]
        prev = e["hash"]
    assert prev == head.hash


def test_evidence_limits_and_cursor(loaded: TestClient):
    first = loaded.get("/evidence").json()
    assert len(first["events"]) == 100 and first["next_after"] == 100
    assert first["next"] == "/evidence?after=100&limit=100"
    rest = loaded.get("/evidence", params={"after": 100}).json()
    assert len(rest["events"]) == 32 and rest["next_after"] is None and rest["next"] is None
    assert len(loaded.get("/evidence", params={"limit": 1000}).json()["events"]) == 132
    page = loaded.get("/evidence", params={"after": 10, "limit": 5}).json()
    assert [e["seq"] for e in page["events"]] == [11, 12, 13, 14, 15] and page["next_after"] == 15
    for bad in ({"limit": 1001}, {"limit": 0}, {"after": -1}, {"after": "x"}, {"type": "nope"}):
        assert_error(loaded.get("/evidence", params=bad), 422, "invalid")


def test_evidence_filters(loaded: TestClient):
    crossref = loaded.get("/evidence", params={"stream": "source:crossref"}).json()["events"]
    assert [(e["seq"], e["type"]) for e in crossref] == [(132, "standing.checked")]
    checks = loaded.get("/evidence", params={"type": "standing.checked", "limit": 1}).json()
    assert [e["seq"] for e in checks["events"]] == [131]
    assert checks["next"] == "/evidence?after=131&limit=1&type=standing.checked"


# -- SSE -----------------------------------------------------------------------------------


def _sse(
    app: Any,
    query: dict[str, Any],
    until: Callable[[bytes], bool],
    *,
    headers: dict[str, str] | None = None,
    during: Callable[[], None] | None = None,
) -> bytes:
    """Drive /evidence/stream at the ASGI level until `until(body)`, then disconnect the client.

    TestClient buffers whole responses, so an endless stream is read with raw ASGI messages;
    `during` runs in a thread once the stream has started (e.g. an append from "elsewhere").
    """
    raw_headers = [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()]
    scope = {
        "type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
        "method": "GET", "scheme": "http", "path": "/evidence/stream",
        "raw_path": b"/evidence/stream", "query_string": urlencode(query).encode(),
        "headers": raw_headers, "client": ("127.0.0.1", 1), "server": ("test", 80), "root_path": "",
    }  # fmt: skip
    body = bytearray()

    async def main() -> None:
        gone = asyncio.Event()
        requested = False

        async def receive() -> dict[str, Any]:
            nonlocal requested
            if not requested:
                requested = True
                return {"type": "http.request", "body": b"", "more_body": False}
            await gone.wait()
            return {"type": "http.disconnect"}

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                assert message["status"] == 200
                if during is not None:
                    threading.Thread(target=during).start()
            elif message["type"] == "http.response.body":
                body.extend(message.get("body", b""))
                if until(bytes(body)):
                    gone.set()

        # The app call returns only if the stream stops once the client is gone.
        await asyncio.wait_for(app(scope, receive, send), timeout=10)

    asyncio.run(main())
    return bytes(body)


def _ids(body: bytes) -> list[int]:
    return [int(line[4:]) for line in body.decode().splitlines() if line.startswith("id: ")]


def test_sse_catches_up_then_streams_live(make_client: Callable[..., TestClient], fixture_bytes):
    client = make_client(sse_poll=0.05)
    ledger = ledger_of(client)
    ledger.import_bytes(fixture_bytes)

    def append() -> None:
        ledger.import_bytes(canonical({"events": [measurement()]}))

    body = _sse(client.app, {"after": 130}, lambda b: 133 in _ids(b), during=append)
    assert _ids(body) == [131, 132, 133]
    text = body.decode()
    assert "event: standing.checked\n" in text and "event: measurement.observed\n" in text
    message = text.split("id: 133\n", 1)[1].split("\n\n", 1)[0]
    envelope = json.loads(message.split("data: ", 1)[1])
    assert envelope["seq"] == 133 and envelope["hash"] == ledger.head().hash
    assert envelope["data"]["source"] == "semantic_scholar"


def test_sse_resumes_from_last_event_id(loaded: TestClient):
    body = _sse(loaded.app, {"after": 0}, lambda b: 132 in _ids(b), headers={"Last-Event-ID": "130"})
    assert _ids(body) == [131, 132]
    body = _sse(loaded.app, {"type": "standing.checked"}, lambda b: 132 in _ids(b))
    assert _ids(body) == [131, 132]


def test_sse_heartbeat_while_idle(make_client: Callable[..., TestClient]):
    client = make_client(sse_poll=0.02, sse_heartbeat=0.05)
    body = _sse(client.app, {"after": 0}, lambda b: b": heartbeat\n\n" in b)
    assert _ids(body) == []


def test_sse_bad_parameters(loaded: TestClient):
    assert_error(loaded.get("/evidence/stream", params={"after": -1}), 422, "invalid")
    r = loaded.get("/evidence/stream", headers={"Last-Event-ID": "abc"})
    assert assert_error(r, 422, "invalid")["details"]["where"] == "Last-Event-ID"


# -- writes --------------------------------------------------------------------------------


def test_post_events_appends_then_reports_duplicates(client: TestClient):
    batch = {"events": [EVENT_EXAMPLES["paper.observed"], measurement()]}
    r = client.post("/events", json=batch, headers=AUTH)
    assert r.status_code == 201
    answer = r.json()
    head = head_of(client)
    assert_head_header(r, head)
    assert answer["appended"] == 2 and answer["duplicates"] == 0
    assert answer["head"] == {"seq": head.seq, "hash": head.hash}
    assert [(e["index"], e["seq"], e["duplicate"]) for e in answer["events"]] == [
        (0, 1, False),
        (1, 2, False),
    ]
    assert answer["events"][1]["hash"] == head.hash
    again = client.post("/events", json=batch, headers=AUTH)
    assert again.status_code == 200
    assert [(e["seq"], e["event_id"], e["hash"]) for e in again.json()["events"]] == [
        (e["seq"], e["event_id"], e["hash"]) for e in answer["events"]
    ]
    assert all(e["duplicate"] for e in again.json()["events"])
    assert head_of(client) == head


def test_every_openapi_example_is_accepted(client: TestClient):
    for event in EVENT_EXAMPLES.values():  # in order: the resolution follows its citation
        r = client.post("/events", json={"events": [event]}, headers=AUTH)
        assert r.status_code == 201, r.text
    assert head_of(client).seq == len(EVENT_EXAMPLES) == 7  # one event per type


@pytest.mark.usefixtures("unchanged")
def test_missing_token_is_401(client: TestClient):
    r = client.post("/events", json={"events": [measurement()]})
    assert_error(r, 401, "unauthorized")
    assert r.headers["WWW-Authenticate"].startswith("Bearer")
    r = client.post("/events", json={"events": [measurement()]}, headers={"Authorization": "Basic x"})
    assert_error(r, 401, "unauthorized")


@pytest.mark.usefixtures("unchanged")
def test_wrong_token_is_401(client: TestClient):
    r = client.post("/records", json={}, headers={"Authorization": "Bearer wrong"})
    assert_error(r, 401, "unauthorized")
    assert 'error="invalid_token"' in r.headers["WWW-Authenticate"]


def test_no_token_configured_is_403(make_client: Callable[..., TestClient]):
    client = make_client(tokens=())
    for path in ("/events", "/records"):
        r = client.post(path, json={"events": [measurement()]}, headers=AUTH)
        assert_error(r, 403, "writes_disabled")
    assert head_of(client).seq == 0
    assert client.get("/healthz").json()["writes_enabled"] is False


def test_read_only_is_403_even_with_a_valid_token(make_client: Callable[..., TestClient]):
    client = make_client(read_only=True)
    r = client.post("/events", json={"events": [measurement()]}, headers=AUTH)
    assert "read-only" in assert_error(r, 403, "writes_disabled")["message"]
    assert head_of(client).seq == 0


def test_hashed_token_file_next_to_the_database(make_client: Callable[..., TestClient], tmp_path):
    client = make_client(tokens=())
    # next to a SQLite file; in $LEDGER_STATE_DIR (new_db: tmp_path) for a PostgreSQL URL
    token_file = side_path(ledger_of(client).url, ".tokens")
    assert token_file.parent == tmp_path and token_file.name.endswith(".tokens")
    digest_hex = hashlib.sha256(b"from-the-file").hexdigest()
    token_file.write_text(f"# operator tokens\nplaintext-is-ignored\n{digest_hex}\n")
    ok = client.post(
        "/events", json={"events": [EVENT_EXAMPLES["paper.observed"]]},
        headers={"Authorization": "Bearer from-the-file"},
    )  # fmt: skip
    assert ok.status_code == 201
    r = client.post(
        "/events", json={"events": [measurement()]}, headers={"Authorization": "Bearer plaintext-is-ignored"}
    )
    assert_error(r, 401, "unauthorized")


def test_body_over_the_limit_is_413_before_anything_else(make_client: Callable[..., TestClient]):
    client = make_client(max_body=1000)
    big = canonical({"events": [measurement(value=n) for n in range(20)]})
    assert len(big) > 1000
    r = client.post("/events", content=big, headers=AUTH)
    assert assert_error(r, 413, "payload_too_large")["details"]["limit"] == 1000
    # invalid JSON above the limit: refused for its size, never parsed
    assert_error(client.post("/events", content=b"{" * 2000, headers=AUTH), 413, "payload_too_large")
    # a chunked body has no Content-Length: counted while it streams
    chunks = iter([big[:600], big[600:]])
    r = client.post("/records", content=chunks, headers=AUTH)
    assert_error(r, 413, "payload_too_large")
    # authentication comes before the body is looked at
    assert_error(client.post("/events", content=big), 401, "unauthorized")
    assert head_of(client).seq == 0


@pytest.mark.usefixtures("unchanged")
def test_invalid_event_is_422_naming_index_and_field(client: TestClient):
    bad = copy.deepcopy(EVENT_EXAMPLES["paper.observed"])
    bad["data"]["arxiv_id"] = "2509.248"
    r = client.post("/events", json={"events": [measurement(), bad]}, headers=AUTH)
    error = assert_error(r, 422, "invalid")
    assert error["message"].startswith("events[1].data.arxiv_id:")
    missing = copy.deepcopy(EVENT_EXAMPLES["paper.observed"])
    del missing["data"]["title"]
    r = client.post("/events", json={"events": [missing]}, headers=AUTH)
    assert assert_error(r, 422, "invalid")["details"]["where"] == "events[0].data.title"
    r = client.post("/events", content=b'{"events": [{"type": "paper.observed", "x": 1.5}]}', headers=AUTH)
    message = assert_error(r, 422, "invalid")["message"]
    assert "floats" in message and message.startswith("events[")
    assert_error(client.post("/events", content=b"not json", headers=AUTH), 422, "invalid")
    assert_error(client.post("/events", json=[], headers=AUTH), 422, "invalid")


def test_event_id_reuse_is_409(client: TestClient):
    event = {**measurement(), "event_id": "0b0c7c0e-8f62-4f7e-9a53-0d3c2f4b7a11"}
    assert client.post("/events", json={"events": [event]}, headers=AUTH).status_code == 201
    before = head_of(client)
    changed = {**measurement(value=5), "event_id": event["event_id"]}
    r = client.post("/events", json={"events": [changed]}, headers=AUTH)
    error = assert_error(r, 409, "conflict")
    assert error["details"]["seq"] == 1 and "events[0].event_id" in error["message"]
    assert head_of(client) == before


def test_expected_versions_conflict_is_409(loaded: TestClient):
    before = head_of(loaded)
    batch = {"events": [measurement()], "expected_versions": {f"paper:{PAPER}": 5}}
    error = assert_error(loaded.post("/events", json=batch, headers=AUTH), 409, "conflict")
    assert error["details"]["expected"] == 5 and error["details"]["current"] > 5
    assert head_of(loaded) == before
    batch["expected_versions"] = {f"paper:{PAPER}": error["details"]["current"]}
    assert loaded.post("/events", json=batch, headers=AUTH).status_code == 201


def test_post_records(client: TestClient, fixture_bytes: bytes, fixture_record):
    r = client.post("/records", content=fixture_bytes, headers=AUTH)
    assert r.status_code == 201 and r.json()["appended"] == 132
    assert_head_header(r, head_of(client))
    r = client.post("/records", content=fixture_bytes, headers=AUTH)
    assert r.status_code == 200 and r.json()["duplicates"] == 132
    got = client.get(f"/paper/{PAPER}/citation-record.json", params={"as_of": AS_OF})
    assert got.content == canonical(fixture_record)


def test_post_records_refuses_an_altered_record_unless_forced(client: TestClient, fixture_record):
    altered = copy.deepcopy(fixture_record)
    altered["paper"]["title"] = "Altered"
    error = assert_error(client.post("/records", json=altered, headers=AUTH), 422, "invalid")
    assert error["details"]["where"] == "context_digest"
    assert_error(client.post("/records", json={"events": []}, headers=AUTH), 422, "invalid")
    assert head_of(client).seq == 0
    r = client.post("/records", params={"force": "true"}, json=altered, headers=AUTH)
    assert r.status_code == 201


def test_post_records_refuses_an_edited_paper_id_naming_the_field(client: TestClient, fixture_record):
    edited = copy.deepcopy(fixture_record)
    edited["paper"]["arxiv_id"] = "2509.99999"
    for params in ({}, {"force": "true"}):
        r = client.post("/records", params=params, json=edited, headers=AUTH)
        error = assert_error(r, 422, "invalid")
        assert error["details"]["where"] == "outbound[0].citation.citing_paper.arxiv_id"
        assert "2509.99999" in error["message"]
    assert head_of(client).seq == 0


# -- service routes, errors everywhere, OpenAPI --------------------------------------------


def test_healthz(loaded: TestClient):
    r = loaded.get("/healthz")
    head = head_of(loaded)
    assert r.json() == {
        "status": "ok",
        "head": {"seq": head.seq, "hash": head.hash},
        "read_only": False,
        "writes_enabled": True,
        "last_full_walk": None,  # no walk of the whole chain recorded yet (tests/service/ops/test_scrub.py)
    }
    assert_head_header(r, head)


def test_framework_errors_have_the_same_shape(client: TestClient):
    assert_error(client.get("/nope"), 404, "not_found")
    r = client.delete("/healthz")
    assert_error(r, 405, "method_not_allowed")
    assert r.headers["allow"] == "GET"
    assert_error(client.post("/records?force=maybe", json={}, headers=AUTH), 422, "invalid")


def test_index_lists_papers(loaded: TestClient):
    r = loaded.get("/")
    assert r.status_code == 200 and f'href="/paper/{PAPER}/citation-record"' in r.text


def test_openapi_documents_bodies_examples_and_errors(client: TestClient):
    schema = client.get("/openapi.json").json()
    components = schema["components"]["schemas"]
    text = json.dumps(schema)
    for ref in set(part.split('"')[0] for part in text.split("#/components/schemas/")[1:]):
        assert ref in components, ref
    events = schema["paths"]["/events"]["post"]
    examples = events["requestBody"]["content"]["application/json"]["examples"]
    types = {e["value"]["events"][0]["type"] for e in examples.values()}
    assert types == set(EVENT_EXAMPLES)
    assert set(events["responses"]) == {"200", "201", "401", "403", "408", "409", "413", "422", "429"}
    for path in ("/records", "/verify"):
        body = schema["paths"][path]["post"]["requestBody"]["content"]["application/json"]
        assert body["schema"] == {"$ref": "#/components/schemas/Record"}
    record = schema["paths"]["/paper/{arxiv_id}/citation-record.json"]["get"]["responses"]
    assert set(record) == {"200", "308", "404", "422"}
    assert record["404"]["content"]["application/json"]["schema"]["$ref"].endswith("ErrorBody")
    assert "Ledger-Head" in record["200"]["headers"]


def test_the_api_documentation_loads_only_the_servers_own_files(client: TestClient):
    import re

    page = client.get("/docs")
    assert page.status_code == 200
    assets = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert assets and all(a.startswith("/static-offline-docs/") for a in assets), assets
    assert "https://" not in page.text and "http://" not in page.text
    for asset in assets:
        assert client.get(asset).status_code == 200, asset
    assert client.get("/redoc").status_code == 404


def test_integrity_carries_an_inclusion_proof_per_event_against_a_signed_checkpoint(loaded: TestClient):
    """Proof-carrying records: every event that built the record is proven in one signed tree."""
    import base64

    from ledger.tlog.chain import envelope_body
    from ledger.tlog.checkpoint import open_checkpoint, parse_vkey
    from ledger.tlog.merkle import leaf_hash, verify_inclusion

    report = loaded.get(f"/paper/{PAPER}/integrity", params={"as_of": AS_OF}).json()
    pinned = parse_vkey(loaded.get("/checkpoint/key").text.strip())
    assert report["key"] == pinned.vkey
    signed = open_checkpoint(report["checkpoint"], pinned)
    envelopes = {e.seq: e for e in ledger_of(loaded).store.envelopes([e["seq"] for e in report["events"]])}
    assert [p["seq"] for p in report["proofs"]] == sorted(envelopes)
    for p in report["proofs"]:
        assert p["tree_size"] == signed.checkpoint.size
        path = [base64.b64decode(h) for h in p["inclusion_path"]]
        leaf = leaf_hash(envelope_body(envelopes[p["seq"]]))
        verify_inclusion(p["seq"] - 1, p["tree_size"], leaf, path, signed.checkpoint.root)
    # a proof checked against the wrong leaf fails
    first = report["proofs"][0]
    with pytest.raises(Exception, match="(?i)root|proof"):
        verify_inclusion(
            first["seq"] - 1,
            first["tree_size"],
            leaf_hash(b"forged"),
            [base64.b64decode(h) for h in first["inclusion_path"]],
            signed.checkpoint.root,
        )


def test_the_product_app_serves_the_proof_and_changes_routes(loaded: TestClient):
    """The routers of the integrity and sources work are mounted, ahead of /paper/{id:path}."""
    assert loaded.get("/checkpoint").text.splitlines()[1] == str(head_of(loaded).seq)
    assert loaded.get("/evidence/5/proof", params={"tree_size": 10}).json()["tree_size"] == 10
    changes = loaded.get(f"/paper/{PAPER}/changes", params={"from": "2026-08-07", "to": AS_OF})
    assert changes.status_code == 200 and changes.json()["arxiv_id"] == PAPER
    paths = loaded.get("/openapi.json").json()["paths"]
    wanted = {"/checkpoint", "/evidence/{seq}/proof", "/paper/{arxiv_id}/changes", "/ingest/{source}"}
    assert wanted <= set(paths)


def test_record_cache_never_serves_bytes_of_an_older_head(loaded: TestClient):
    """The GET cache is keyed on the head: an append makes the next answer a fresh projection."""
    url = f"/paper/{PAPER}/citation-record.json"
    later = {"as_of": "2026-11-02"}
    first = loaded.get(url, params=later)
    again = loaded.get(url, params=later)
    assert first.content == again.content and len(state_of(loaded.app).record_cache._items) == 1
    r = loaded.post(
        "/events", json={"events": [measurement(observed_at="2026-11-01T00:00:00Z")]}, headers=AUTH
    )
    assert r.status_code == 201
    after = loaded.get(url, params=later)
    assert after.headers["Ledger-Head"] != first.headers["Ledger-Head"]
    assert len(after.json()["external_citation_measurements"]) == 1
    assert first.json()["external_citation_measurements"] == []
    # "as of now" moves with every call, so it is never cached
    loaded.get(url)
    assert len(state_of(loaded.app).record_cache._items) == 2


def test_an_evidence_page_of_large_events_ends_early(
    client: TestClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No page nears 10 MB: past the data budget the page ends and `next` goes on from there."""
    from tests.factories import paper, ts

    ledger = ledger_of(client)
    ledger.append([paper(f"2101.{n:05d}", ts(0), title="x" * 400) for n in range(5)])
    size = len(ledger.store.read_log(limit=1)[0].data)  # the same for each
    monkeypatch.setattr("api.log.evidence.PAGE_DATA_BYTES", size * 5 // 2)
    first = client.get("/evidence", params={"limit": 1000}).json()
    assert [e["seq"] for e in first["events"]] == [1, 2] and first["next_after"] == 2
    rest = client.get(first["next"]).json()
    assert [e["seq"] for e in rest["events"]] == [3, 4] and rest["next_after"] == 4
    assert [e["seq"] for e in client.get(rest["next"]).json()["events"]] == [5]
