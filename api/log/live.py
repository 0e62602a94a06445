"""Live SSE delivery: one notifier per server process reads each new head once and fans it out.

A subscriber of GET /evidence/stream first catches up with its own reads, one bounded read at a
time and paced by its client. It then joins the notifier: from that moment every event after the
notifier's position is queued for it, and one more read of its own from where it stands covers
everything up to a head at least that position. The two overlap, never leave a gap; the overlap
is removed by seq. Live events then come from the notifier alone, whatever the number of
subscribers: one database read per new head, woken at once by this process's commits and, for
commits made elsewhere (other workers, the CLI), by one cheap poll every `sse_poll` seconds, only
while someone is live. A subscriber whose queue would grow past `sse_buffer` bytes is dropped (its
connection is closed) and resumes with Last-Event-ID; the notifier never waits for a client.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable

from starlette.concurrency import run_in_threadpool

from api.errors import TooManySubscribers
from api.ops import metrics
from api.settings import Settings
from ledger.model.codec import canonical, envelope_json
from ledger.model.events import StoredEvent
from service.ledger import Ledger
from service.log import Log

log = logging.getLogger("api.live")

# Events per read, the notifier's and a catch-up's (a catch-up read shrinks when its events are big).
STREAM_BATCH = 500
# Seconds a refused subscriber is asked to wait (the 503's Retry-After).
RETRY_AFTER = "5"
# Catch-up reads running at once per process: a reconnect storm must leave the worker threads to
# the other requests (the notifier's own reads do not wait for these).
CATCH_UP_READERS = 4

Stop = Callable[[], Awaitable[None]]


def sse_message(e: StoredEvent) -> bytes:
    """One SSE message: id = seq, event = the event type, data = the stored envelope."""
    return b"id: %d\nevent: %s\ndata: %s\n\n" % (
        e.seq,
        e.type.encode(),
        canonical(envelope_json(e)),
    )


def _matches(e: StoredEvent, stream: str | None, type_: str | None) -> bool:
    return (stream is None or e.stream == stream) and (type_ is None or e.type == type_)


class Chunk:
    """The messages of one notifier read that one filter matches: encoded once, shared by its subscribers."""

    __slots__ = ("seqs", "messages", "size", "_joined")

    def __init__(self, seqs: list[int], messages: list[bytes]) -> None:
        self.seqs = seqs
        self.messages = messages
        self.size = sum(len(m) for m in messages)
        self._joined: bytes | None = None

    @property
    def last(self) -> int:
        """The seq of its last event."""
        return self.seqs[-1]

    def after(self, cursor: int) -> bytes:
        """Its messages of events after `cursor` (all of them, except right after the hand-over)."""
        if self.seqs[0] > cursor:
            if self._joined is None:
                self._joined = b"".join(self.messages)
            return self._joined
        return b"".join(m for s, m in zip(self.seqs, self.messages, strict=True) if s > cursor)


class Subscription:
    """One client of /evidence/stream: its filters, its bounded queue, and whether it was dropped."""

    def __init__(self, notifier: Notifier, stream: str | None, type_: str | None) -> None:
        self.notifier = notifier
        self.stream = stream
        self.type = type_
        self.queue: deque[Chunk] = deque()
        self.queued = 0  # bytes
        self.ready = asyncio.Event()  # something was queued, or it was dropped
        self.dropped = asyncio.Event()
        self.caught_up = False  # its own reads are over: only the notifier feeds it now

    def offer(self, chunk: Chunk) -> None:
        """Queue `chunk`, or drop the subscriber when its queue would pass the buffer (never wait)."""
        # An empty queue takes any chunk: a client that keeps up is not dropped for one big read
        # (the chunk's bytes are shared with every other subscriber of the same filter anyway).
        if self.queued and self.queued + chunk.size > self.notifier.settings.sse_buffer:
            self.notifier.drop(self)
            return
        self.queue.append(chunk)
        self.queued += chunk.size
        self.ready.set()

    def take(self) -> list[Chunk]:
        """Everything queued so far, emptying the queue."""
        chunks = list(self.queue)
        self.queue.clear()
        self.queued = 0
        self.ready.clear()
        return chunks

    def close(self) -> None:
        """The response has ended: free its place."""
        self.notifier.leave(self)


class Notifier:
    """The live feed of one event loop (one server process): a single reader for every subscriber."""

    def __init__(self, reads: Log, settings: Settings, loop: asyncio.AbstractEventLoop) -> None:
        self.reads = reads
        self.settings = settings
        self.loop = loop
        self.subscribers: set[Subscription] = set()  # admitted (the cap counts them)
        self.live: set[Subscription] = set()  # joined: the notifier queues new events for them
        self.position: int | None = None  # the last seq fanned out, while running
        self.wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self._ready: asyncio.Future[None] | None = None
        self._catch_up = asyncio.Semaphore(CATCH_UP_READERS)
        self._failing = False

    def subscribe(self, stream: str | None, type_: str | None) -> Subscription:
        """A new subscription, or TooManySubscribers past `sse_max_subscribers` in this process."""
        cap = self.settings.sse_max_subscribers
        if len(self.subscribers) >= cap:
            raise TooManySubscribers(
                f"this server already serves {cap} live subscriptions (LEDGER_SSE_MAX_SUBSCRIBERS); "
                f"retry after {RETRY_AFTER} s",
                retry_after=RETRY_AFTER,
                details={"max_subscribers": cap},
            )
        sub = Subscription(self, stream, type_)
        self.subscribers.add(sub)
        if self.settings.counting:
            metrics.SSE.inc()
        return sub

    def leave(self, sub: Subscription) -> None:
        """Forget `sub`; the last one to leave stops the polling."""
        if sub in self.subscribers and self.settings.counting:
            metrics.SSE.dec()
        self.subscribers.discard(sub)
        self.live.discard(sub)
        sub.queue.clear()
        sub.queued = 0
        if not self.live and self._task is not None:
            self.wake.set()  # the task sees nobody live and ends now rather than at its next poll

    def drop(self, sub: Subscription) -> None:
        """End a subscriber that fell `sse_buffer` bytes behind; its place is freed when its response ends."""
        log.warning(
            "SSE subscriber dropped: over %d bytes queued (LEDGER_SSE_BUFFER); it resumes by Last-Event-ID",
            self.settings.sse_buffer,
        )
        self._end(sub)

    def _end(self, sub: Subscription) -> None:
        self.live.discard(sub)
        sub.queue.clear()
        sub.queued = 0
        sub.dropped.set()  # its response closes the connection
        sub.ready.set()

    def notify(self) -> None:
        """Read the new head now (thread-safe: the committing thread calls it)."""
        if not self.live or self.loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            self.loop.call_soon_threadsafe(self.wake.set)

    async def join(self, sub: Subscription) -> None:
        """Make `sub` live: every event after the notifier's position is queued for it from now on."""
        while True:
            if self._task is None or self._task.done():
                self._ready = self.loop.create_future()
                # retrieved here, so a failure nobody waited for is not logged as "never retrieved"
                self._ready.add_done_callback(lambda f: f.cancelled() or f.exception())
                self._task = self.loop.create_task(self._run(self._ready))
            task, ready = self._task, self._ready
            assert ready is not None
            await asyncio.shield(ready)  # the head is known; raises if it could not be read
            if self._task is task:  # still the same run (it may have ended while nobody was live)
                self.live.add(sub)
                return

    async def read(
        self, after: int, limit: int, stream: str | None, type_: str | None
    ) -> tuple[bytes, int, int]:
        """A catch-up read in a worker thread: (messages, last seq, rows read), a few reads at a time."""
        async with self._catch_up:
            return await run_in_threadpool(_read_messages, self.reads, after, limit, stream, type_)

    async def stop(self) -> None:
        """End the polling and every subscription (server shutdown)."""
        for sub in list(self.subscribers):
            self._end(sub)
        if self._ready is not None and not self._ready.done():
            self._ready.cancel()  # a run cancelled before it started would leave its joiners waiting
        task = self._task
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def _run(self, ready: asyncio.Future[None]) -> None:
        try:
            try:
                head = await run_in_threadpool(self.reads.head)
            except asyncio.CancelledError:
                ready.cancel()
                raise
            except Exception as e:  # the joiners fail with it; the next join tries again
                ready.set_exception(e)
                return
            self.position = head.seq
            ready.set_result(None)
            while True:
                # asyncio.timeout, not wait_for: on Python 3.11 wait_for drops a cancellation that
                # arrives as the wait ends, and stop() would then wait for this task for good
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self.settings.sse_poll):
                        await self.wake.wait()
                if not self.live:
                    return  # nobody to feed: stop polling (the next join starts a new run)
                self.wake.clear()
                await self._pull()
        finally:
            # no await between the last `live` check and here: a join sees either this run or none
            if self._task is asyncio.current_task():
                self._task = self._ready = None
                self.position = None

    async def _pull(self) -> None:
        """Read the events after the position once, and queue them for every live subscriber."""
        while self.live:
            assert self.position is not None
            try:
                rows = await run_in_threadpool(_read_encoded, self.reads, self.position, STREAM_BATCH)
            except Exception:
                # e.g. the database restarting: the subscribers wait, the next poll tries again
                if not self._failing:
                    log.exception("SSE notifier: reading new events failed; retrying every poll")
                self._failing = True
                return
            if self._failing:
                log.warning("SSE notifier: reading new events works again")
                self._failing = False
            if not rows:
                return
            self._fan_out(rows)
            self.position = rows[-1][0].seq
            if len(rows) < STREAM_BATCH:
                return

    def _fan_out(self, rows: list[tuple[StoredEvent, bytes]]) -> None:
        chunks: dict[tuple[str | None, str | None], Chunk | None] = {}
        for sub in list(self.live):
            key = (sub.stream, sub.type)
            if key not in chunks:
                picked = [(e.seq, m) for e, m in rows if _matches(e, sub.stream, sub.type)]
                chunks[key] = Chunk([s for s, _ in picked], [m for _, m in picked]) if picked else None
            chunk = chunks[key]
            if chunk is not None:
                sub.offer(chunk)


