"""Interoperable JSON (I-JSON, RFC 7493): the one parser of request bodies and imported files.

ledger-v1.md requires every body to be I-JSON, so that any client in any language recomputes the same
hashes and every backend stores the same bytes. One parse does the common case at C speed; only a
refused body is parsed again, slowly, to name the first offending place in document order.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import NoReturn, TypeAlias

from ledger.model.errors import InvalidEvent
from ledger.model.jsonvalue import Json, JsonObject

# RFC 7493 section 2.2: integers an IEEE 754 double holds exactly (what a JavaScript verifier can hold).
MAX_SAFE_INTEGER = 2**53 - 1
# JSON integers have no leading zeroes, so one with more digits than MAX_SAFE_INTEGER is out of range.
# Counting first keeps int() off long digit strings: past 4,300 digits it raises ValueError, and below
# that it still takes time quadratic in the length.
_SAFE_DIGITS = len(str(MAX_SAFE_INTEGER))
# Deeper than any record or event (they nest 6 levels): a bound, so no walker can overflow the stack.
MAX_DEPTH = 64

FLOAT = "floats are not allowed (use integers or strings)"
NOT_A_NUMBER = "NaN and Infinity are not JSON numbers"
BIG_INTEGER = f"integers must be within +-(2^53-1) = +-{MAX_SAFE_INTEGER} (I-JSON, RFC 7493)"
DUPLICATE_KEY = "a duplicate object key (JSON parsers disagree on which one wins; I-JSON, RFC 7493)"
NUL = "the character U+0000 is not allowed (PostgreSQL text cannot store it; I-JSON, RFC 7493)"
SURROGATE = "a lone surrogate escape is not a Unicode character (I-JSON, RFC 7493)"
TOO_DEEP = f"nested deeper than {MAX_DEPTH} levels"

_NUL_ESCAPE = re.compile(r"\\u0000")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_SURROGATE = re.compile("[\ud800-\udfff]")
# the structure of a body: quotes and brackets only, then brackets only (see _too_deep)
_KEEP = b'"[]{}'
_DROP = bytes(b for b in range(256) if b not in _KEEP)


class _Refused(Exception):
    """Raised by the fast parse's hooks: the body is refused; the slow pass names where."""


def _pairs(pairs: list[tuple[str, Json]]) -> JsonObject:
    d = dict(pairs)
    if len(d) != len(pairs):
        raise _Refused
    return d


def _safe_int(text: str) -> int | None:
    """The integer a JSON number text spells, or None when it is beyond +-MAX_SAFE_INTEGER."""
    if len(text) - text.startswith("-") > _SAFE_DIGITS:
        return None
    value = int(text)
    return value if -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER else None


def _int(text: str) -> int:
    value = _safe_int(text)
    if value is None:
        raise _Refused
    return value


def _refuse(_: str) -> NoReturn:
    raise _Refused


def loads(raw: bytes | str, where: str = "") -> Json:
    """I-JSON text -> Python values; InvalidEvent names the first place (after `where`) that breaks a rule."""
    try:
        text = raw if isinstance(raw, str) else bytes(raw).decode("utf-8")
    except UnicodeDecodeError as e:
        raise InvalidEvent(where, f"not UTF-8 ({e.reason} at byte {e.start})") from None
    try:
        value = json.loads(
            text, object_pairs_hook=_pairs, parse_int=_int, parse_float=_refuse, parse_constant=_refuse
        )
    except _Refused:
        _raise_first(text, where)
        raise AssertionError("the fast parse refused what the slow one accepts") from None
    except json.JSONDecodeError as e:
        raise InvalidEvent(where, f"not valid JSON ({e.msg} at character {e.pos})") from None
    except RecursionError:
        raise InvalidEvent(where, TOO_DEEP) from None
    if _too_deep(raw) or _NUL_ESCAPE.search(text) or _SURROGATE_ESCAPE.search(text):
        _raise_first(text, where)  # returns only when the escapes were harmless (\\u0000, surrogate pairs)
    return value


def _too_deep(raw: bytes | str) -> bool:
    """Whether brackets nest deeper than MAX_DEPTH (the text parsed, so it is well formed)."""
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else bytes(raw)
    if data.count(b"[") + data.count(b"{") <= MAX_DEPTH:
        return False
    # Escapes come in pairs in valid JSON: without them, a quote always opens or closes a string,
    # and what is left of the strings between quotes goes with them. All at C speed.
    if b"\\" in data:
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    skeleton = data.translate(None, _DROP)
    skeleton = b"".join(skeleton.split(b'"')[::2])  # outside the quotes
    for _ in range(MAX_DEPTH):
        if not skeleton:
            return False
        # each pass removes the innermost level: a text of depth d is empty after d passes
        skeleton = skeleton.replace(b"[]", b"").replace(b"{}", b"")
    return bool(skeleton)


