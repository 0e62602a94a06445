"""Canonical encoding, strict decoding and the input rules of ledger-v1.md."""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, TypeAlias

import msgspec

from ledger.model import ijson
from ledger.model.doi import doi_syntax_error, normalize_doi
from ledger.model.errors import InvalidEvent
from ledger.model.events import (
    DATA_TYPES,
    CitationObserved,
    CitedWork,
    CollectionChanged,
    Event,
    MeasurementObserved,
    PaperObserved,
    ResolutionObserved,
    StandingChecked,
    StoredEvent,
    WorkObserved,
)
from ledger.model.instants import FUTURE_SLACK_US, parse_near
from ledger.model.jsonvalue import Json, JsonIn, JsonObject

# what the canonical encoder takes: JSON values, with Structs (encoded by their fields) and Raw (its
# bytes as they are) anywhere among them
Encodable: TypeAlias = (
    None
    | bool
    | int
    | float
    | str
    | msgspec.Struct
    | msgspec.Raw
    | Sequence["Encodable"]
    | Mapping[str, "Encodable"]
    # a TypedDict: mypy sees its values only as object; msgspec checks each as it encodes
    | Mapping[str, object]
)

_ENCODER = msgspec.json.Encoder(order="sorted")
_EVENT_DECODER = msgspec.json.Decoder(Event)
_DATA_DECODERS = {name: msgspec.json.Decoder(t) for name, t in DATA_TYPES.items()}

UUID_RE = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
ARXIV_RE = re.compile(r"\d{4}\.\d{4,5}|[a-z]+(?:-[a-z]+)*(?:\.[A-Z]{2})?/\d{7}")
# a collection's name is a path segment and a stream's suffix: letters, digits and . _ -, a letter or
# digit first (so never "." or ".."), compared as given (case kept)
COLLECTION_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
MAX_COLLECTION_NAME = 128  # the event's own bound; a server may take a lower one (LEDGER_COLLECTION_NAME_MAX)
_FIELD_RE = re.compile(r"Object (missing required|contains unknown) field `(.*)`")


def canonical(value: Encodable) -> bytes:
    """Sorted keys, no whitespace, UTF-8 as itself: the one encoding that is hashed."""
    return _ENCODER.encode(value)


def digest(value: Encodable) -> str:
    """ "sha256:" + sha256(canonical(value)).hexdigest(): the digest rule of record-v1.md."""
    return "sha256:" + hashlib.sha256(canonical(value)).hexdigest()


def observation_digest(observation: Mapping[str, Encodable] | msgspec.Struct) -> str:
    """The observation_digest of a record's observation (built or as read): its content without that key."""
    return digest(_without(observation, ("observation_digest",)))


def context_digest(record: Mapping[str, Encodable] | msgspec.Struct) -> str:
    """The context_digest of a record (built or as read): its content without as_of and context_digest."""
    return digest(_without(record, ("as_of", "context_digest")))


def _without(value: Mapping[str, Encodable] | msgspec.Struct, keys: tuple[str, ...]) -> dict[str, Encodable]:
    # one level shallow: the values below are encoded as they are (a Struct by its own fields); neither
    # an Observation nor a Record has a field that encoding leaves out, so asdict holds what is hashed
    if isinstance(value, msgspec.Struct):
        fields = msgspec.structs.asdict(value)
        for k in keys:
            del fields[k]
        return fields
    return {k: v for k, v in value.items() if k not in keys}


def decode_json(raw: bytes | str, where: str = "") -> Json:
    """A body or a line -> Python values, refused unless it is I-JSON with no floats (ijson.loads)."""
    return ijson.loads(raw, where)


def msgspec_where(err: msgspec.ValidationError, prefix: str) -> tuple[str, str]:
    """Split msgspec's "reason - at `$.a.b`" into (prefix.a.b, reason)."""
    text = str(err)
    reason, sep, at = text.rpartition(" - at `")
    if not sep:
        reason, at = text, "$`"
    where = prefix + at.rstrip("`").removeprefix("$")
    if not prefix:
        where = where.removeprefix(".")
    m = _FIELD_RE.fullmatch(reason)
    if m:
        where, reason = f"{where}.{m[2]}", f"{m[1]} field"
    return where, reason


def decode_data(type_name: str, raw: bytes) -> Any:
    """Stored canonical data bytes -> the typed data Struct of that event type."""
    return _DATA_DECODERS[type_name].decode(raw)


