"""Timestamps: kept verbatim as strings, compared as integer UTC microseconds."""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from itertools import repeat
from operator import floordiv, sub
from typing import Final, Protocol

from ledger.model.errors import InvalidEvent

_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(?:\.(\d+))?([Zz]|[+-]\d{2}:\d{2})?"
)
_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_DAY_US = 86_400_000_000
_ONE_US = timedelta(microseconds=1)
# The instants a datetime spells in UTC: an offset may carry a wall time past them (9999-12-31T23:59-01:00).
MIN_US = (datetime(1, 1, 1, tzinfo=UTC) - _EPOCH) // _ONE_US
MAX_US = (datetime(9999, 12, 31, 23, 59, 59, 999999, tzinfo=UTC) - _EPOCH) // _ONE_US
# How far past the clock an instant may be: the skew allowed between the clocks of writers and the ledger.
FUTURE_SLACK_US = 5 * 60 * 1_000_000
# What a query's instant may be, said after every refusal of one (the HTTP 422s and the CLI's alike).
INSTANT_FORMS = "expected RFC 3339 with an offset or YYYY-MM-DD"

# The spelling most instants have (what the ledger and its writers produce): the same checks as
# parse_instant's (ASCII digits, at most 6 fractional digits, an offset within a day), so an instant it
# matches parses the same through fromisoformat alone.
_COMMON = (
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,6})?"
    r"(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"
)
_COMMON_LINES = re.compile(rf"(?:{_COMMON}\n)*{_COMMON}")
_COMMON_RE = re.compile(_COMMON)


def parse_instant(text: str) -> int:
    """RFC 3339 with offset -> UTC microseconds; ValueError names what is wrong (uncached; cached below)."""
    if type(text) is str and _COMMON_RE.fullmatch(text) is not None:
        # the common spelling: the checks below hold by its shape, fromisoformat does the rest (a day
        # the calendar has not, or an instant out of range, is refused below, and named)
        try:
            us = (datetime.fromisoformat(text) - _EPOCH) // _ONE_US
        except ValueError:
            us = MIN_US - 1
        if MIN_US <= us <= MAX_US:
            return us
    return _parse_spelled(text)


def _parse_spelled(text: str) -> int:
    """parse_instant of any spelling, each check made and named."""
    m = _RFC3339.fullmatch(text) if isinstance(text, str) else None
    if m is None:
        raise ValueError(f"not an RFC 3339 timestamp: {text!r}")
    frac, off = m.group(7), m.group(8)
    if off is None:
        raise ValueError(f"timestamp without offset: {text!r}")
    if frac is not None and len(frac) > 6:
        raise ValueError(f"more than 6 fractional digits: {text!r}")
    if len(off) == 6 and (int(off[1:3]) > 23 or int(off[4:6]) > 59):
        raise ValueError(f"invalid offset in {text!r}")
    try:
        # the regex fixed the shape; fromisoformat (C code) does the calendar and offset math
        dt = datetime.fromisoformat(text.upper().replace("Z", "+00:00"))
    except ValueError as e:
        raise ValueError(f"invalid timestamp {text!r}: {e}") from None
    us = (dt - _EPOCH) // _ONE_US
    if not MIN_US <= us <= MAX_US:
        raise ValueError(f"{text!r} is outside 0001-01-01T00:00:00Z..9999-12-31T23:59:59.999999Z in UTC")
    return us


# The read paths parse the same events' instants on every request (a record's projection, its
# timeline), so they share this cache. The write and verify paths parse each event's instants once: an
# import of millions of events would fill it (14 MB at 65,536 entries) with instants nobody reads again.
parse_ts = lru_cache(maxsize=65536)(parse_instant)
# So the write and verify paths call this one instead. They meet an instant again only close by: a
# record's events share their observed_at, a batch its recorded_at. It keeps those and no more (200 kB).
parse_near = lru_cache(maxsize=1024)(parse_instant)


