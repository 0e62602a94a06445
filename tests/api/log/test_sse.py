"""SSE subscribers are bounded: one notifier per process, a cap (503), a send buffer, no leaked connections.

The subscribers are driven at the ASGI level, many at once in one event loop (TestClient buffers
whole responses). Nothing here measures time: every wait is for a condition, with a generous bound.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import itertools
import json
import os
import threading
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import psycopg
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from api.app import create_app
from api.docs import EVENT_EXAMPLES, ExampleEvent
from api.log import live
from api.log.live import Notifier
from api.settings import Settings
from api.state import state_of
from ledger.model.codec import canonical
from ledger.storage.backend import is_pg_url
from service.ledger import Ledger
from tests.conftest import FIXTURE_PATH, NewDb, examples
from tests.waiting import until

TIMEOUT = 60.0  # a bound on waiting for a condition, never an expectation of speed
IDLE = 3600.0  # a poll or heartbeat interval that never elapses during a test
FIXTURE_HEAD = 132
_values = itertools.count(1)


def measurement() -> ExampleEvent:
    """A measurement.observed of the fixture paper, new each time (its value differs)."""
    event = copy.deepcopy(EVENT_EXAMPLES["measurement.observed"])
    event["data"]["value"] = next(_values)
    return event


def append(ledger: Ledger, n: int = 1) -> None:
    """Append `n` new events in one batch (blocking: run it in a thread from the event loop)."""
    ledger.import_bytes(canonical({"events": [measurement() for _ in range(n)]}))


def ids(body: bytes | bytearray) -> list[int]:
    """The seqs of the SSE messages in `body`, in order."""
    return [int(line[4:]) for line in bytes(body).decode().splitlines() if line.startswith("id: ")]


@pytest.fixture
def make_app(new_db: NewDb) -> Iterator[Callable[..., Any]]:
    """make(**settings): an app over a new ledger holding the real record; its ledger is closed after."""
    made: list[Any] = []

    def make(**overrides: Any) -> Any:
        app = create_app(Settings(**{"db": new_db(f"sse{len(made)}.db"), **overrides}))
        state_of(app).ledger.import_bytes(FIXTURE_PATH.read_bytes())
        made.append(app)
        return app

    yield make
    for app in made:
        state_of(app).ledger.close()


class Subscriber:
    """One client of /evidence/stream in the running event loop; `stall(body)` true = it stops reading."""

    def __init__(
        self,
        app: Any,
        query: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        *,
        stall: Callable[[bytes], bool] | None = None,
    ) -> None:
        self.scope = {
            "type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"}, "http_version": "1.1",
            "method": "GET", "scheme": "http", "path": "/evidence/stream",
            "raw_path": b"/evidence/stream", "query_string": urlencode(query or {}).encode(),
            "headers": [(k.lower().encode(), v.encode()) for k, v in (headers or {}).items()],
            "client": ("127.0.0.1", 1), "server": ("test", 80), "root_path": "",
        }  # fmt: skip
        self.app = app
        self.stall = stall
        self.status: int | None = None
        self.headers: dict[str, str] = {}
        self.body = bytearray()
        self.complete = False
        self.stalled = False
        self.changed = asyncio.Condition()
        self.gone = asyncio.Event()
        self._requested = False
        self.task = asyncio.ensure_future(self._run())

    async def _run(self) -> None:
        try:
            await self.app(self.scope, self._receive, self._send)
        finally:
            async with self.changed:
                self.changed.notify_all()

    async def _receive(self) -> dict[str, Any]:
        if not self._requested:
            self._requested = True
            return {"type": "http.request", "body": b"", "more_body": False}
        await self.gone.wait()
        return {"type": "http.disconnect"}

    async def _send(self, message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
            self.headers = {k.decode().lower(): v.decode() for k, v in message["headers"]}
        elif message["type"] == "http.response.body":
            if self.stall is not None and self.stall(bytes(self.body)):
                # a client that stopped reading: the server's send() never returns (flow control)
                self.stalled = True
                async with self.changed:
                    self.changed.notify_all()
                await asyncio.Event().wait()
            self.body.extend(message.get("body", b""))
            self.complete = not message.get("more_body", False)
        async with self.changed:
            self.changed.notify_all()

    async def until(self, predicate: Callable[[Subscriber], bool]) -> None:
        """Wait (bounded by TIMEOUT) until `predicate(self)` holds."""
        async with self.changed:
            await asyncio.wait_for(self.changed.wait_for(lambda: predicate(self)), TIMEOUT)

    async def until_seq(self, seq: int) -> None:
        """Wait until the message of `seq` has arrived."""
        await self.until(lambda s: seq in ids(s.body))

    async def leave(self) -> None:
        """Disconnect, and wait for the server to end the response."""
        self.gone.set()
        await asyncio.wait_for(self.task, TIMEOUT)

    def json(self) -> Any:
        """The body as JSON (an error answer)."""
        return json.loads(bytes(self.body))


def notifier_of(app: Any) -> Notifier:
    """The app's notifier for the running event loop."""
    return state_of(app).live.notifier()


