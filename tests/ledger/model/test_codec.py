"""Canonical encoding, strict decoding, the input rules and derived event ids (ledger/codec.py)."""

from __future__ import annotations

import copy
import json
import re
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ledger.model import events as ev
from ledger.model.codec import canonical, check_rules, check_types, decode_event, derived_event_id, to_event
from ledger.model.errors import InvalidEvent
from ledger.model.instants import SYSTEM_CLOCK
from tests import factories
from tests.conftest import examples
from tests.ledger.model.quick_support import assert_quick_agrees, exact_event

OID = "8f7cb4e3-557e-49d1-9dc8-6b681dc73b8b"
WORK = "0e9c0fae-80e7-43d4-b024-395603f598f7"
TS = "2026-01-01T00:00:00.123456Z"
DELETE = object()


def stdlib_canonical(x: Any) -> bytes:
    return json.dumps(x, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def cited_work() -> dict[str, Any]:
    return {
        "arxiv_id": None,
        "doi": "10.1000/x",
        "metadata_source": "raw_reference",
        "pith_arxiv_id": None,
        "snapshot_observed_at": TS,
        "title": "Cited “work”",
        "venue": None,
        "work_id": WORK,
        "year": 2024,
    }


def notice(work_id: str | None = WORK, kind: str = "retraction") -> dict[str, Any]:
    return {
        "work_id": work_id,
        "kind": kind,
        "notice_doi": "10.1000/n",
        "record_id": "42",
        "raw_type": "Retraction",
        "reasons": ["Misconduct"],
        "notice_date": "2026-01-02",
        "url": None,
    }


DATA: dict[str, dict[str, Any]] = {
    "paper.observed": {
        "arxiv_id": "2509.02480",
        "title": "MLP-Offload: Ünïcode ☃",
        "primary_category": "cs.DC",
        "submitted_at": "2025-09-02T16:30:49Z",
        "last_updated": "2025-09-02T16:30:49+02:00",
        "version": 1,
    },
    "citation.observed": {
        "observation_id": OID,
        "citing_arxiv_id": "2509.02480",
        "reference_index": 0,
        "source": "pdf_text",
        "cited_work": cited_work(),
    },
    "resolution.observed": {
        "observation_id": OID,
        "status": "verified_exact",
        "resolver_source": "local_arxiv",
        "cited_work": cited_work(),
        "cited_arxiv_id": "1412.6980",
    },
    "standing.checked": {"source": "crossref", "work_ids": [WORK], "notices": [notice()]},
    "measurement.observed": {
        "arxiv_id": "2509.02480",
        "source": "openalex",
        "metric": "cited_by_count",
        "value": 3,
        "source_release": None,
        "query_url": None,
    },
}


def envelope(type_: str) -> dict[str, Any]:
    return {"type": type_, "observed_at": TS, "data": copy.deepcopy(DATA[type_])}


def mutated(type_: str, path: str, value: Any) -> dict[str, Any]:
    """The valid envelope of `type_` with `path` (dotted, [i] for lists) set or deleted."""
    env = envelope(type_)
    keys: list[Any] = [int(k) if k.isdigit() else k for k in re.findall(r"[^.\[\]]+", path)]
    target: Any = env
    for k in keys[:-1]:
        target = target[k]
    if value is DELETE:
        del target[keys[-1]]
    else:
        target[keys[-1]] = value
    return env


def decode(env: dict[str, Any]) -> Any:
    return decode_event(json.dumps(env, ensure_ascii=False).encode(), "events[0]")


def checked_now(env: dict[str, Any]) -> Any:
    """The event decoded, then held to the rules at the clock's now (what an append does)."""
    event = decode(env)
    check_rules(event, "events[0]", SYSTEM_CLOCK.now_us())
    return event


def iso(delta: timedelta) -> str:
    return (datetime.now(UTC) + delta).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


# -- canonical ---------------------------------------------------------------------------------

_text = st.text(st.characters(exclude_categories=["Cs"]), max_size=12)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | _text,
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(_text, kids, max_size=4),
    max_leaves=25,
)


@given(json_values)
@example('\x00\x01\x08\x0c\x1f\x7f\u2028\u2029"\\/\t\n\r')
@example({"é": 1, "e": 2, "\U0001f600": 3, "\uffff": 4, "Z": [None, True, -(2**70)]})
def test_canonical_equals_stdlib_json(value: Any) -> None:
    assert canonical(value) == stdlib_canonical(value)


