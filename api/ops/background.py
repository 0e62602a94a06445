"""A background thread of the app (the scrubber, the cosigner): started with a stop event, stopped by
the async stop() it returns, which the app's lifespan awaits on shutdown."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable

# How long shutdown waits for the thread: each stops between two steps (milliseconds to seconds each).
STOP_TIMEOUT_S = 10.0


def start_thread(
    name: str, run: Callable[[threading.Event], None], then: Callable[[], None] | None = None
) -> Callable[[], Awaitable[None]]:
    """Run `run(stop)` on a daemon thread; returns stop(): set `stop`, wait for the thread, then `then`."""
    stop = threading.Event()
    # a thread of its own, not the request pool: its work may take minutes, and its connection (and
    # PostgreSQL's session advisory lock) stays with that thread. The server answers meanwhile.
    thread = threading.Thread(target=run, args=(stop,), name=name, daemon=True)
    thread.start()

    async def stop_thread() -> None:
        stop.set()
        await asyncio.to_thread(thread.join, STOP_TIMEOUT_S)
        if then is not None:
            then()

    return stop_thread