# -- the cap -----------------------------------------------------------------------------------------


def test_past_the_cap_the_stream_is_503_with_retry_after_and_the_error_shape(
    make_app: Callable[..., Any],
) -> None:
    app = make_app(sse_max_subscribers=3, sse_poll=IDLE, sse_heartbeat=IDLE)

    async def main() -> None:
        subs = [Subscriber(app, {"after": FIXTURE_HEAD}) for _ in range(3)]
        for s in subs:
            await s.until(lambda s: b"catching up" in s.body)
            assert s.status == 200
        refused = Subscriber(app, {"after": FIXTURE_HEAD})
        await asyncio.wait_for(refused.task, TIMEOUT)  # answered at once: not a stream
        assert refused.status == 503 and refused.complete
        assert refused.headers["retry-after"].isdigit() and int(refused.headers["retry-after"]) > 0
        assert refused.headers["content-type"] == "application/json"
        body = refused.json()
        assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}
        assert body["error"]["code"] == "too_many_subscribers" and body["error"]["message"]
        # a place freed is a place taken
        await subs[0].leave()
        again = Subscriber(app, {"after": FIXTURE_HEAD})
        await again.until(lambda s: b"catching up" in s.body)
        assert again.status == 200
        for s in [*subs[1:], again]:
            await s.leave()
        assert not notifier_of(app).subscribers

    asyncio.run(main())
    answers = app.openapi()["paths"]["/evidence/stream"]["get"]["responses"]
    assert "Retry-After" in answers["503"]["headers"]


# -- one read per new head ----------------------------------------------------------------------------


def test_one_database_read_per_new_head_whatever_the_number_of_subscribers(
    make_app: Callable[..., Any],
) -> None:
    n, heads = 25, 6
    app = make_app(sse_poll=0.05, sse_heartbeat=IDLE)
    ledger: Ledger = state_of(app).ledger
    store = ledger.store
    elsewhere = Ledger(ledger.url)  # another process's writer: no wake-up, found by the poll
    found: list[int] = []  # rows returned by each read that found any
    heads_read: list[int] = []
    read_log, head = store.read_log, store.head

    def counting_read_log(*args: Any, **kwargs: Any) -> Any:
        rows = read_log(*args, **kwargs)
        if rows:
            found.append(len(rows))
        return rows

    def counting_head() -> Any:
        heads_read.append(1)
        return head()

    store.read_log = counting_read_log  # type: ignore[method-assign]
    store.head = counting_head  # type: ignore[method-assign]

    async def main() -> None:
        subs = [Subscriber(app, {"after": 100}) for _ in range(n)]
        for s in subs:
            await s.until_seq(FIXTURE_HEAD)
        notifier = notifier_of(app)
        await until(
            lambda: len(notifier.live) == n and all(s.caught_up for s in notifier.live),
            "every subscriber caught up",
        )
        found.clear()
        heads_read.clear()
        for i in range(heads):
            writer = ledger if i % 2 == 0 else elsewhere
            await asyncio.to_thread(append, writer)
            seq = FIXTURE_HEAD + i + 1
            for s in subs:
                await s.until_seq(seq)
        # every subscriber had each event exactly once, and the database was read once per new head
        for s in subs:
            assert ids(s.body) == list(range(101, FIXTURE_HEAD + heads + 1))
        assert found == [1] * heads
        assert heads_read == []
        # the last one to leave stops the polling
        for s in subs:
            await s.leave()
        await until(lambda: notifier._task is None, "the notifier's task ended")
        assert notifier.position is None and not notifier.live

    try:
        asyncio.run(main())
    finally:
        elsewhere.close()