def parse_as_of(text: str) -> int:
    """A request's as_of/known_at: RFC 3339 with offset, or YYYY-MM-DD = end of that day UTC."""
    m = _DATE.fullmatch(text)
    if m is not None:
        try:
            day = datetime(int(m[1]), int(m[2]), int(m[3]), tzinfo=UTC)
        except ValueError as e:
            raise ValueError(f"invalid date {text!r}: {e}") from None
        return (day - _EPOCH) // timedelta(microseconds=1) + _DAY_US - 1
    return parse_ts(text)


def read_instant(value: str, where: str, now: int, *, future: bool = False) -> int:
    """A query's instant (as_of, known_at, from, to) in UTC microseconds; InvalidEvent naming `where`
    when it is no instant (with the forms accepted) or, unless `future`, lies past `now` by more than
    the clock skew appends allow: the ledger cannot know what it will hold then."""
    try:
        us = parse_as_of(value)
    except ValueError as e:
        raise InvalidEvent(where, f"{e}; {INSTANT_FORMS}") from None
    if future:
        return us
    if us > now + FUTURE_SLACK_US:
        shown = format_as_of(now - now % 1_000_000)  # to the second: what a reader compares
        reason = (
            f"{value!r} is in the future (now is {shown}); the ledger cannot know what it will hold then: "
            f"give an instant at most {FUTURE_SLACK_US // 60_000_000} minutes past now"
        )
        raise InvalidEvent(where, reason, details={"where": where, "reason": reason, "now": shown})
    return us


def to_datetime(us: int) -> datetime:
    """UTC microseconds -> aware datetime."""
    return _EPOCH + timedelta(microseconds=us)


def format_as_of(us: int) -> str:
    """The record's as_of spelling: seconds, plus .ffffff only when not zero, then Z."""
    dt = to_datetime(us)
    base = dt.strftime("%Y-%m-%dT%H:%M:%S")
    return f"{base}.{dt.microsecond:06d}Z" if dt.microsecond else f"{base}Z"


def format_recorded(us: int) -> str:
    """recorded_at spelling: always six fractional digits."""
    return to_datetime(us).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Clock(Protocol):
    """What "now" is, in UTC microseconds: one object, made where a program starts and passed to
    everything that records or compares an instant, so a test that fixes it fixes it everywhere."""

    def now_us(self) -> int:
        """Now, in UTC microseconds."""
        ...


class SystemClock:
    """The system's clock: the only reader of the time of day in the product."""

    def now_us(self) -> int:
        """Now, in UTC microseconds."""
        return time.time_ns() // 1000


# The process's clock: a Ledger opened without one takes it, as does a command's reading of an instant.
SYSTEM_CLOCK: Final[Clock] = SystemClock()


def max_ts(values: Iterable[str]) -> str | None:
    """The string whose instant is greatest; on a tie, the greater string."""
    best: tuple[int, str] | None = None
    for v in values:
        key = (parse_ts(v), v)
        if best is None or key > best:
            best = key
    return None if best is None else best[1]


def parse_instants(texts: list[str]) -> list[int]:
    """parse_instant of each text, in order; ValueError if any is no instant. Many texts of the common
    spelling are checked by one regex call over them all and parsed by compiled calls alone (no Python
    a text); any other spelling goes through parse_instant."""
    if not texts:
        return []
    joined = "\n".join(texts)  # TypeError for a text that is no string
    if joined.count("\n") != len(texts) - 1 or _COMMON_LINES.fullmatch(joined) is None:
        return [parse_instant(t) for t in texts]
    try:
        dts = map(datetime.fromisoformat, texts)
        us = list(map(floordiv, map(sub, dts, repeat(_EPOCH)), repeat(_ONE_US)))
    except ValueError:
        us = [MIN_US - 1]
    if min(us) < MIN_US or max(us) > MAX_US:
        return [parse_instant(t) for t in texts]  # to name the one refused
    return us