@pytest.mark.parametrize("type_", sorted(DATA))
def test_canonical_of_a_typed_data_struct_equals_stdlib_canonical_of_its_dict(type_: str) -> None:
    # Struct fields are declared in a non-sorted order (e.g. Notice.work_id before kind)
    event = to_event(envelope(type_), "events[0]")
    assert canonical(event.data) == stdlib_canonical(DATA[type_])


# -- strict decoding: refused ------------------------------------------------------------------

REFUSED: list[tuple[Any, ...]] = [
    # (id, type, path, value, reason pattern[, where the error is below the path])
    ("unknown-envelope-field", "paper.observed", "extra", 1, "unknown field"),
    ("unknown-data-field", "paper.observed", "data.doi", None, "unknown"),
    ("unknown-cited_work-field", "citation.observed", "data.cited_work.isbn", "x", "unknown"),
    ("unknown-notice-field", "standing.checked", "data.notices[0].severity", "high", "unknown"),
    ("missing-observed_at", "paper.observed", "observed_at", DELETE, "missing"),
    ("missing-data", "paper.observed", "data", DELETE, "missing"),
    ("missing-title", "paper.observed", "data.title", DELETE, "missing"),
    ("missing-nullable", "paper.observed", "data.primary_category", DELETE, "missing"),
    ("missing-cited_work-year", "citation.observed", "data.cited_work.year", DELETE, "missing"),
    ("missing-notice-reasons", "standing.checked", "data.notices[0].reasons", DELETE, "missing"),
    ("null-title", "paper.observed", "data.title", None, "null"),
    ("null-submitted_at", "paper.observed", "data.submitted_at", None, ""),
    ("float-for-int", "paper.observed", "data.version", 1.0, "float"),
    ("float-exponent", "measurement.observed", "data.value", 1e2, "float"),
    ("float-in-list", "standing.checked", "data.notices[0].reasons", ["a", 0.5], "float", "[1]"),
    ("float-nested-list", "standing.checked", "data.work_ids", [WORK, [1, [2.5]]], "float", "[1][1][0]"),
    ("float-in-cited_work", "citation.observed", "data.cited_work.year", 2024.0, "float"),
    ("bool-for-version", "paper.observed", "data.version", True, "bool"),
    ("bool-for-index", "citation.observed", "data.reference_index", False, "bool"),
    ("bool-for-value", "measurement.observed", "data.value", True, "bool"),
    ("ts-no-offset", "paper.observed", "observed_at", "2026-01-01T00:00:00", "offset"),
    ("ts-7-digits", "paper.observed", "observed_at", "2026-01-01T00:00:00.1234567Z", "fractional"),
    ("ts-invalid-date", "paper.observed", "data.submitted_at", "2026-02-30T00:00:00Z", "invalid"),
    ("ts-date-only", "paper.observed", "data.last_updated", "2026-01-01", "RFC 3339"),
    ("ts-cited_work-no-offset", "citation.observed", "data.cited_work.snapshot_observed_at",
     "2026-01-01T00:00:00.5", "offset"),
    ("arxiv-version-suffix", "paper.observed", "data.arxiv_id", "2509.02480v2", "bad arXiv id"),
    ("arxiv-abc", "paper.observed", "data.arxiv_id", "abc", "bad arXiv id"),
    ("arxiv-12345.678", "paper.observed", "data.arxiv_id", "12345.678", "bad arXiv id"),
    ("arxiv-old-style-suffix", "measurement.observed", "data.arxiv_id", "hep-th/9901001v1", "bad arXiv id"),
    ("arxiv-citing", "citation.observed", "data.citing_arxiv_id", "250.02480", "bad arXiv id"),
    ("arxiv-cited", "resolution.observed", "data.cited_arxiv_id", "2509.02480v2", "bad arXiv id"),
    ("uuid-uppercase", "citation.observed", "data.observation_id", OID.upper(), "bad UUID"),
    ("uuid-no-hyphens", "resolution.observed", "data.observation_id", OID.replace("-", ""), "bad UUID"),
    ("uuid-braces", "citation.observed", "data.observation_id", "{" + OID + "}", "bad UUID"),
    ("event_id-uppercase", "paper.observed", "event_id", OID.upper(), "bad UUID"),
    ("unknown-status", "resolution.observed", "data.status", "pending", "enum"),
    ("unknown-notice-kind", "standing.checked", "data.notices[0].kind", "erratum", "enum"),
    ("unknown-event-type", "paper.observed", "type", "paper.updated", "unknown event type"),
    ("non-string-event-type", "paper.observed", "type", 7, ""),
    ("version-0", "paper.observed", "data.version", 0, ">= 1"),
    ("negative-reference_index", "citation.observed", "data.reference_index", -1, ">= 0"),
    ("negative-value", "measurement.observed", "data.value", -5, ">= 0"),
    ("empty-source", "standing.checked", "data.source", "", "empty"),
    ("duplicate-notice", "standing.checked", "data.notices", [notice(), notice()], "twice", "[1]"),
    ("notice-outside-work_ids", "standing.checked", "data.notices",
     [notice("other-work")], "not among the work_ids", "[0].work_id"),
    ("work_ids-repeated", "standing.checked", "data.work_ids", [WORK, WORK], "more than once"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("type_", "path", "value", "where", "reason"),
    [
        pytest.param(type_, path, value, f"events[0].{path}{''.join(below)}", reason, id=id_)
        for id_, type_, path, value, reason, *below in REFUSED
    ],
)
def test_strict_decoding_refuses_naming_place_and_field(
    type_: str, path: str, value: Any, where: str, reason: str
) -> None:
    with pytest.raises(InvalidEvent, match=re.escape(where) + ".*" + reason) as info:
        decode(mutated(type_, path, value))
    assert info.value.where == where
    assert info.value.details == {"where": where, "reason": info.value.reason}


@pytest.mark.parametrize(
    ("raw", "where"),
    [
        pytest.param(b'{"type": "paper.observed", "data": [1, 2.0]}', "events[0].data[1]", id="float-top"),
        pytest.param(b'[1, {"a": [0.0]}]', "events[0][1].a[0]", id="float-not-an-event"),
        pytest.param(b"-1.5e-3", "events[0]", id="float-scalar"),
    ],
)
def test_floats_are_refused_before_typing(raw: bytes, where: str) -> None:
    with pytest.raises(InvalidEvent, match=re.escape(where) + ": floats are not allowed"):
        decode_event(raw, "events[0]")


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (b"{", "not valid JSON"),
        (b'{"type": "paper.observed",}', "not valid JSON"),
        (b"NaN", "NaN and Infinity are not JSON numbers"),
        (b"Infinity", "NaN and Infinity are not JSON numbers"),
        (b"1E400", "floats are not allowed"),
        (b"\xff", "not UTF-8"),
        (b"9007199254740992", "integers must be within"),
    ],
)
def test_malformed_json_is_an_invalid_event(raw: bytes, reason: str) -> None:
    with pytest.raises(InvalidEvent, match=r"^events\[0\]: " + re.escape(reason)):
        decode_event(raw, "events[0]")