def _read_encoded(reads: Log, after: int, limit: int) -> list[tuple[StoredEvent, bytes]]:
    """The notifier's read, encoded in the worker thread (the event loop only hands bytes out)."""
    return [(e, sse_message(e)) for e in reads.read_log(after, limit)]


def _read_messages(
    reads: Log, after: int, limit: int, stream: str | None, type_: str | None
) -> tuple[bytes, int, int]:
    rows = reads.read_log(after, limit, stream, type_)
    return b"".join(sse_message(e) for e in rows), (rows[-1].seq if rows else after), len(rows)


async def follow(sub: Subscription, after: int) -> AsyncIterator[bytes]:
    """The stream of one subscriber: catch up from `after`, join the notifier, then live events."""
    notifier = sub.notifier
    settings = notifier.settings
    cursor = after
    yield b"retry: 1000\n: catching up after seq %d\n\n" % after
    try:
        # Alone first: nothing is queued for it however far behind it is, and it holds one read at a time.
        # Then joined: one more pass from the cursor reaches at least the position it joined at.
        for joined in (False, True):
            if joined:
                await notifier.join(sub)
            limit = STREAM_BATCH
            while True:
                data, last, count = await notifier.read(cursor, limit, sub.stream, sub.type)
                if data:
                    yield data
                    cursor = last
                if count < limit:
                    break
                # a read holds at most about one buffer of messages: big events, smaller reads
                big = len(data) > settings.sse_buffer
                limit = max(1, limit // 2) if big else min(STREAM_BATCH, limit * 2)
        sub.caught_up = True
        while True:
            try:
                # asyncio.timeout, not wait_for: on Python 3.11 wait_for drops a cancellation that
                # arrives as an event is queued, and the response of a client gone would never end
                async with asyncio.timeout(settings.sse_heartbeat):
                    await sub.ready.wait()
            except TimeoutError:
                # A comment line keeps proxies from closing an idle stream and detects a gone client.
                yield b": heartbeat\n\n"
                continue
            if sub.dropped.is_set():
                return
            out: list[bytes] = []
            for chunk in sub.take():
                out.append(chunk.after(cursor))  # drops what the last own read already sent
                cursor = max(cursor, chunk.last)
            data = b"".join(out)
            if data:
                yield data
    finally:
        sub.close()


class Live:
    """The SSE notifier of one app (per event loop), woken by the commits of this process's Ledger."""

    def __init__(self, ledger: Ledger, settings: Settings) -> None:
        self.ledger = ledger
        self.settings = settings
        self._notifier: Notifier | None = None
        ledger.intake.on_commit(self._committed)

    def notifier(self) -> Notifier:
        """The running event loop's notifier (a server process has one loop; a test may run several)."""
        loop = asyncio.get_running_loop()
        current = self._notifier
        if current is None or current.loop is not loop:
            # the subscribers of an earlier loop keep their own notifier until they leave
            current = self._notifier = Notifier(self.ledger.log, self.settings, loop)
        return current

    def _committed(self) -> None:
        current = self._notifier
        if current is not None:
            current.notify()

    async def stop(self) -> None:
        """End the current notifier's polling and subscriptions."""
        if self._notifier is not None:
            await self._notifier.stop()


async def start(live: Live) -> Stop:
    """Lifespan starter (app.BACKGROUND): the app's Live from startup, and its stop() for shutdown."""
    live.notifier()
    return live.stop