# -- the send buffer ----------------------------------------------------------------------------------


def test_a_subscriber_that_stops_reading_is_dropped_and_resumes_with_last_event_id(
    make_app: Callable[..., Any],
) -> None:
    app = make_app(sse_buffer=2048, sse_poll=IDLE, sse_heartbeat=IDLE)
    ledger: Ledger = state_of(app).ledger

    async def main() -> None:
        # caught up to the head, then never reads again; another client reads everything
        slow = Subscriber(app, {"after": 120}, stall=lambda body: FIXTURE_HEAD in ids(body))
        reader = Subscriber(app, {"after": 120})
        await reader.until_seq(FIXTURE_HEAD)
        await slow.until_seq(FIXTURE_HEAD)
        notifier = notifier_of(app)
        await until(lambda: len(notifier.live) == 2, "two live subscribers")
        head = FIXTURE_HEAD
        for _ in range(40):  # each measurement is ~500 bytes: a 2 KiB buffer overflows long before
            await asyncio.to_thread(append, ledger, 2)
            head += 2
            await reader.until_seq(head)  # the notifier is not held up by the stalled client
            if slow.task.done():
                break
        assert slow.task.done() and slow.stalled, "the stalled subscriber was never dropped"
        assert not slow.complete  # its connection is closed, not ended as a finished answer
        assert len(notifier.subscribers) == 1 and len(notifier.live) == 1
        # it comes back where it stopped: exactly the events it missed
        got = ids(slow.body)
        assert got == list(range(121, got[-1] + 1))
        back = Subscriber(app, {"after": 0}, {"Last-Event-ID": str(got[-1])})
        await back.until_seq(head)
        assert ids(back.body) == list(range(got[-1] + 1, head + 1))
        assert ids(reader.body) == list(range(121, head + 1))
        await back.leave()
        await reader.leave()

    asyncio.run(main())


# -- the catch-up to live hand-over -------------------------------------------------------------------


@pytest.fixture
def race_app(make_app, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, dict[str, int]]]:
    """An app whose every read is followed by appends from this process (budget["left"] of them,
    budget["per_read"] at a time): commits land in each window of the hand-over."""
    app = make_app(sse_poll=IDLE, sse_heartbeat=IDLE)
    ledger: Ledger = state_of(app).ledger
    store = ledger.store
    budget = {"left": 0, "per_read": 1, "done": 0}
    lock = threading.Lock()
    read_log = store.read_log

    def racing_read_log(*args: Any, **kwargs: Any) -> Any:
        rows = read_log(*args, **kwargs)
        with lock:
            n = min(budget["per_read"], budget["left"])
            budget["left"] -= n
        if n:
            append(ledger, n)
            with lock:
                budget["done"] += n
        return rows

    monkeypatch.setattr(store, "read_log", racing_read_log)
    yield app, budget


# each matches the events appended here, so the last one appended shows the stream is complete
FILTERS = [{}, {"type": "measurement.observed"}, {"stream": "paper:2509.02480"}]


@settings(
    max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    back=st.integers(0, 40),
    batch=st.integers(1, 6),
    appends=st.integers(0, 12),
    per_read=st.integers(1, 3),
    where=st.sampled_from(FILTERS),
)
def test_catch_up_hands_over_to_live_without_losing_or_repeating_an_event(
    race_app, monkeypatch: pytest.MonkeyPatch, back: int, batch: int, appends: int, per_read: int, where
):
    app, budget = race_app
    ledger: Ledger = state_of(app).ledger
    monkeypatch.setattr(live, "STREAM_BATCH", batch)  # many catch-up reads, many windows
    after = max(0, ledger.head().seq - back)

    async def main() -> None:
        budget.update(left=appends, per_read=per_read, done=0)
        sub = Subscriber(app, {"after": after, **where})
        await until(lambda: budget["done"] == appends and len(notifier_of(app).live) == 1, "the appends done")
        # a last event, appended once all the others are in: anything repeated would come before it
        sentinel = ledger.head().seq + 1
        await asyncio.to_thread(append, ledger)
        await sub.until_seq(sentinel)
        expected = [e.seq for e in ledger.store.read_log(after, None, where.get("stream"), where.get("type"))]
        assert expected[-1] == sentinel
        assert ids(sub.body) == expected
        await sub.leave()

    asyncio.run(main())


