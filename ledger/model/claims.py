"""Resolutions that claim to be the ledger's own (resolver-v1.md): a `resolver_source` naming the
ledger's resolver (`citation-ledger/...`) or a person (`person:NAME`). Only the resolver's own appends
(`ledger resolve`, `POST /resolve`, `POST /resolve/person`) may write them, and an operator moving a
ledger (`ledger import --keep-resolver-events`); any other door refuses them, named."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from ledger.model.errors import InvalidEvent
from ledger.model.events import Event, ResolutionObserved

RESOLVER_PREFIX = "citation-ledger/"
PERSON_PREFIX = "person:"
KEEP_FLAG = "--keep-resolver-events"
_CLAIMS = ((RESOLVER_PREFIX, "the ledger's own resolver"), (PERSON_PREFIX, "a person"))


# the ASCII characters a reader does not see (controls and spaces), and what is left lower-cased
_ASCII = {c: None if chr(c).isspace() or not chr(c).isprintable() else chr(c).lower() for c in range(128)}
_ASCII_UNSEEN = "".join(chr(c) for c, seen in _ASCII.items() if seen is None)
_FIRSTS = frozenset(prefix[0] for prefix, _ in _CLAIMS)


def _folded(source: str) -> str:
    """The source as a reader would see it: compatibility forms folded, case folded, and the
    invisible characters (format, control, spaces) taken out, so `Citation-Ledger/`, a full-width
    `ｐerson:` or a zero-width space inside the prefix claim the same as the plain spelling."""
    if source.isascii():  # the usual case, in one pass in C: NFKC and casefold change no ASCII letter
        return source.translate(_ASCII)
    text = unicodedata.normalize("NFKC", source).casefold()
    return "".join(c for c in text if not (c.isspace() or unicodedata.category(c)[0] in "CZ"))


def claimed(source: str | None) -> str | None:
    """Whom a `resolver_source` claims to be (the ledger's resolver, a person), or None."""
    if not isinstance(source, str):  # None, or a value its type check refuses
        return None
    # most sources are ASCII and start with neither prefix's letter: known at the first one seen
    if source.isascii() and source.lstrip(_ASCII_UNSEEN)[:1].lower() not in _FIRSTS:
        return None
    folded = _folded(source)
    for prefix, whom in _CLAIMS:
        if folded.startswith(prefix):
            return whom
    return None


def refuse_claims(
    events: Sequence[Event], places: Sequence[str] | None = None, *, record: bool = False
) -> None:
    """InvalidEvent naming the first resolution that claims the ledger's resolver or a person: its place
    and field (`events[3].data.resolver_source`; a record's `outbound[3].resolution.resolver_source`)."""
    for i, e in enumerate(events):
        if type(e) is not ResolutionObserved:
            continue
        source = e.data.resolver_source
        whom = claimed(source)
        if source is None or whom is None:
            continue
        place = places[i] if places is not None else f"events[{i}]"
        where = f"{place}.resolver_source" if record else f"{place}.data.resolver_source"
        raise InvalidEvent(
            where,
            f"{source[:80]!r} claims {whom}: such resolutions are appended only by `ledger resolve`, "
            f"POST /resolve and POST /resolve/person (an operator moving a ledger: `ledger import "
            f"{KEEP_FLAG}`)",
            details={"where": where, "reason": "claims_resolver", "resolver_source": source[:200],
                     "claims": whom, "flag": KEEP_FLAG},
        )  # fmt: skip