def test_non_object_event_is_refused() -> None:
    with pytest.raises(InvalidEvent, match=r"events\[0\]: an event must be a JSON object"):
        decode_event(b"[]", "events[0]")


@pytest.mark.parametrize("bad_type", [[], {}, ["paper.observed"]], ids=["list", "object", "list-of-tag"])
def test_unhashable_event_type_is_an_invalid_event(bad_type: Any) -> None:
    with pytest.raises(InvalidEvent, match=r"events\[0\]\.type"):
        decode(mutated("paper.observed", "type", bad_type))


# -- accepted ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("type_", "path", "value"),
    [
        pytest.param("paper.observed", "data.arxiv_id", "hep-th/9901001", id="old-style"),
        pytest.param("paper.observed", "data.arxiv_id", "math.GT/0309136", id="old-style-subject-class"),
        pytest.param("paper.observed", "data.arxiv_id", "0704.0001", id="new-style-4-digits"),
        pytest.param("measurement.observed", "data.arxiv_id", "cond-mat/0011122", id="old-style-hyphen"),
        pytest.param("resolution.observed", "data.cited_arxiv_id", "solv-int/9701001", id="cited-old-style"),
        pytest.param("resolution.observed", "data.cited_arxiv_id", None, id="cited-null"),
        pytest.param("citation.observed", "data.cited_work.arxiv_id", "2509.02480v2", id="raw-cited_work"),
        pytest.param("citation.observed", "data.cited_work.pith_arxiv_id", "not an id", id="raw-pith-id"),
        pytest.param("citation.observed", "data.cited_work", None, id="cited_work-null"),
        pytest.param("paper.observed", "observed_at", "2026-01-01T05:30:00.5+05:30", id="offset"),
        pytest.param("paper.observed", "observed_at", "2026-01-01T00:00:00.999999-00:00", id="6-digits"),
        pytest.param("paper.observed", "event_id", OID, id="explicit-event_id"),
        pytest.param("paper.observed", "event_id", None, id="null-event_id"),
        pytest.param("standing.checked", "data.work_ids", None, id="work_ids-null"),
        pytest.param("standing.checked", "data.notices", [notice(None), notice()], id="null-work-notice"),
        pytest.param(
            "standing.checked", "data.notices", [notice(), notice(kind="correction")], id="2-notices"
        ),
        pytest.param("citation.observed", "data.reference_index", 0, id="index-0"),
        pytest.param("measurement.observed", "data.value", 2**53 - 1, id="largest-safe-int"),
    ],
)
def test_strict_decoding_accepts(type_: str, path: str, value: Any) -> None:
    env = mutated(type_, path, value)
    if path == "data.notices" and value[0]["work_id"] is None:
        env["data"]["work_ids"] = None  # a check of every work may list a notice without work_id
    event = decode(env)
    assert canonical(event.data) == stdlib_canonical(env["data"])
    assert event.observed_at == env["observed_at"]  # kept verbatim


