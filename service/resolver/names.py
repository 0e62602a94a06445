"""Whose names a person's resolution may carry (docs/resolver.md "Person names"): names checked as
Unicode TR39 says, by ICU's spoof checker, and names the operator bound to tokens.

A name may not mix scripts beyond TR39's "highly restrictive" level (one script, or Latin with Han and
Japanese kana, with Han and Bopomofo, or with Han and Hangul), may not start with the ledger's own
resolver prefix, and may not look like (share a TR39 skeleton with) a name bound to another token; a
token with names bound to it writes only those.
"""

from __future__ import annotations

import threading
import unicodedata
from collections.abc import Iterable
from typing import NamedTuple

import icu

from ledger.model.errors import InvalidEvent
from service.resolver.run import RESOLVER_PREFIX

LEVEL = "highly restrictive"  # TR39 restriction level a name may reach at most


def _checker() -> icu.SpoofChecker:
    checker = icu.SpoofChecker()
    checker.setRestrictionLevel(icu.URestrictionLevel.HIGHLY_RESTRICTIVE)
    checker.setChecks(icu.USpoofChecks.RESTRICTION_LEVEL | icu.USpoofChecks.INVISIBLE)
    return checker


_CHECKER = _checker()
_LOCK = threading.Lock()  # one checker, shared: ICU documents no concurrent use of one


class Binding(NamedTuple):
    """A person name the operator bound to a token (its sha256 hex)."""

    fingerprint: str
    name: str


class NotTheirs(Exception):
    """A name this token may not write: `reason` says whose it is (or looks like)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def tidy(name: str) -> str:
    """A name as compared with another: NFC, its runs of white space as one space, no edges."""
    return " ".join(unicodedata.normalize("NFC", name).split())


def skeleton(name: str) -> str:
    """The TR39 skeleton of a name, case and spacing set aside: two names that look alike share it."""
    with _LOCK:
        return str(_CHECKER.getSkeleton(0, tidy(name).casefold()))


def mixes_scripts(name: str) -> bool:
    """Whether a name goes past the LEVEL restriction level, or hides characters (TR39 checks)."""
    with _LOCK:
        return bool(_CHECKER.check(name))


_PREFIX_SKELETON = skeleton(RESOLVER_PREFIX)


def check_script(name: str, where: str = "by") -> None:
    """Refuse (InvalidEvent naming `where`) a name that mixes scripts or claims the ledger's resolver."""
    if tidy(name).casefold().startswith(RESOLVER_PREFIX) or skeleton(name).startswith(_PREFIX_SKELETON):
        raise InvalidEvent(
            where,
            f"a person's name may not start with {RESOLVER_PREFIX!r}: that is the ledger's own resolver",
        )
    if mixes_scripts(name):
        raise InvalidEvent(
            where,
            f"a person's name in one script (Unicode TR39 {LEVEL}: one script, or Latin with Han and "
            "kana, Han and Bopomofo, or Han and Hangul), with no hidden characters",
        )


def check_owner(name: str, fingerprint: str, bindings: Iterable[Binding]) -> None:
    """Refuse (NotTheirs) a name bound to another token or looking like one, and, for a token with
    names bound to it, any name but those."""
    own: list[str] = []
    key = skeleton(name)
    for b in bindings:
        if b.fingerprint == fingerprint:
            own.append(tidy(b.name))
        elif skeleton(b.name) == key:
            raise NotTheirs("this name is bound to another token, or looks like one that is")
    if own and tidy(name) not in own:
        raise NotTheirs(f"this token may write only the names bound to it: {', '.join(sorted(own))}")
