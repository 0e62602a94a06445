"""Collections: named sets of papers, kept in the log as `collection.changed` events on the stream
`collection:{name}` (docs/choices.md, "Collections"), so their membership as the ledger knew it at any
instant is a fold of that stream's events recorded by then.

A collection is made by its first change; removing every paper leaves it made and empty. The doors
take paper ids as people paste them (ledger/model/ids.py); the events hold the canonical ids.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import msgspec

from ledger.model.codec import COLLECTION_NAME_RE, MAX_COLLECTION_NAME, check_collection_name
from ledger.model.errors import InvalidEvent, NotFound
from ledger.model.events import CollectionChanged, CollectionData, StoredEvent
from ledger.model.ids import normalise_arxiv
from ledger.model.instants import Clock, format_recorded, parse_instant
from ledger.model.jsonvalue import JsonIn

if TYPE_CHECKING:
    from ledger.storage.append import AppendResult
    from ledger.storage.interface import Store

PREFIX = "collection:"
TYPE = "collection.changed"
_DATA = msgspec.json.Decoder(CollectionData)


@dataclass(frozen=True)
class CollectionLimits:
    """What one change may hold: paper ids (added and removed together) and a name's characters."""

    max_ids: int = 5_000
    max_name: int = 64


# (variable, CollectionLimits field, meaning); api/settings.py lists them with the server's others
ENVIRONMENT: tuple[tuple[str, str, str], ...] = (
    ("LEDGER_COLLECTION_MAX_IDS", "max_ids", "paper ids one collection change may add and remove"),
    (
        "LEDGER_COLLECTION_MAX_NAME",
        "max_name",
        f"characters in a collection's name (at most {MAX_COLLECTION_NAME})",
    ),
)
_VARIABLE = {attr: name for name, attr, _ in ENVIRONMENT}


def limits_from_env(env: Mapping[str, str]) -> CollectionLimits:
    """The limits the LEDGER_COLLECTION_* variables set; ValueError naming a variable that is not a
    positive integer (or a name length past the event's own bound)."""
    given: dict[str, int] = {}
    for name, attr, _ in ENVIRONMENT:
        text = env.get(name, "").strip()
        if not text:
            continue
        if not text.isascii() or not text.isdigit() or int(text) < 1:
            raise ValueError(f"{name} must be a positive integer, got {text[:40]!r}")
        if attr == "max_name" and int(text) > MAX_COLLECTION_NAME:
            raise ValueError(f"{name} must be at most {MAX_COLLECTION_NAME} (a collection event's bound)")
        given[attr] = int(text)
    return CollectionLimits(**given)


def check_name(name: JsonIn, where: str, limits: CollectionLimits) -> str:
    """`name` if it may name a collection, else InvalidEvent naming `where` (and the setting when it is
    too long)."""
    if not isinstance(name, str):
        raise InvalidEvent(where, "a collection name is a string")
    if len(name) > limits.max_name:
        raise InvalidEvent(
            where,
            f"a collection name of {len(name)} characters; the limit is {limits.max_name} "
            f"({_VARIABLE['max_name']})",
            details={
                "where": where,
                "length": len(name),
                "limit": limits.max_name,
                "variable": _VARIABLE["max_name"],
            },
        )
    check_collection_name(name, where)
    return name


def _ids(values: JsonIn, where: str) -> list[str]:
    """A list of paper ids as pasted -> their canonical ids, each once, in order; InvalidEvent naming
    the first that names no arXiv paper."""
    if not isinstance(values, list):
        raise InvalidEvent(where, "a list of arXiv ids")
    out: dict[str, None] = {}
    for i, v in enumerate(values):
        if not isinstance(v, str):
            raise InvalidEvent(f"{where}[{i}]", "an arXiv id, a string")
        out[normalise_arxiv(v, f"{where}[{i}]")] = None
    return sorted(out)