def to_event(value: JsonIn, where: str) -> Event:
    """A decoded JSON object -> a typed event, or InvalidEvent naming `where` and the field."""
    if not isinstance(value, dict):
        raise InvalidEvent(where, "an event must be a JSON object")
    if "type" not in value:
        raise InvalidEvent(f"{where}.type", "missing; one of " + ", ".join(DATA_TYPES))
    if not isinstance(value["type"], str) or value["type"] not in DATA_TYPES:
        raise InvalidEvent(
            f"{where}.type",
            f"unknown event type {value['type']!r}; one of " + ", ".join(DATA_TYPES),
        )
    try:
        event: Event = msgspec.convert(value, Event, strict=True)
    except msgspec.ValidationError as e:
        w, reason = msgspec_where(e, where)
        raise InvalidEvent(w, reason) from None
    check_rules(event, where, None)
    return event


def check_types(event: Event, where: str) -> None:
    """Re-check the types of an event built in code (Struct constructors do not validate)."""
    # Fast path: a strict JSON round trip that gives back an equal event proves it well typed (about
    # 12x cheaper than building the builtins); anything else (a type error, or a value JSON changes,
    # such as a NaN that encodes as null) gets the exact check and its message.
    try:
        if _STRICT_EVENT.decode(_EVENT_JSON.encode(event)) == event:
            return
    except (msgspec.ValidationError, TypeError):
        pass
    try:
        msgspec.convert(msgspec.to_builtins(event), Event, strict=True)
    except msgspec.ValidationError as e:
        raise InvalidEvent(*msgspec_where(e, where)) from None


_STRICT_EVENT = msgspec.json.Decoder(Event, strict=True)
_EVENT_JSON = msgspec.json.Encoder()


def decode_event(raw: bytes | str, where: str = "event") -> Event:
    """JSON bytes of one envelope -> a typed, rule-checked event."""
    if isinstance(raw, bytes):
        fast = quick_event(raw)
        if fast is not None:
            check_rules(fast, where, None)
            return fast
    return to_event(decode_json(raw, where), where)


def quick_event(raw: bytes) -> Event | None:
    """The event of one envelope's JSON by msgspec's decoder alone, when that is provably the event
    `to_event(decode_json(raw))` gives; None when it may not be (then take that exact path, which also
    names what is wrong). The rules (`check_rules`) are the caller's to apply.

    msgspec's decoder refuses what is not JSON or not UTF-8, unknown and missing fields, floats and
    every wrong type, as the exact path does; what it would let through is kept out: U+0000 and lone
    surrogates (only spelled as escapes), an integer of 16 digits or more (beyond +-(2^53-1)), and a
    repeated key, which it takes the last of. Every key is followed by a colon, and with no colon
    spelled as an escape every other colon of the text is one of its strings; the decoded event,
    encoded, has a colon for each of its fields and the same strings, so the two counts differ by
    exactly the repeated keys (and by the event_id, if the text leaves it out).
    """
    if not _plain(raw):
        return None
    try:
        event: Event = _EVENT_DECODER.decode(raw)
        named = _NAMED.decode(raw).event_id is not msgspec.UNSET
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    if raw.count(b":") != _EVENT_JSON.encode(event).count(b":") - (not named):
        return None
    return event


def plain_event(raw: bytes) -> Event:
    """msgspec's decoder alone (msgspec.MsgspecError when it refuses): `quick_event` without the proof
    that it is exact, for bytes that proof was made for already."""
    return _EVENT_DECODER.decode(raw)


def quick_body(raw: bytes) -> tuple[list[Event], dict[str, int] | None] | None:
    """The events and expected_versions of a POST /events body, by the rules of `quick_event` (one
    envelope); None when they may not be what the exact path gives (`importer.parse_batch`)."""
    if not _plain(raw):
        return None
    try:
        body = _BODY.decode(raw)
        named = _BODY_NAMED.decode(raw)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    # the body's own colons: "events", and "expected_versions" (its streams' names hold colons too)
    colons = 1 + (named.expected_versions is not msgspec.UNSET)
    colons += _EVENT_JSON.encode(body.expected_versions or {}).count(b":")
    colons += sum(_EVENT_JSON.encode(e).count(b":") for e in body.events)
    colons -= sum(n.event_id is msgspec.UNSET for n in named.events)
    if raw.count(b":") != colons:
        return None
    return body.events, body.expected_versions


def _plain(raw: bytes) -> bool:
    """No escape that the colon count or the rules must not meet, no integer of 16 digits or more."""
    if b"\\u" in raw and _ESCAPES.search(raw):
        return False
    return b"0000000000000000" not in raw.translate(_DIGITS)


class _Named(msgspec.Struct):
    """Whether an envelope's text has an event_id key (null or not), its other keys skipped."""

    event_id: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET


_NAMED = msgspec.json.Decoder(_Named)


class _Body(msgspec.Struct, forbid_unknown_fields=True):
    events: list[Event]
    expected_versions: dict[str, Annotated[int, msgspec.Meta(ge=0)]] | None = None


class _BodyNamed(msgspec.Struct):
    events: list[_Named]
    expected_versions: msgspec.Raw | msgspec.UnsetType = msgspec.UNSET


