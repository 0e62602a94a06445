"""GET /metrics in one process (backend under test), read with prometheus-client's text parser: the
counters move with appends, ingests, records, scrubs, cosignatures and webhook deliveries; the gauges
are the database's; LEDGER_METRICS=off and =token; labels never a client's text; the append path runs
no statement more with metrics on."""

from __future__ import annotations

import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from api.app import create_app
from api.ops import metrics
from api.ops.scrub import passes_of
from api.settings import Settings
from api.state import state_of
from ledger.model.instants import SYSTEM_CLOCK
from ledger.tlog.checkpoint import Checkpointer
from service.ledger import Ledger
from service.ops.operations import Operations
from tests.conftest import FIXTURE_PATH, NewDb
from tests.factories import measurement_json, outbox_entries
from tests.metrics_text import Samples, names, parse, total, value
from tests.service.proofs.test_witnessing import Witnesses
from tests.service.sources.test_sources_support import SOURCES_DIR, T_INGEST
from tests.waiting import wait_until

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # starlette's notice about httpx in its TestClient
    from fastapi.testclient import TestClient

TOKEN = "metrics-test-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
PAPER = "2509.02480"
AS_OF = {"as_of": "2026-08-08T08:47:00Z"}


def _client(db: str, **settings: Any) -> TestClient:
    app = create_app(Settings(db=db, tokens=(TOKEN,), **settings))
    return TestClient(app)


def _scrape(client: TestClient, **headers: str) -> Samples:
    r = client.get("/metrics", headers=headers)
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("text/plain")
    return parse(r.text)


def _events(n: int, start: int = 0) -> dict[str, Any]:
    return {
        "events": [
            measurement_json(at=f"2026-11-01T00:00:{(start + i) % 60:02d}Z", value=start + i)
            for i in range(n)
        ]
    }


@pytest.fixture
def client(new_db: NewDb) -> Iterator[TestClient]:
    c = _client(new_db())
    yield c
    state_of(c.app).ledger.close()


def test_appends_move_the_counters_by_type_and_route(client: TestClient) -> None:
    before = _scrape(client)
    assert client.post("/records", content=FIXTURE_PATH.read_bytes(), headers=AUTH).status_code == 201
    assert client.post("/events", json=_events(3), headers=AUTH).status_code == 201
    assert client.post("/events", json=_events(3), headers=AUTH).status_code == 200  # all duplicates
    after = _scrape(client)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert moved("ledger_events_appended_total", type="measurement.observed", route="events") == 3
    assert (
        total(after, "ledger_events_appended_total", route="records")
        - total(before, "ledger_events_appended_total", route="records")
        == 132
    )
    assert moved("ledger_events_appended_total", type="citation.observed", route="records") == 56
    assert moved("ledger_events_duplicate_total", route="events") == 3
    assert moved("ledger_append_batch_events_count", route="events") == 2
    assert moved("ledger_append_batch_events_sum", route="events") == 6
    assert moved("ledger_append_batch_events_bucket", route="records", le="200.0") == 1
    assert moved("ledger_append_seconds_count", route="records") == 1
    assert moved("ledger_commit_group_batches_count") == 3  # one group each: one client at a time
    assert moved("ledger_commit_seconds_count") == 3
    assert moved("ledger_http_requests_total", route="/events", method="POST", status="201") == 1
    assert moved("ledger_http_requests_total", route="/events", method="POST", status="200") == 1
    assert value(after, "ledger_head_seq") == 135
    assert value(after, "ledger_up") == 1
    assert value(after, "ledger_db_size_bytes") > 0
    assert value(after, "ledger_checkpoint_behind_events") == 135
    # the head's own recorded instant, seconds since the epoch
    assert abs(value(after, "ledger_head_timestamp_seconds") - time.time()) < 3600