def test_a_client_gone_as_an_event_is_queued_ends_its_response(make_app: Callable[..., Any]) -> None:
    """A cancellation that arrives in the same turn of the loop as the wake-up of the live wait is kept:
    the stream of a client that left ends, and frees its place (asyncio.wait_for on Python 3.11 drops
    such a cancellation, so the response waited for the next heartbeat, for good here)."""
    app = make_app(sse_poll=IDLE, sse_heartbeat=IDLE)
    head = state_of(app).ledger.head().seq

    async def main() -> None:
        notifier = notifier_of(app)
        sub = notifier.subscribe(None, None)

        async def stream() -> None:
            async for _ in live.follow(sub, head):
                pass

        task = asyncio.ensure_future(stream())
        await until(lambda: sub.caught_up and sub in notifier.live, "the subscriber live")
        await asyncio.sleep(0)  # the stream now waits for something queued
        sub.ready.set()
        await asyncio.sleep(0)  # the wait has ended; the stream has not run since
        task.cancel()
        done, _ = await asyncio.wait({task}, timeout=TIMEOUT)
        assert task in done and task.cancelled()
        assert sub not in notifier.subscribers

    asyncio.run(main())


# -- connections of ended threads ---------------------------------------------------------------------


def _open_connections(db: str) -> int:
    """Open files on the SQLite ledger (its db, -wal and -shm) of this process, or its PostgreSQL backends.

    SQLite keeps the descriptor of a closed connection while another connection of the process holds a
    lock on the file, and reuses it for the next one: closed connections show as a flat count, leaked
    ones as a growing one.
    """
    if is_pg_url(db):
        with psycopg.connect(db, autocommit=True, application_name="counter") as admin:
            row = admin.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND application_name = 'citation-ledger'"
            ).fetchone()
            assert row is not None
            return int(row[0])
    target = os.path.realpath(db)
    count = 0
    for fd in Path("/proc/self/fd").iterdir():
        with contextlib.suppress(OSError):  # closed meanwhile
            count += os.readlink(fd).startswith(target)
    return count


def await_true(predicate: Callable[[], bool]) -> None:
    """Wait (bounded by TIMEOUT) until `predicate()` holds, else fail."""
    pause = threading.Event()
    for _ in range(int(TIMEOUT / 0.01)):
        if predicate():
            return
        pause.wait(0.01)
    assert predicate()


def test_the_connection_of_a_thread_is_closed_when_the_thread_ends(new_db: NewDb):
    ledger = Ledger(new_db())
    pg = is_pg_url(ledger.url)
    width = 8
    try:
        before = _open_connections(ledger.url)
        assert before >= 1  # this thread's, opened to create the schema
        together = threading.Barrier(width)

        def reads() -> None:
            ledger.store.read_log(0, 1)
            ledger.head()
            together.wait(TIMEOUT)  # `width` connections open at once in every round

        counts = []
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            for _ in range(4):  # a pool's threads come and go
                threads = [threading.Thread(target=reads) for _ in range(width)]
                for t in threads:
                    t.start()
                for t in threads:
                    t.join()
                del t, threads
                if pg:  # a backend leaves pg_stat_activity a moment after its client closed
                    await_true(lambda: _open_connections(ledger.url) == before)
                counts.append(_open_connections(ledger.url))
        # flat: what the first round left open (SQLite: descriptors kept for reuse), no more
        assert counts == [counts[0]] * len(counts), counts
        assert not pg or counts[0] == before
        # closed by the store, not dropped still open (psycopg warns of that)
        assert not [w for w in caught if issubclass(w.category, ResourceWarning)]
        # only ended threads lose theirs: a thread that goes on keeps its connection
        started, finish = threading.Event(), threading.Event()

        def stays() -> None:
            ledger.head()
            started.set()
            finish.wait(TIMEOUT)

        worker = threading.Thread(target=stays)
        worker.start()
        assert started.wait(TIMEOUT)
        ledger.head()  # this thread's connection, and a prune of the ended threads' ones
        assert len(ledger.store._conns) == 2  # type: ignore[attr-defined]
        finish.set()
        worker.join()
    finally:
        ledger.close()