@pytest.mark.parametrize(
    ("delta", "ok"),
    [
        pytest.param(timedelta(minutes=4), True, id="4min-accepted"),
        pytest.param(timedelta(minutes=4, seconds=50), True, id="4min50s-accepted"),
        pytest.param(timedelta(minutes=5, seconds=10), False, id="5min10s-refused"),
        pytest.param(timedelta(hours=1), False, id="1h-refused"),
        pytest.param(timedelta(days=-3650), True, id="past-accepted"),
    ],
)
def test_observed_at_in_the_future(delta: timedelta, ok: bool) -> None:
    env = envelope("measurement.observed")
    env["observed_at"] = iso(delta)
    assert decode(env).observed_at == env["observed_at"]  # the decoder reads no clock
    if ok:
        assert checked_now(env).observed_at == env["observed_at"]
    else:
        with pytest.raises(
            InvalidEvent, match=r"events\[0\]\.observed_at: more than 5 minutes in the future"
        ):
            checked_now(env)


def test_future_limit_applies_to_the_instant_not_the_spelling() -> None:
    env = envelope("measurement.observed")
    # 6 minutes ahead in UTC, but spelled at -10:00: still the future
    ahead = datetime.now(UTC) + timedelta(minutes=6) - timedelta(hours=10)
    env["observed_at"] = ahead.strftime("%Y-%m-%dT%H:%M:%S") + "-10:00"
    with pytest.raises(InvalidEvent, match="more than 5 minutes in the future"):
        checked_now(env)


# -- derived event ids -----------------------------------------------------------------------------


def stdlib_event_id(env: dict[str, Any]) -> str:
    body = {"data": env["data"], "observed_at": env["observed_at"], "type": env["type"]}
    return str(uuid.uuid5(uuid.NAMESPACE_URL, stdlib_canonical(body).decode()))


@pytest.mark.parametrize("type_", sorted(DATA))
def test_derived_event_id_is_uuid5_of_the_canonical_fact(type_: str) -> None:
    env = envelope(type_)
    event_id = derived_event_id(decode(env))
    assert event_id == stdlib_event_id(env)
    assert uuid.UUID(event_id).version == 5


def test_derived_event_id_ignores_the_explicit_id_and_changes_with_any_fact_field() -> None:
    env = envelope("paper.observed")
    base = derived_event_id(decode(env))
    assert derived_event_id(decode({**env, "event_id": OID})) == base
    respelled = {**env, "observed_at": "2026-01-01T00:00:00.123456+00:00"}  # same instant, other bytes
    assert derived_event_id(decode(respelled)) == stdlib_event_id(respelled) != base
    retitled = mutated("paper.observed", "data.title", "MLP-Offload: Unicode ☃")
    assert derived_event_id(decode(retitled)) not in (base, stdlib_event_id(env))