_BODY = msgspec.json.Decoder(_Body)
_BODY_NAMED = msgspec.json.Decoder(_BodyNamed)
# U+0000, a colon, a surrogate: the escapes that the counts or the rules must not meet
_ESCAPES = re.compile(rb"\\u(?:00(?:00|3[aA])|[dD][89abAB])")
_DIGITS = bytes(48 if 48 <= b <= 57 else 120 for b in range(256))  # digits to 0, the rest to x


def check_instant(value: str, where: str) -> int:
    """The instant in microseconds since the epoch, or InvalidEvent naming `where`."""
    try:
        return parse_near(value)
    except ValueError as e:
        raise InvalidEvent(where, str(e)) from None


def check_arxiv(value: str, where: str) -> None:
    """InvalidEvent naming `where` unless `value` is an arXiv id without version."""
    if not ARXIV_RE.fullmatch(value):
        raise InvalidEvent(
            where,
            f"bad arXiv id {value!r}: expected NNNN.NNNNN or archive/NNNNNNN, no version suffix",
        )


def _uuid(value: str, where: str) -> None:
    if not UUID_RE.fullmatch(value):
        raise InvalidEvent(where, f"bad UUID {value!r}: expected lowercase 8-4-4-4-12 hex")


def _work(work: CitedWork | None, where: str) -> None:
    if work is not None:
        check_instant(work.snapshot_observed_at, f"{where}.snapshot_observed_at")
        _safe_int(work.year, f"{where}.year")


def _safe_int(value: int | None, where: str) -> None:
    # the data's only integers; a body was checked when parsed, an event built in code is checked here
    if value is not None and not -ijson.MAX_SAFE_INTEGER <= value <= ijson.MAX_SAFE_INTEGER:
        raise InvalidEvent(where, ijson.BIG_INTEGER)


def check_ijson_data(data: bytes, where: str) -> None:
    """Refuse U+0000 in the encoded data of an event (the encoder escapes it, so a scan finds it)."""
    place = ijson.nul_place(data, f"{where}.data")
    if place is not None:
        raise InvalidEvent(place, ijson.NUL)


def check_rules(event: Event, where: str, now: int | None) -> int:
    """The rules beyond types (ledger-v1.md "Appending") that need no ledger state; "not in the
    future" against `now` (the ledger's clock), or not at all when None (a decoder, whose events the
    append checks against the clock it records them with). Returns the event's observed_at in UTC
    microseconds (parsed for the rule, kept by a caller that stores it)."""
    observed = check_instant(event.observed_at, f"{where}.observed_at")
    if now is not None and observed > now + FUTURE_SLACK_US:
        raise InvalidEvent(f"{where}.observed_at", "more than 5 minutes in the future")
    if event.event_id is not None:
        _uuid(event.event_id, f"{where}.event_id")
    d = f"{where}.data"
    if isinstance(event, PaperObserved):
        check_arxiv(event.data.arxiv_id, f"{d}.arxiv_id")
        check_instant(event.data.submitted_at, f"{d}.submitted_at")
        check_instant(event.data.last_updated, f"{d}.last_updated")
        _safe_int(event.data.version, f"{d}.version")
    elif isinstance(event, CitationObserved):
        _uuid(event.data.observation_id, f"{d}.observation_id")
        check_arxiv(event.data.citing_arxiv_id, f"{d}.citing_arxiv_id")
        _safe_int(event.data.reference_index, f"{d}.reference_index")
        _work(event.data.cited_work, f"{d}.cited_work")
    elif isinstance(event, ResolutionObserved):
        _uuid(event.data.observation_id, f"{d}.observation_id")
        if event.data.cited_arxiv_id is not None:
            check_arxiv(event.data.cited_arxiv_id, f"{d}.cited_arxiv_id")
        _work(event.data.cited_work, f"{d}.cited_work")
    elif isinstance(event, StandingChecked):
        _check_standing(event, d)
    elif isinstance(event, MeasurementObserved):
        check_arxiv(event.data.arxiv_id, f"{d}.arxiv_id")
        _safe_int(event.data.value, f"{d}.value")
    elif isinstance(event, WorkObserved):
        _check_work(event, d)
    elif isinstance(event, CollectionChanged):
        _check_collection(event, d)
    return observed


def check_collection_name(name: str, where: str, most: int = MAX_COLLECTION_NAME) -> None:
    """InvalidEvent naming `where` unless `name` is a collection name of at most `most` characters."""
    if not 0 < len(name) <= most:
        raise InvalidEvent(where, f"a collection name is 1 to {most} characters, not {len(name)}")
    if not COLLECTION_NAME_RE.fullmatch(name):
        raise InvalidEvent(
            where,
            f"bad collection name {name[:80]!r}: letters, digits, '.', '_' and '-', a letter or digit first",
        )


