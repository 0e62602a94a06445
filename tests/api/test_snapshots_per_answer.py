"""Every answer reads the ledger once: each GET route of the app, called by a real client over a socket,
opens at most one snapshot of the store, and one that answers about a record or a paper exactly one,
reading the chain's banner (the last full walk) and the sources' latest checks inside it, once."""

from __future__ import annotations

import contextvars
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
import uvicorn

from api.app import create_app
from api.settings import Settings
from api.state import state_of
from ledger.storage.tables.reader import SqlReader
from service.ops.scrub import PassLog
from tests.api_fixtures import free_port
from tests.conftest import FIXTURE_ID, NewDb

TOKEN = "snapshot-counting-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
# what one request read: "snapshot" per snapshot opened, "walk in"/"walk out" per read of the pass log
# inside/outside one, "heads" per read of the sources' latest checks (None outside a request)
_OPENED: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar("opened", default=None)
_INSIDE: contextvars.ContextVar[bool] = contextvars.ContextVar("inside", default=False)


class _Counting:
    """The app, with each request's snapshots counted (a request's threads inherit its context)."""

    def __init__(self, app: Any, seen: dict[str, list[str]]) -> None:
        self.app = app
        self.seen = seen

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        opened: list[str] = []
        token = _OPENED.set(opened)
        try:
            await self.app(scope, receive, send)
        finally:
            _OPENED.reset(token)
            self.seen[scope["path"] + "?" + scope["query_string"].decode()] = opened


@contextmanager
def _serving(app: Any) -> Iterator[str]:
    """`app` served by uvicorn on a free loopback port, in a thread, until the block ends."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the server did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


def _get_routes(app: Any) -> list[str]:
    """Every GET path the app routes (routers included), as declared."""
    paths: list[str] = []

    def walk(routes: Any) -> None:
        for r in routes:
            if hasattr(r, "original_router"):
                walk(r.original_router.routes)
            elif "GET" in (getattr(r, "methods", None) or ()):
                paths.append(r.path)

    walk(app.routes)
    return paths


def _seed(base: str) -> dict[str, str]:
    """A watch, a collection and an observation id for the routes that name one."""
    with httpx.Client(base_url=base, headers=AUTH, timeout=60) as c:
        watch = c.post("/watches", json={"arxiv_id": FIXTURE_ID})
        assert watch.status_code == 201, watch.text
        made = c.post("/collections/mine", json={"add": [FIXTURE_ID]})
        assert made.status_code in (200, 201), made.text
        record = c.get(f"/paper/{FIXTURE_ID}/citation-record.json").json()
    oid = record["outbound"][0]["observation_id"]
    return {"watch_id": watch.json()["id"], "name": "mine", "observation_id": oid, "arxiv_id": FIXTURE_ID}


# the query each route needs to answer at all (a route absent here is called without one)
QUERIES = {
    "/paper/{arxiv_id:path}/changes": {"from": "2025-01-01"},
    "/search": {"q": "citation"},
    "/screen": {"paper": FIXTURE_ID},
    "/screen/changes": {"paper": FIXTURE_ID, "from": "2025-01-01"},
    "/checkpoint/consistency": {"first": "1", "second": "2"},
    "/evidence": {"seqs": "1"},
}
INTEGRITY = "/paper/{arxiv_id:path}/integrity"
# the answers about a record or a paper: each is one consistent read of the ledger
ABOUT_A_RECORD = {
    "/paper/{arxiv_id:path}/citation-record.json",
    "/paper/{arxiv_id:path}/citation-record",
    "/paper/{arxiv_id:path}/integrity",
    "/paper/{arxiv_id:path}",
    "/paper/{arxiv_id:path}/changes",
    "/paper/{arxiv_id:path}/observations/{observation_id}/resolution",
    "/paper/{arxiv_id:path}/bundle",
    "/screen",
    "/screen/changes",
}


def _fill(path: str, values: dict[str, str]) -> str:
    out = path.replace("{arxiv_id:path}", values["arxiv_id"])
    for key, value in values.items():
        out = out.replace("{" + key + "}", value)
    return out.replace("{seq}", "1").replace("{job_id}", "no-such-job")


@pytest.mark.process
def test_every_get_route_reads_at_most_one_snapshot(
    new_db: NewDb, fixture_bytes: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = create_app(Settings(db=new_db(), tokens=(TOKEN,)))
    ledger = state_of(app).ledger
    ledger.import_bytes(fixture_bytes)
    store_type = type(ledger.store)
    real = store_type.snapshot

    @contextmanager
    def counted(self: Any, *args: Any, **kw: Any) -> Iterator[Any]:
        _note("snapshot")
        with real(self, *args, **kw) as reader:
            inside = _INSIDE.set(True)
            try:
                yield reader
            finally:
                _INSIDE.reset(inside)

    last, heads = PassLog.last, SqlReader.source_heads

    def last_noted(self: PassLog) -> Any:
        _note("walk in" if _INSIDE.get() else "walk out")
        return last(self)

    def heads_noted(self: SqlReader) -> Any:
        _note("heads")
        return heads(self)

    monkeypatch.setattr(store_type, "snapshot", counted)
    monkeypatch.setattr(PassLog, "last", last_noted)
    monkeypatch.setattr(SqlReader, "source_heads", heads_noted)
    seen: dict[str, list[str]] = {}
    routes = _get_routes(app)
    assert len(routes) >= 25 and set(ABOUT_A_RECORD) <= set(routes)
    statuses: dict[str, int] = {}
    with _serving(_Counting(app, seen)) as base:
        values = _seed(base)
        seen.clear()
        with httpx.Client(base_url=base, headers=AUTH, timeout=120) as c:
            for route in routes:
                url = _fill(route, values)
                params = QUERIES.get(route, {})
                # a stream answers its catch-up and stays open: its headers are enough here
                with c.stream("GET", url, params=params) as answer:
                    statuses[route] = answer.status_code
                    if "event-stream" not in answer.headers.get("content-type", ""):
                        answer.read()
    read = {
        route: r for route in routes for key, r in seen.items() if key.startswith(_fill(route, values) + "?")
    }
    assert set(read) == set(routes), sorted(set(routes) - set(read))
    counts = {route: r.count("snapshot") for route, r in read.items()}
    over = {r: n for r, n in counts.items() if n > 1}
    assert over == {}, json.dumps(counts, indent=1)
    about = {r: (counts[r], statuses[r]) for r in ABOUT_A_RECORD}
    assert all(n == 1 and status == 200 for n, status in about.values()), about
    # an answer about a record reads the banner, if at all, in its one read, and each source's latest
    # check once (the record and its notices share it)
    outside = {r: read[r] for r in ABOUT_A_RECORD - {INTEGRITY} if "walk out" in read[r]}
    assert outside == {}, outside
    # the integrity report also walks the chain from its resume point (a verify, which may write), after
    # the read; its banner is the read's
    assert read[INTEGRITY][:3] == ["snapshot", "heads", "walk in"], read[INTEGRITY]
    assert read["/paper/{arxiv_id:path}/citation-record"].count("heads") == 1, read
    assert read["/paper/{arxiv_id:path}/citation-record"].count("walk in") == 1, read


def _note(what: str) -> None:
    opened = _OPENED.get()
    if opened is not None:
        opened.append(what)
