"""Waiting in tests: poll for a condition with a deadline, send bytes slowly, or let time pass on purpose.

Every sleep of the suite lives here (worker scripts the tests start import it too), so a slow or
flaky wait has one place to look. A wait is for a condition, bounded by a generous deadline that is
never an expectation of speed; a test that needs distinct instants moves `tests.factories.Clock`.
"""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")

EVERY_S = 0.05  # between two checks of a condition: short against any deadline, light on the CPU
TIMEOUT_S = 60.0  # the default bound: far past any wait a healthy run sees, even on a loaded machine

What = str | Callable[[], str]


def poll(predicate: Callable[[], T | None], timeout: float = TIMEOUT_S, every: float = EVERY_S) -> T | None:
    """predicate()'s first truthy value, checked every `every` s until `timeout` s have passed; else None."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        time.sleep(min(every, left))


def wait_until(
    predicate: Callable[[], T | None], what: What, timeout: float = TIMEOUT_S, every: float = EVERY_S
) -> T:
    """predicate()'s first truthy value; fails naming `what` (a text, or a function giving it) if none
    comes within `timeout` s. The predicate may itself fail a test (say, when a server died)."""
    value = poll(predicate, timeout, every)
    if not value:
        raise AssertionError(f"not reached in {timeout:g} s: {what if isinstance(what, str) else what()}")
    return value


async def until(predicate: Callable[[], object], what: str, timeout: float = TIMEOUT_S) -> None:
    """In an event loop: wait for a condition no event signals, checking it at each short turn."""
    try:
        async with asyncio.timeout(timeout):
            while not predicate():
                await asyncio.sleep(0.005)  # short: the loop's other tasks run in between
    except TimeoutError:
        raise AssertionError(f"not reached in {timeout:g} s: {what}") from None


def pause(seconds: float) -> None:
    """Let `seconds` pass on purpose, where the passing time is itself the case under test (a client
    idle between requests, a quiet spell in which a duplicate would show). Never to wait for something."""
    if seconds > 0:
        time.sleep(seconds)


def trickle(sock: socket.socket, data: bytes, pieces: int, every: float) -> None:
    """Send `data` as a slow client does: in `pieces` parts, pausing `every` s after each."""
    step = len(data) // pieces + 1
    for i in range(0, len(data), step):
        sock.sendall(data[i : i + step])
        pause(every)