# -- the slow pass: parse again keeping everything, then walk in document order --------------------


class _Pairs(list[tuple[str, "_Parsed"]]):
    """An object's members as parsed, duplicates kept."""


class _Number:
    """A number the fast parse refused, kept to be named."""

    def __init__(self, reason: str) -> None:
        self.reason = reason


# what either parse gives: JSON values, and (from the slow one) members with duplicates kept and numbers
# kept to be named
_Parsed: TypeAlias = (
    None | bool | int | float | str | _Number | _Pairs | Sequence["_Parsed"] | Mapping[str, "_Parsed"]
)


def _slow_int(text: str) -> int | _Number:
    value = _safe_int(text)
    return _Number(BIG_INTEGER) if value is None else value


def _raise_first(text: str, where: str) -> None:
    try:
        value = json.loads(
            text,
            object_pairs_hook=_Pairs,
            parse_int=_slow_int,
            parse_float=lambda _: _Number(FLOAT),
            parse_constant=lambda _: _Number(NOT_A_NUMBER),
        )
    except RecursionError:
        raise InvalidEvent(where, TOO_DEEP) from None
    except json.JSONDecodeError as e:
        # the fast parse stopped at a refused value before it reached this: the text is not JSON at all
        raise InvalidEvent(where, f"not valid JSON ({e.msg} at character {e.pos})") from None
    found = first_problem(value, where)
    if found is not None:
        raise InvalidEvent(*found)


def first_problem(value: _Parsed, where: str = "") -> tuple[str, str] | None:
    """(place, reason) of the first value, in document order, that I-JSON or the ledger refuses."""
    return next(_problems(value, where), None)


def nul_place(encoded: bytes | str, where: str = "") -> str | None:
    """Where stored JSON holds U+0000 (in a string or a key), else None; a scan unless the escape is there."""
    found = b"\\u0000" in encoded if isinstance(encoded, bytes) else "\\u0000" in encoded
    if not found:
        return None
    # the escape may be a harmless escaped backslash before "u0000": parse and look at the strings
    return next((place for place, reason in _problems(json.loads(encoded), where) if reason == NUL), None)


def _problems(value: _Parsed, where: str) -> Iterator[tuple[str, str]]:
    """Every (place, reason) I-JSON or the ledger refuses, in document order (not below a refused key)."""
    stack: list[tuple[str, _Parsed, int]] = [(where, value, 1)]
    while stack:
        place, v, depth = stack.pop()
        here = place or "$"
        if isinstance(v, _Number):
            yield here, v.reason
        elif isinstance(v, float):
            yield here, FLOAT
        elif (
            isinstance(v, int) and not isinstance(v, bool) and not -MAX_SAFE_INTEGER <= v <= MAX_SAFE_INTEGER
        ):
            yield here, BIG_INTEGER
        elif isinstance(v, str):
            reason = _string_problem(v)
            if reason is not None:
                yield here, reason
        elif isinstance(v, _Pairs | dict | list) and depth > MAX_DEPTH:
            yield where or "$", TOO_DEEP  # its place would be 64 steps long
        elif isinstance(v, _Pairs | dict):
            members = list(v) if isinstance(v, _Pairs) else list(v.items())
            seen: set[str] = set()
            children: list[tuple[str, _Parsed, int]] = []
            for k, child in members:
                key_place = f"{place}.{k}" if place else str(k)
                reason = DUPLICATE_KEY if k in seen else _string_problem(k)
                if reason is not None and reason != DUPLICATE_KEY:
                    key_place = f"{place}.{ascii(k)}" if place else ascii(k)  # shown escaped
                if reason is not None:
                    # a key is named by its place; the members before it are checked first
                    children.append((key_place, _Number(reason), depth + 1))
                    break
                seen.add(k)
                children.append((key_place, child, depth + 1))
            stack.extend(reversed(children))
        elif isinstance(v, list):
            stack.extend((f"{place}[{i}]", v[i], depth + 1) for i in range(len(v) - 1, -1, -1))


def _string_problem(s: str) -> str | None:
    if "\x00" in s:
        return NUL
    if _SURROGATE.search(s):
        return SURROGATE
    return None