def test_ledger_stores_the_derived_id_when_none_is_given(fresh_ledger: Any) -> None:
    envs = [envelope("paper.observed"), {**envelope("measurement.observed"), "event_id": OID}]
    result = fresh_ledger.import_bytes(json.dumps({"events": envs}).encode())
    assert [i.event_id for i in result.items] == [stdlib_event_id(envs[0]), OID]


def _exact_check(event: Any) -> str | None:
    """The reference: the builtins conversion check_types falls back to, as a message or None."""
    try:
        msgspec.convert(msgspec.to_builtins(event), ev.Event, strict=True)
    except msgspec.ValidationError as e:
        return str(e)
    return None


@pytest.mark.parametrize(
    ("field", "value"),
    [
        pytest.param("year", 2024, id="valid"),
        pytest.param("year", None, id="valid-null"),
        pytest.param("year", float("nan"), id="nan-encodes-as-null"),
        pytest.param("year", float("inf"), id="inf-encodes-as-null"),
        pytest.param("year", 2024.0, id="float"),
        pytest.param("year", True, id="bool-as-int"),
        pytest.param("year", "2024", id="str-as-int"),
        pytest.param("title", 7, id="int-as-str"),
        pytest.param("title", b"bytes", id="bytes-as-str"),
    ],
)
def test_check_types_fast_path_agrees_with_the_exact_check(field: str, value: Any) -> None:
    cited = msgspec.structs.replace(factories.work("w-1", factories.ts(0)), **{field: value})
    event = factories.citation(
        "0b7f3c9e-1c2d-4e5f-8a9b-0c1d2e3f4a5b", "2101.00001", factories.ts(1), 0, cited
    )
    expected = _exact_check(event)
    if expected is None:
        check_types(event, "events[0]")
    else:
        with pytest.raises(InvalidEvent, match=r"events\[0\]\.data\.cited_work\." + field):
            check_types(event, "events[0]")


# -- the quick decoder (codec.quick_event) never takes what the exact path refuses ---------------------

_TRICKY = ['": x', 'a\\"b', 'q":', ":", '"', "/slash", "tab\t", "\u2028", "é", "\x00", "\ud800"]


def _spell(draw: Any, value: Any) -> bytes:
    """`value`'s JSON as any writer might spell it: keys repeated (with the same value or another),
    reordered, spaced, strings escaped or not and holding quotes and colons, integers beyond 2^53,
    floats; or, half the time, only reordered, spaced and escaped as every writer may."""
    messy = draw(st.booleans())

    def write(v: Any) -> str:
        if isinstance(v, dict):
            items = list(v.items())
            if messy and items and draw(st.integers(0, 5)) == 0:  # a key repeated
                k, old = draw(st.sampled_from(items))
                items.insert(
                    draw(st.integers(0, len(items))), (k, draw(st.sampled_from([old, None, 7, "x"])))
                )
            if draw(st.booleans()):
                items = draw(st.permutations(items))
            colon = draw(st.sampled_from([":", ":", " :", ": ", "\t:"]))
            return "{" + ",".join(write(k) + colon + write(x) for k, x in items) + "}"
        if isinstance(v, list):
            return "[" + ",".join(write(x) for x in v) + "]"
        if isinstance(v, str):
            if messy and draw(st.integers(0, 6)) == 0:
                v = v + draw(st.sampled_from(_TRICKY))
            text = json.dumps(v, ensure_ascii=draw(st.integers(0, 4)) == 0)
            if messy and draw(st.integers(0, 4)) == 0:  # other spellings of the same string
                text = text.replace("/", "\\/").replace(":", "\\u003a").replace('\\"', "\\u0022")
            return text
        if isinstance(v, bool) or v is None:
            return json.dumps(v)
        if isinstance(v, int) and messy:
            return draw(st.sampled_from([str(v), str(v), str(2**53 + v), f"{v}.0", str(2**53 - 1)]))
        return json.dumps(v)

    return write(value).encode("utf-8", "surrogatepass")


def _any_envelope(draw: Any) -> dict[str, Any]:
    """A valid envelope of any type, its event_id absent, null or given."""
    env: Any = envelope(draw(st.sampled_from(sorted(DATA))))
    choice = draw(st.integers(0, 3))
    if choice == 1:
        env["event_id"] = None
    elif choice == 2:
        env["event_id"] = OID
    return env


@st.composite
def _texts(draw: Any) -> bytes:
    """An envelope's JSON as any writer might spell it (`_spell`), its event_id absent, null, given or
    repeated."""
    return _spell(draw, _any_envelope(draw))