def test_records_served_are_counted_by_format_and_cache(client: TestClient) -> None:
    client.post("/records", content=FIXTURE_PATH.read_bytes(), headers=AUTH)
    before = _scrape(client)
    for _ in range(2):
        assert client.get(f"/paper/{PAPER}/citation-record.json", params=AS_OF).status_code == 200
    assert client.get(f"/paper/{PAPER}/citation-record", params=AS_OF).status_code == 200
    assert client.get("/paper/2101.99999/citation-record.json", params=AS_OF).status_code == 404
    after = _scrape(client)
    for (fmt, cache), n in {("json", "built"): 1, ("json", "hit"): 1, ("html", "built"): 1}.items():
        counted = value(after, "ledger_records_served_total", format=fmt, cache=cache)
        assert counted - value(before, "ledger_records_served_total", format=fmt, cache=cache) == n
    seconds = value(after, "ledger_record_seconds_count", format="json")
    assert seconds - value(before, "ledger_record_seconds_count", format="json") == 2
    route = "/paper/{arxiv_id:path}/citation-record.json"
    assert value(after, "ledger_http_requests_total", route=route, method="GET", status="404") >= 1


def test_ingests_count_rows_by_source_and_outcome(client: TestClient) -> None:
    from tests.service.sources.test_sources_support import sample_events

    state_of(client.app).ledger.append(sample_events())
    rw = (SOURCES_DIR / "retraction_watch.csv").read_bytes()
    url = "/ingest/retraction-watch"
    before = _scrape(client)
    first = client.post(url, params={"observed_at": T_INGEST}, content=rw, headers=AUTH)
    assert first.status_code == 201, first.text
    assert client.post(url, params={"observed_at": T_INGEST}, content=rw, headers=AUTH).status_code == 200
    refused = client.post(url, params={"observed_at": T_INGEST}, content=b"\x00not a csv", headers=AUTH)
    assert refused.status_code == 422
    after = _scrape(client)
    summary = first.json()
    src = "retraction-watch"

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    assert summary["read"] > summary["matched"] > 0
    assert moved("ledger_ingest_rows_total", source=src, outcome="read") == 2 * summary["read"]
    assert moved("ledger_ingest_rows_total", source=src, outcome="matched") == 2 * summary["matched"]
    skipped = sum(summary["skipped"].values())
    assert moved("ledger_ingest_rows_total", source=src, outcome="skipped") == 2 * skipped
    assert moved("ledger_ingests_total", source=src, result="appended") == 1
    assert moved("ledger_ingests_total", source=src, result="duplicate") == 1
    assert moved("ledger_ingests_total", source=src, result="refused") == 1
    assert moved("ledger_events_appended_total", type="standing.checked", route="ingest") == 1
    assert moved("ledger_events_duplicate_total", route="ingest") == 1


def test_scrub_passes_move_the_counter_and_the_last_walk_gauges(new_db: NewDb) -> None:
    db = new_db()
    Ledger(db).import_bytes(FIXTURE_PATH.read_bytes())
    before = value(
        parse(_client(db).get("/metrics").text), "ledger_scrub_passes_total", kind="scrub", result="ok"
    )
    app = create_app(Settings(db=db, scrub_interval=0.05))
    with TestClient(app) as client:  # the lifespan runs: the scrubber starts
        wait_until(
            lambda: (
                value(_scrape(client), "ledger_scrub_passes_total", kind="scrub", result="ok") >= before + 2
            ),
            "two more scrub passes",
            30,
            every=0.02,
        )
        now = _scrape(client)
    last = passes_of(app).last()
    assert last is not None and last.ok
    assert value(now, "ledger_scrub_last_ok") == 1
    assert value(now, "ledger_scrub_last_events") == 132
    assert abs(value(now, "ledger_scrub_last_timestamp_seconds") - time.time()) < 600
    assert value(now, "ledger_scrub_last_duration_seconds") >= 0