def _check_collection(event: CollectionChanged, d: str) -> None:
    c = event.data
    check_collection_name(c.name, f"{d}.name")
    if not c.add and not c.remove:
        raise InvalidEvent(f"{d}.add", "a change adds or removes at least one paper")
    for field, ids in (("add", c.add), ("remove", c.remove)):
        seen: set[str] = set()
        for i, arxiv_id in enumerate(ids):
            check_arxiv(arxiv_id, f"{d}.{field}[{i}]")
            if arxiv_id in seen:
                raise InvalidEvent(f"{d}.{field}[{i}]", f"{arxiv_id} is listed twice")
            seen.add(arxiv_id)
    both = sorted(set(c.add) & set(c.remove))
    if both:
        raise InvalidEvent(f"{d}.remove", f"{both[0]} is both added and removed in one change")


def _check_work(event: WorkObserved, d: str) -> None:
    w = event.data
    if normalize_doi(w.doi) != w.doi:
        raise InvalidEvent(f"{d}.doi", f"bad DOI {w.doi!r}: expected the normalised form, e.g. 10.1234/abc")
    wrong = doi_syntax_error(w.doi)
    if wrong is not None:
        raise InvalidEvent(
            f"{d}.doi", f"bad DOI {w.doi[:80]!r}: it {wrong}; expected the normalised form, e.g. 10.1234/abc"
        )
    if not w.source.strip():
        raise InvalidEvent(f"{d}.source", "must not be empty")
    _safe_int(w.year, f"{d}.year")
    if w.arxiv_id is not None:
        check_arxiv(w.arxiv_id, f"{d}.arxiv_id")


def _check_standing(event: StandingChecked, d: str) -> None:
    if not event.data.source:
        raise InvalidEvent(f"{d}.source", "must not be empty")
    covered = None if event.data.work_ids is None else set(event.data.work_ids)
    if covered is not None and len(covered) != len(event.data.work_ids or ()):
        raise InvalidEvent(f"{d}.work_ids", "lists a work more than once")
    seen: set[bytes] = set()
    for i, notice in enumerate(event.data.notices):
        body = canonical(notice)
        if body in seen:
            raise InvalidEvent(f"{d}.notices[{i}]", "the same notice is listed twice in one check")
        seen.add(body)
        if covered is not None and notice.work_id not in covered:
            raise InvalidEvent(
                f"{d}.notices[{i}].work_id",
                f"{notice.work_id!r} is not among the work_ids this check covered",
            )


def derived_event_id(event: Event, data: bytes | None = None) -> str:
    """uuid5(NAMESPACE_URL, canonical({data, observed_at, type})): same fact, same id."""
    return derived_id(canonical(event.data) if data is None else data, event.observed_at, type_of(event))


def derived_id(data: bytes, observed_at: str, type_: str) -> str:
    """derived_event_id from the data's canonical bytes (what an append holds already)."""
    return uuid_text(derived_key(data, observed_at, type_))


def derived_key(data: bytes, observed_at: str, type_: str) -> bytes:
    """derived_event_id's 16 bytes, from the data's canonical bytes."""
    # canonical({data, observed_at, type}) joined around the stored data bytes, each string encoded
    # by the same encoder; then uuid.uuid5 without its object overhead: SHA-1 of namespace || name,
    # its first 16 bytes with the version and variant bits set
    name = b'{"data":' + data + b',"observed_at":' + _STRING.encode(observed_at) + b',"type":'
    digest = hashlib.sha1(_NAMESPACE_URL + name + _STRING.encode(type_) + b"}").digest()
    return (int.from_bytes(digest[:16], "big") & _UUID_KEEP | _UUID_SET).to_bytes(16, "big")


def uuid_text(key: bytes) -> str:
    """A UUID's 16 bytes as its lowercase 8-4-4-4-12 text."""
    h = key.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


_STRING = msgspec.json.Encoder()
_NAMESPACE_URL = uuid.NAMESPACE_URL.bytes
_UUID_KEEP = ~((0xF << 76) | (0x3 << 62)) & ((1 << 128) - 1)
_UUID_SET = (0x5 << 76) | (0x2 << 62)


def type_of(event: Event) -> str:
    """The event's type tag."""
    return type(event).__struct_config__.tag  # type: ignore[return-value]


def envelope_json(e: StoredEvent) -> dict[str, Encodable]:
    """A StoredEvent as a JSON-ready dict, its data embedded verbatim (msgspec.Raw)."""
    d: dict[str, Encodable] = msgspec.structs.asdict(e)
    d["data"] = msgspec.Raw(e.data)
    return d


def event_to_dict(event: Event) -> JsonObject:
    """The client envelope as plain values (for NDJSON export and tests)."""
    out: JsonObject = msgspec.to_builtins(event)
    return out