@st.composite
def _bodies(draw: Any) -> bytes:
    """A POST /events body as any writer might spell it: envelopes as in `_texts`, expected_versions
    absent, null, empty, well formed or not, an unknown key."""
    body: dict[str, Any] = {"events": [_any_envelope(draw) for _ in range(draw(st.integers(0, 3)))]}
    versions = draw(
        st.sampled_from([DELETE, None, {}, {"paper:2509.02480": 0, "a:b": 3}, {"s": -1}, {"s": "1"}, []])
    )
    if versions is not DELETE:
        body["expected_versions"] = versions
    if draw(st.integers(0, 9)) == 0:
        body["extra"] = 1
    return _spell(draw, body)


_M = (
    '{"type":"measurement.observed","observed_at":"2026-01-01T00:00:00Z",%s"data":{"arxiv_id":"2509.02480",'
    '"source":"%s","metric":"m","metric":"n","value":1,"source_release":null,"query_url":null}}'
)


@settings(max_examples=examples(300))
@given(_texts())
@example(b'{"type":"measurement.observed","observed_at":"x","observed_at":"y","data":{}}')
# a repeated key alone, and beside each thing that would hide it from the counts: an event_id left out,
# a colon spelled as an escape
@example((_M % ("", "a")).encode())
@example((_M % ('"event_id":null,', "a\\u003ab")).encode())
@example((_M % ("", "a\\u003ab")).encode())
def test_the_quick_decoder_gives_the_exact_event_or_steps_aside(raw: bytes) -> None:
    assert_quick_agrees(raw)


_ONCE = (_M % ("", "a")).replace(',"metric":"n"', "").encode()


def _exact_body(raw: bytes) -> Any:
    """The events and expected_versions the exact path gives, or the InvalidEvent it raises."""
    from ledger.model.codec import decode_json
    from ledger.model.importer import parse_batch

    try:
        batch = parse_batch(decode_json(raw))
    except InvalidEvent as e:
        return e
    return batch.events, batch.expected_versions


@settings(max_examples=examples(300))
@given(_bodies())
@example(b'{"events":[],"events":[]}')
@example(b'{"events":[],"expected_versions":{"s":1,"s":2}}')
@example(b'{"events":[],"expected_versions":{"s":1},"expected_versions":{"s":1}}')
@example(b'{"events":[],"expected_versions":{"s":true}}')
@example(b'{"events":[],"expected_versions":{"s":12345678901234567890}}')
@example(b'{"events":[' + (_M % ("", "a")).encode() + b"]}")
# one event spelled once beside one with a repeated key
@example(b'{"events":[' + _ONCE + b"," + (_M % ("", "a")).encode() + b"]}")
def test_the_quick_body_decoder_gives_the_exact_batch_or_steps_aside(raw: bytes) -> None:
    from ledger.model.codec import check_rules, quick_body

    quick, exact = quick_body(raw), _exact_body(raw)
    if quick is None:
        return
    if isinstance(exact, InvalidEvent):
        # what only the rules refuse is refused by Ledger.append, which checks every event's rules
        with pytest.raises(InvalidEvent, match=re.escape(exact.where)):
            for i, event in enumerate(quick[0]):
                check_rules(event, f"events[{i}]", None)
    else:
        assert quick == exact


@pytest.mark.parametrize("versions", [None, {"paper:2509.02480": 2}])
@pytest.mark.parametrize("count", [0, 1, 3])
def test_the_quick_body_decoder_takes_an_ordinary_body(count: int, versions: Any) -> None:
    from ledger.model.codec import quick_body

    events = [envelope(t) for t in sorted(DATA)][:count]
    raw = msgspec.json.encode({"events": events, "expected_versions": versions})
    assert quick_body(raw) is not None
    assert quick_body(raw) == _exact_body(raw)


@pytest.mark.parametrize(
    "raw",
    [
        pytest.param(json.dumps(envelope("citation.observed")).encode(), id="python-json"),
        pytest.param(msgspec.json.encode(envelope("resolution.observed")), id="compact"),
        pytest.param(
            json.dumps({**envelope("paper.observed"), "event_id": OID}).encode(), id="with-event-id"
        ),
    ],
)
def test_the_quick_decoder_takes_an_ordinary_line(raw: bytes) -> None:
    from ledger.model.codec import quick_event

    assert quick_event(raw) == exact_event(raw)