def test_cosignatures_are_counted_by_witness_and_result(new_db: NewDb, tmp_path: Path) -> None:
    db = new_db()
    ledger = Ledger(db)
    ledger.import_bytes(FIXTURE_PATH.read_bytes())
    checkpointer = Checkpointer.for_db(ledger.store, "example.org/ledger")
    checkpointer.latest()
    ws = Witnesses(tmp_path, checkpointer.verifier())
    witnesses_file = tmp_path / "witnesses"
    witnesses_file.write_text("".join(f"{w.url} {w.verifier.vkey}\n" for w in ws.list))
    client = _client(db, witnesses_file=str(witnesses_file))
    cosigner = state_of(client.app).cosigner
    assert cosigner is not None and cosigner.on_answer is metrics.witness_answered
    cosigner.post = ws.post  # the in-process witnesses, as the HTTP client would reach them
    up, down = (w.url for w in ws.list)
    ws.down.add(down)
    before = _scrape(client)
    assert cosigner.cosign() is not None
    after = _scrape(client)
    for url, result in ((up, "cosigned"), (down, "unreachable")):
        n = value(after, "ledger_witness_cosignatures_total", witness=url, result=result)
        assert n - value(before, "ledger_witness_cosignatures_total", witness=url, result=result) == 1
    assert value(after, "ledger_checkpoint_size") == 132
    assert value(after, "ledger_checkpoint_behind_events") == 0
    assert value(after, "ledger_checkpoint_lag_seconds") == 0
    assert value(after, "ledger_checkpoint_age_seconds") >= 0
    cosigner.close()


def test_a_refusing_witness_counts_as_refused(new_db: NewDb, tmp_path: Path) -> None:
    ledger = Ledger(new_db())
    ledger.import_bytes(FIXTURE_PATH.read_bytes())
    checkpointer = Checkpointer.for_db(ledger.store, "example.org/ledger")
    ws = Witnesses(tmp_path, checkpointer.verifier(), names=("w3.example",))
    seen: list[tuple[str, str]] = []
    from service.ops.witnessing import Cosigner

    cosigner = Cosigner(
        ledger.store, ws.list, lambda url, body: (403, b"no"), lambda w, r: seen.append((w, r))
    )
    cosigner.cosign()
    cosigner.close()
    assert seen == [(ws.list[0].url, "refused")]


# -- the webhook outbox's hooks, with a stand-in for the alerts code ---------------------------------


def test_webhook_deliveries_and_the_outbox_depth(client: TestClient) -> None:
    before = _scrape(client)
    assert value(before, "ledger_webhook_outbox_depth") == 0
    for result in ("delivered", "delivered", "failed", "gave_up"):
        metrics.webhook_delivery(result)
    after = _scrape(client)
    for result, n in (("delivered", 2), ("failed", 1), ("gave_up", 1)):
        moved = value(after, "ledger_webhook_deliveries_total", result=result)
        assert moved - value(before, "ledger_webhook_deliveries_total", result=result) == n

    outbox_entries(state_of(client.app).ledger.store, ["pending", "delivered", "pending", "gave_up"])
    assert value(_scrape(client), "ledger_webhook_outbox_depth") == 2  # the outbox's pending entries


@pytest.mark.parametrize("result", ["", "Delivered", "gave up", "x" * 40, "ok\n"])
def test_a_delivery_result_is_a_short_lowercase_name(result: str) -> None:
    with pytest.raises(ValueError, match="webhook delivery result"):
        metrics.webhook_delivery(result)


# -- switches and hostile input --------------------------------------------------------------------


def test_metrics_off_serves_nothing_and_counts_nothing(new_db: NewDb) -> None:
    on, off = _client(new_db("on.db")), _client(new_db("off.db"), metrics="off")
    before = _scrape(on)
    r = off.post("/events", json=_events(2), headers=AUTH)
    assert r.status_code == 201 and "x-request-id" not in r.headers
    missing = off.get("/metrics")
    assert missing.status_code == 404 and missing.json()["error"]["code"] == "not_found"
    after = _scrape(on)
    assert value(after, "ledger_events_appended_total", type="measurement.observed", route="events") == value(
        before, "ledger_events_appended_total", type="measurement.observed", route="events"
    )
    assert "/metrics" not in off.get("/openapi.json").json()["paths"]
    assert "/metrics" in on.get("/openapi.json").json()["paths"]


