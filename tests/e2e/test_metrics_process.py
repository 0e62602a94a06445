"""GET /metrics and JSON logs of a real `ledger serve` on 127.0.0.1 (backend under test): with two
workers every scrape, whichever worker answers it, sums both workers' counters (prometheus-client's
multiprocess mode, its directory emptied at start); every line of output is one JSON object and none
holds the configured token."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import httpx

from service.ledger import Ledger
from tests.api_fixtures import Server, now_rfc3339, running_server
from tests.conftest import NewDb
from tests.factories import outbox_entries
from tests.metrics_text import Samples, parse, value
from tests.paths import ROOT
from tests.service.sources.test_sources_support import SOURCES_DIR
from tests.waiting import wait_until

TOKEN = "process-metrics-token-never-logged"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
MEASURED = {"type": "measurement.observed", "route": "events"}


def _scrape(server: Server) -> Samples:
    r = httpx.get(f"{server.base}/metrics", timeout=30)  # a new connection: any worker may answer
    assert r.status_code == 200, r.text
    return parse(r.text)


def _post_one(server: Server, n: int) -> httpx.Response:
    event = {
        "type": "measurement.observed",
        "observed_at": now_rfc3339(),
        "data": {
            "arxiv_id": "2509.02480",
            "source": "opencitations",
            "metric": "citation_count",
            "value": n,
            "source_release": None,
            "query_url": None,
        },
    }
    r = httpx.post(f"{server.base}/events", json={"events": [event]}, headers=AUTH, timeout=30)
    assert r.status_code == 201, r.text
    return r


def _json_lines(server: Server) -> list[dict[str, Any]]:
    """Every line the server wrote so far, each parsed as one JSON object."""
    out = []
    for line in server.log().splitlines():
        out.append(json.loads(line))
    return out


def _pids(server: Server, logger: str, route: str) -> set[int]:
    return {g["pid"] for g in _json_lines(server) if g["logger"] == logger and g.get("route") == route}


def _count_from_another_process(directory: Path, code: str) -> None:
    """Run `code` (api.ops.metrics imported as m) in a process of its own writing to `directory`."""
    env = {**os.environ, "PROMETHEUS_MULTIPROC_DIR": str(directory)}
    subprocess.run(
        [sys.executable, "-c", f"import api.ops.metrics as m; {code}"], env=env, cwd=ROOT, check=True
    )


def test_two_workers_every_scrape_sums_both(new_db: NewDb, tmp_path: Path) -> None:
    db = new_db()
    directory = tmp_path / "metrics"
    directory.mkdir()
    # an earlier run's counts, left in the directory: the server must start from zero
    _count_from_another_process(
        directory,
        "m.EVENTS.labels('measurement.observed', 'events').inc(1000); m.webhook_delivery('delivered')",
    )
    assert list(directory.glob("counter_*.db"))
    ledger = Ledger(db)
    outbox_entries(ledger.store, ["delivered", "pending", "pending", "pending"])
    ledger.close()
    env = {
        "LEDGER_TOKENS": TOKEN,
        "LEDGER_LOG_FORMAT": "json",
        "LEDGER_SCRUB_INTERVAL": "0.3",
        "LEDGER_SSE_HEARTBEAT": "0.3",
        "PROMETHEUS_MULTIPROC_DIR": str(directory),
    }
    with running_server(db, env=env, args=["--workers", "2"]) as server:
        start = value(_scrape(server), "ledger_head_seq")  # the sample record, loaded at start
        assert value(_scrape(server), "ledger_events_appended_total", **MEASURED) == 0
        assert value(_scrape(server), "ledger_webhook_deliveries_total", result="delivered") == 0
        posted = 0
        while len(_pids(server, "ledger.append", "events")) < 2:  # appends served by both workers
            assert posted < 500, "one worker took every connection"
            _post_one(server, posted)
            posted += 1
        scrapes = 0
        while scrapes < 4 or len(_pids(server, "ledger.http", "/metrics")) < 2:  # answered by both workers
            assert scrapes < 500, "one worker took every connection"
            scrapes += 1
            samples = _scrape(server)
            assert value(samples, "ledger_events_appended_total", **MEASURED) == posted
            assert (
                value(samples, "ledger_http_requests_total", route="/events", method="POST", status="201")
                == posted
            )
            assert value(samples, "ledger_append_batch_events_count", route="events") == posted
            assert value(samples, "ledger_head_seq") == start + posted
            assert value(samples, "ledger_webhook_outbox_depth") == 3

        # an ingest, in whichever worker
        rw = (SOURCES_DIR / "retraction_watch.csv").read_bytes()
        r = httpx.post(
            f"{server.base}/ingest/retraction-watch",
            params={"observed_at": now_rfc3339()},
            content=rw,
            headers=AUTH,
            timeout=30,
        )
        assert r.status_code == 201, r.text
        samples = _scrape(server)
        rows = value(samples, "ledger_ingest_rows_total", source="retraction-watch", outcome="read")
        assert rows == r.json()["read"] > 0
        assert value(samples, "ledger_ingests_total", source="retraction-watch", result="appended") == 1

        # scrubs, by whichever worker holds the scrub lock
        wait_until(
            lambda: value(_scrape(server), "ledger_scrub_passes_total", kind="scrub", result="ok") >= 2,
            "two scrub passes",
        )
        assert value(_scrape(server), "ledger_scrub_last_ok") == 1

        # deliveries, told by another process (the alerts' stand-in) writing to the same directory
        _count_from_another_process(
            directory, "m.webhook_delivery('delivered'); m.webhook_delivery('failed')"
        )
        samples = _scrape(server)
        assert value(samples, "ledger_webhook_deliveries_total", result="delivered") == 1
        assert value(samples, "ledger_webhook_deliveries_total", result="failed") == 1

        # a live subscriber, counted while it is there
        stop = threading.Event()

        def subscribe() -> None:
            with httpx.stream("GET", f"{server.base}/evidence/stream?after=0", timeout=30) as s:
                for _ in s.iter_lines():
                    if stop.is_set():
                        return

        reader = threading.Thread(target=subscribe, daemon=True)
        reader.start()
        wait_until(lambda: value(_scrape(server), "ledger_sse_subscribers") == 1, "one subscriber")
        stop.set()
        reader.join(timeout=10)
        wait_until(lambda: value(_scrape(server), "ledger_sse_subscribers") == 0, "no subscriber")

    lines = _json_lines(server)  # every line: the server's own, uvicorn's and each worker's
    assert {g["logger"] for g in lines} >= {"ledger.serve", "ledger.http", "ledger.append", "uvicorn.error"}
    assert TOKEN not in server.log() and "Bearer" not in server.log()


def test_one_worker_counts_in_its_own_memory_with_text_logs(new_db: NewDb) -> None:
    with running_server(new_db(), env={"LEDGER_TOKENS": TOKEN}) as server:
        before = _scrape(server)
        r = _post_one(server, 1)
        after = _scrape(server)
        assert (
            value(after, "ledger_events_appended_total", **MEASURED)
            - value(before, "ledger_events_appended_total", **MEASURED)
            == 1
        )
        assert value(after, "process_cpu_seconds_total") > 0  # the default registry: not multiprocess
        assert len(r.headers["x-request-id"]) == 16
        wait_until(lambda: '"POST /events HTTP/1.1" 201' in server.log(), "uvicorn's access line")


def test_the_cli_imports_no_metrics_before_the_server_sets_their_directory() -> None:
    """prometheus-client picks its multiprocess mode when first imported: `ledger serve` must reach
    api.server.run (which sets PROMETHEUS_MULTIPROC_DIR) without importing it."""
    code = "import sys, cli.main, api.server; assert 'prometheus_client' not in sys.modules, 'imported'"
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


def test_the_server_makes_cleans_and_removes_the_metrics_directory(tmp_path: Path, monkeypatch: Any) -> None:
    from api.server import MULTIPROC_ENV, metrics_dir

    monkeypatch.delenv(MULTIPROC_ENV, raising=False)
    with metrics_dir(1):
        assert MULTIPROC_ENV not in os.environ  # one process: in memory
    with metrics_dir(2):
        made = Path(os.environ[MULTIPROC_ENV])
        assert made.is_dir()
    assert not made.exists() and MULTIPROC_ENV not in os.environ

    given = tmp_path / "given"
    given.mkdir()
    for name in ("counter_12.db", "gauge_livesum_12.db", "histogram_9.db", "notes.txt"):
        (given / name).write_text("x")
    monkeypatch.setenv(MULTIPROC_ENV, str(given))
    with metrics_dir(1):  # named by the operator: used even for one worker, emptied of metric files
        assert sorted(p.name for p in given.iterdir()) == ["notes.txt"]
    assert given.is_dir()  # the operator's: kept


def test_a_scrape_drops_the_live_gauges_of_a_worker_that_is_gone(tmp_path: Path) -> None:
    from api.ops.metrics import _forget_dead_workers

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    for name in (f"gauge_livesum_{gone.pid}.db", f"gauge_livesum_{os.getpid()}.db", f"counter_{gone.pid}.db"):
        (tmp_path / name).write_bytes(b"")
    _forget_dead_workers(tmp_path)
    # a dead worker's live gauge goes; the living one's stays, and counts (counters) are never dropped
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [f"gauge_livesum_{os.getpid()}.db", f"counter_{gone.pid}.db"]
    )
