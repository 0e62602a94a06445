"""Write limits that protect a shared ledger: the longest string in a body, events per second per token."""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable

from ledger.model.jsonvalue import JsonIn


def long_string(value: JsonIn, limit: int, where: str = "") -> tuple[str, int] | None:
    """The place and length of the first string (or object key) longer than `limit` characters, if any.

    `where` is the prefix of the places named, e.g. "" for a record (`outbound[3].cited_work.title`)
    or the body's own paths for a batch (`events[2].data.title`).
    """
    stack: list[tuple[str, JsonIn]] = [(where, value)]
    while stack:
        place, v = stack.pop()
        if isinstance(v, str):
            if len(v) > limit:
                return place or "$", len(v)
        elif isinstance(v, dict):
            items = list(v.items())
            # reversed, so the first offender in document order is the one named
            for k, child in reversed(items):
                key_place = f"{place}.{k}" if place else str(k)
                if isinstance(k, str) and len(k) > limit:
                    return f"{place or '$'} (a key)", len(k)
                stack.append((key_place, child))
        elif isinstance(v, list):
            for i in range(len(v) - 1, -1, -1):
                stack.append((f"{place}[{i}]", v[i]))
    return None


def short_strings(raw: bytes, limit: int) -> bool:
    """True when no string (or key) of the JSON text `raw` can be longer than `limit` characters.

    A string's characters are at most its bytes, and with no escaped quote in the text each string
    lies inside one stretch between two quotes; False means only "not proven" (walk the value).
    """
    if len(raw) <= limit:
        return True
    return b'\\"' not in raw and max(map(len, raw.split(b'"'))) <= limit


class RateLimiter:
    """A token bucket per key (a token's hash): `rate` events per second, at most `burst` saved up.

    A write is let in while its key's bucket is not in debt, then charged for all its events, so one
    batch larger than the bucket still goes through once and the next waits for the debt to clear.
    """

    def __init__(self, rate: float, burst: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.rate = rate
        self.burst = burst
        self.clock = clock
        self._levels: dict[str, tuple[float, float]] = {}  # key -> (level, at)
        self._lock = threading.Lock()

    def _level(self, key: str, now: float) -> float:
        level, at = self._levels.get(key, (self.burst, now))
        return min(self.burst, level + (now - at) * self.rate)

    def wait(self, key: str) -> float:
        """Seconds until `key` may write again; 0 when it may write now."""
        with self._lock:
            now = self.clock()
            level = self._level(key, now)
            self._levels[key] = (level, now)
            # in debt (or exactly empty): wait until the bucket holds more than nothing
            return 0.0 if level > 0 else max(-level / self.rate, 1e-3)

    def charge(self, key: str, events: int) -> None:
        """Take `events` from `key`'s bucket (it may go into debt)."""
        with self._lock:
            now = self.clock()
            self._levels[key] = (self._level(key, now) - events, now)
            if len(self._levels) > 10_000:  # forget full buckets, so many keys cannot grow memory
                self._levels = {k: v for k, v in self._levels.items() if self._level(k, now) < self.burst}


def retry_after(seconds: float) -> str:
    """A Retry-After header value: whole seconds, at least 1."""
    return str(max(1, math.ceil(seconds)))