def test_metrics_token_needs_a_configured_bearer_token(new_db: NewDb) -> None:
    client = _client(new_db(), metrics="token")
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 401
    assert value(_scrape(client, **AUTH), "ledger_up") == 1
    bare = create_app(Settings(db=state_of(client.app).settings.db, metrics="token"))
    refused = TestClient(bare).get("/metrics", headers=AUTH)
    assert refused.status_code == 401 and "none is configured" in refused.json()["error"]["message"]


def _templates(routes: list[Any]) -> set[str]:
    """The path templates of an app's routes, those of the routers it includes too."""
    out: set[str] = set()
    for r in routes:
        router = getattr(r, "original_router", None)
        out |= _templates(router.routes) if router is not None else {r.path}
    return out


def test_labels_never_hold_a_clients_path_or_method(client: TestClient) -> None:
    for path in ("/x" * 50, "/paper/../../etc/passwd", "/%00", "/metrics/"):
        assert client.get(path).status_code == 404
    assert client.request("BREW", "/healthz").status_code == 405
    samples = _scrape(client)
    routes = {dict(ls).get("route") for n, ls in samples if n == "ledger_http_requests_total"}
    templates = _templates(client.app.routes)  # type: ignore[attr-defined]
    assert routes <= templates | {"unmatched"}, routes - templates
    assert value(samples, "ledger_http_requests_total", route="unmatched", method="GET", status="404") >= 4
    methods = {dict(ls)["method"] for n, ls in samples if n == "ledger_http_requests_total"}
    assert "BREW" not in methods and "other" in methods


def test_a_database_that_cannot_be_read_is_a_gauge_not_a_failed_scrape() -> None:
    class Down:
        db, kind = "nowhere", "sqlite"

        @property
        def tables(self) -> Any:
            raise ConnectionError("the database is down")

    samples = parse(metrics.exposition(Operations(Down(), SYSTEM_CLOCK), None).decode())  # type: ignore[arg-type]
    assert value(samples, "ledger_up") == 0 and "ledger_head_seq" not in names(samples)


def _statements(client: TestClient, body: dict[str, Any]) -> list[str]:
    store: Any = state_of(client.app).ledger.store
    statements: list[str] = []
    store.trace = statements
    try:
        assert client.post("/events", json=body, headers=AUTH).status_code == 201
    finally:
        store.trace = None
    return list(statements)


def test_an_append_runs_the_same_statements_with_metrics_on_and_off(new_db: NewDb) -> None:
    """The counters are told after the commit, in memory: not one statement more on the append path."""
    on, off = _client(new_db("on.db")), _client(new_db("off.db"), metrics="off")
    for c in (on, off):
        assert c.post("/events", json=_events(1), headers=AUTH).status_code == 201  # warm connections
    with_metrics, without = _statements(on, _events(2, 10)), _statements(off, _events(2, 10))
    assert with_metrics and sorted(with_metrics) == sorted(without)


def test_group_sizes_count_the_appends_sharing_a_transaction(new_db: NewDb) -> None:
    client = _client(new_db())
    before = _scrape(client)
    ledger: Ledger = state_of(client.app).ledger
    from tests.factories import measurement

    threads = [
        threading.Thread(target=ledger.append, args=([measurement(PAPER, f"2026-11-02T00:00:{i:02d}Z", i)],))
        for i in range(16)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    after = _scrape(client)
    batches = value(after, "ledger_commit_group_batches_sum") - value(
        before, "ledger_commit_group_batches_sum"
    )
    groups = value(after, "ledger_commit_group_batches_count") - value(
        before, "ledger_commit_group_batches_count"
    )
    assert batches == 16 and 1 <= groups <= 16
    assert value(after, "ledger_head_seq") == 16