def change_data(name: JsonIn, add: JsonIn, remove: JsonIn, limits: CollectionLimits) -> CollectionData:
    """A change as asked (ids in any form the routes take) -> the event's data, checked: names the field
    of the first refusal (`name`, `add[3]`, `remove`) and the setting of a cap passed."""
    name = check_name(name, "name", limits)
    adding, removing = _ids(add, "add"), _ids(remove, "remove")
    if not adding and not removing:
        raise InvalidEvent("add", "give at least one paper to add or remove")
    count = len(adding) + len(removing)
    if count > limits.max_ids:
        raise InvalidEvent(
            "add" if adding else "remove",
            f"{count} paper ids in one change; the limit is {limits.max_ids} ({_VARIABLE['max_ids']})",
            details={
                "where": "add" if adding else "remove",
                "ids": count,
                "limit": limits.max_ids,
                "variable": _VARIABLE["max_ids"],
            },
        )
    both = sorted(set(adding) & set(removing))
    if both:
        raise InvalidEvent("remove", f"{both[0]} is both added and removed in one change")
    return CollectionData(name, adding, removing)


def fold(
    events: Iterable[StoredEvent], known_at_us: int | None = None, upto_seq: int | None = None
) -> dict[str, set[str]]:
    """Each collection's members after these events (in seq order) recorded at or before `known_at_us`
    and, given `upto_seq`, at or before that seq (a head already read)."""
    out: dict[str, set[str]] = {}
    for e in events:
        if e.type != TYPE or (upto_seq is not None and e.seq > upto_seq):
            continue
        if known_at_us is not None and parse_instant(e.recorded_at) > known_at_us:
            continue
        d = _DATA.decode(e.data)
        members = out.setdefault(d.name, set())
        members.difference_update(d.remove)
        members.update(d.add)
    return out


class Changed(NamedTuple):
    """A change appended (or found already, a duplicate), and the collection's size after it."""

    data: CollectionData
    result: AppendResult
    members: int


class Collections:
    """The collections of one ledger: their membership as known at any instant, and changes to them."""

    def __init__(self, store: Store, clock: Clock) -> None:
        self._store = store
        self._clock = clock

    def members(
        self, name: str, known_at_us: int | None = None, *, upto_seq: int | None = None
    ) -> frozenset[str] | None:
        """The canonical arXiv ids in collection `name` as the ledger knew it at `known_at_us` (recorded
        time; None: now), or None for a collection not made by then (or a name no collection may have).
        `upto_seq` reads no change past that seq: the membership at a head read already."""
        if not 0 < len(name) <= MAX_COLLECTION_NAME or not COLLECTION_NAME_RE.fullmatch(name):
            return None  # never looked up: no event may carry it
        events = self._store.read_log(stream=PREFIX + name, type=TYPE)
        folded = fold(events, known_at_us, upto_seq).get(name)
        return None if folded is None else frozenset(folded)

    def names(self, known_at_us: int | None = None, *, upto_seq: int | None = None) -> list[str]:
        """The collections made by `known_at_us` (recorded time; None: now), by name."""
        return sorted(fold(self._store.read_streams(PREFIX, upto_seq), known_at_us))

    def sizes(self, known_at_us: int | None = None, *, upto_seq: int | None = None) -> dict[str, int]:
        """Each collection made by `known_at_us` and how many papers it held then, by name."""
        folded = fold(self._store.read_streams(PREFIX, upto_seq), known_at_us)
        return {n: len(m) for n, m in sorted(folded.items())}

    def history(self, name: str) -> list[StoredEvent]:
        """The changes of collection `name`, in seq order."""
        return self._store.read_log(stream=PREFIX + name, type=TYPE)

    def change(
        self, append: Callable[[Sequence[CollectionChanged]], AppendResult], data: CollectionData
    ) -> Changed:
        """Append `data` as one `collection.changed` through `append` (the Ledger's, which records the
        writer); NotFound when it only removes from a collection never made."""
        if not data.add and self.members(data.name) is None:
            raise NotFound(
                f"no collection {data.name!r}: a collection is made by adding papers to it",
                details={"name": data.name},
            )
        event = CollectionChanged(observed_at=format_recorded(self._clock.now_us()), data=data)
        result = append([event])
        return Changed(data, result, len(self.members(data.name) or ()))
