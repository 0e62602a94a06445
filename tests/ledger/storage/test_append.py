"""Appending (ledger/storage/append.py via Ledger): every rule of ledger-v1.md "Appending", atomically."""

from __future__ import annotations

import json
import re
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger.model.codec import canonical, derived_event_id
from ledger.model.errors import Conflict, InvalidEvent, LedgerError
from ledger.model.events import MeasurementData, MeasurementObserved, PaperData, PaperObserved
from ledger.model.instants import SYSTEM_CLOCK, parse_near
from ledger.storage.append import AppendResult, Encoded
from ledger.tlog.chain import body_bytes, link_hash
from service.ledger import Ledger
from tests import factories as fx
from tests import raw
from tests.conftest import examples
from tests.ledger.tlog.test_chain import stdlib_canonical

T = "2026-01-01T00:00:00Z"
P1, P2, P3 = "2601.00001", "2601.00002", "hep-th/9901001"
OID_A = "8f7cb4e3-557e-49d1-9dc8-6b681dc73b8b"
OID_B = "0e9c0fae-80e7-43d4-b024-395603f598f7"
EID = "13b23917-2a2a-46fa-aeeb-0bb21293861b"
WORK = "b2bc981d-c6cb-4586-80b3-8f5ad49c7243"
RECORDED_RE = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{6}Z")


def at(minute: int) -> str:
    return f"2026-01-01T00:{minute:02d}:00Z"


def paper(arxiv_id: str = P1, observed_at: str = T, title: str = "A paper", **kw: Any) -> dict[str, Any]:
    data = {"arxiv_id": arxiv_id, "title": title, "primary_category": "cs.DC", "submitted_at": T,
            "last_updated": T, "version": 1}  # fmt: skip
    return {"type": "paper.observed", "observed_at": observed_at, "data": {**data, **kw}}


def citation(oid: str = OID_A, citing: str = P1, index: int = 0, observed_at: str = T) -> dict[str, Any]:
    data = {"observation_id": oid, "citing_arxiv_id": citing, "reference_index": index,
            "source": "pdf_text", "cited_work": None}  # fmt: skip
    return {"type": "citation.observed", "observed_at": observed_at, "data": data}


def resolution(oid: str = OID_A, cited: str | None = P2, observed_at: str = T) -> dict[str, Any]:
    data = {"observation_id": oid, "status": "verified_exact", "resolver_source": "local_arxiv",
            "cited_work": None, "cited_arxiv_id": cited}  # fmt: skip
    return {"type": "resolution.observed", "observed_at": observed_at, "data": data}


def standing(source: str = "crossref", observed_at: str = T, notices: int = 0) -> dict[str, Any]:
    notice: dict[str, Any] = {"work_id": WORK, "kind": "retraction", "notice_doi": None, "record_id": None,
                              "raw_type": None, "reasons": [], "notice_date": None, "url": None}  # fmt: skip
    data = {"source": source, "work_ids": [WORK], "notices": [notice] * notices}
    return {"type": "standing.checked", "observed_at": observed_at, "data": data}


def measurement(arxiv_id: str = P1, value: int = 1, observed_at: str = T) -> dict[str, Any]:
    data = {"arxiv_id": arxiv_id, "source": "openalex", "metric": "cited_by_count", "value": value,
            "source_release": None, "query_url": None}  # fmt: skip
    return {"type": "measurement.observed", "observed_at": observed_at, "data": data}


def send(ledger_: Ledger, events: list[dict[str, Any]], expected: Any = None) -> AppendResult:
    body: dict[str, Any] = {"events": events}
    if expected is not None:
        body["expected_versions"] = expected
    return ledger_.import_bytes(json.dumps(body).encode())


def state(ledger_: Ledger) -> tuple[Any, ...]:
    """Head, and the tables as the database holds them (read independently of the ledger code)."""
    counts = raw.rows(ledger_.url, "SELECT (SELECT count(*) FROM events), (SELECT count(*) FROM check_works)")
    return (ledger_.head(), *counts[0])


def rows(ledger_: Ledger) -> list[tuple[Any, ...]]:
    sql = "SELECT seq, event_id, stream, stream_version, type, recorded_at FROM events ORDER BY seq"
    return raw.rows(ledger_.url, sql)


@pytest.fixture
def seeded(fresh_ledger: Ledger) -> Ledger:
    """P1 (snapshot, observation A resolved, measurement: version 4), source:crossref: seq 1..5."""
    send(fresh_ledger, [paper(), citation(), resolution(), standing(), measurement()])
    return fresh_ledger


def future(minutes: int) -> str:
    return (datetime.now(UTC) + timedelta(minutes=minutes)).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def with_id(event: dict[str, Any], event_id: str) -> dict[str, Any]:
    return {**event, "event_id": event_id}


REFUSALS = [
    # (id, batch, expected_versions, error, message pattern)
    ("event1-bad-arxiv", [paper(P2), paper("2601.00003v2")], None, InvalidEvent,
     r"events\[1\]\.data\.arxiv_id: bad arXiv id"),
    ("event1-unknown-field", [paper(P2), {**paper(P3), "extra": 1}], None, InvalidEvent,
     r"events\[1\]\.extra: contains unknown field"),
    ("event1-missing-field", [paper(P2), citation(OID_B, P2) | {"data": {"observation_id": OID_B}}],
     None, InvalidEvent, r"events\[1\]\.data\.\w+: missing required field"),
    ("event1-float", [paper(P2), paper(P3, version=2.0)], None, InvalidEvent,
     r"events\[1\]\.data\.version: floats are not allowed"),
    ("event1-bool-for-int", [paper(P2), measurement(value=True)], None, InvalidEvent,
     r"events\[1\]\.data\.value: Expected `int`, got `bool`"),
    ("event1-null-title", [paper(P2), paper(P3, title=None)], None, InvalidEvent,  # type: ignore[arg-type]
     r"events\[1\]\.data\.title"),
    ("event1-ts-no-offset", [paper(P2), paper(P3, observed_at="2026-01-01T00:00:00")], None,
     InvalidEvent, r"events\[1\]\.observed_at: timestamp without offset"),
    ("event1-ts-7-digits", [paper(P2), paper(P3, submitted_at="2026-01-01T00:00:00.0000001Z")], None,
     InvalidEvent, r"events\[1\]\.data\.submitted_at: more than 6 fractional digits"),
    ("event1-future", [paper(P2), measurement(observed_at="@future6")], None, InvalidEvent,
     r"events\[1\]\.observed_at: more than 5 minutes in the future"),
    ("event1-uuid-uppercase", [paper(P2), citation(OID_B.upper(), P2)], None, InvalidEvent,
     r"events\[1\]\.data\.observation_id: bad UUID"),
    ("event1-event_id-not-uuid", [paper(P2), with_id(paper(P3), "42")], None, InvalidEvent,
     r"events\[1\]\.event_id: bad UUID"),
    ("event1-duplicate-notice", [paper(P2), standing(notices=2)], None, InvalidEvent,
     r"events\[1\]\.data\.notices\[1\]: the same notice is listed twice"),
    ("event1-bad-status", [paper(P2), resolution() | {"data": resolution()["data"] | {"status": "x"}}],
     None, InvalidEvent, r"events\[1\]\.data\.status: Invalid enum value 'x'"),
    ("resolution-unknown-observation", [paper(P2), resolution(OID_B)], None, InvalidEvent,
     r"events\[1\]\.data\.observation_id: no citation\.observed for observation " + OID_B),
    ("resolution-before-its-citation", [resolution(OID_B), citation(OID_B, P2)], None, InvalidEvent,
     r"events\[0\]\.data\.observation_id: no citation\.observed"),
    ("observation-owned-in-ledger", [paper(P2), citation(OID_A, P2, index=7)], None, InvalidEvent,
     rf"events\[1\]\.data\.citing_arxiv_id: observation {OID_A} belongs to paper {P1}, not {P2}"),
    ("observation-owned-in-batch", [citation(OID_B, P2), citation(OID_B, P3, 1)], None, InvalidEvent,
     rf"events\[1\]\.data\.citing_arxiv_id: observation {OID_B} belongs to paper {P2}, not {P3}"),
    ("event_id-conflict-with-ledger", [paper(P2), with_id(paper(title="Other"), "@seq1")], None,
     Conflict, r"events\[1\]\.event_id: \S+ is already stored \(seq 1\) with different content"),
    ("event_id-conflict-in-batch", [with_id(paper(P2), EID), with_id(paper(P3), EID)], None, Conflict,
     rf"events\[1\]\.event_id: {EID} appears earlier in the batch \(index 0\) with different content"),
    ("event_id-conflict-other-observed_at", [with_id(paper(observed_at=at(1)), "@seq1")], None, Conflict,
     r"events\[0\]\.event_id: .* already stored \(seq 1\)"),
    ("expected-version-behind", [paper(P1, at(2))], {f"paper:{P1}": 2}, Conflict,
     rf"stream paper:{P1} is at version 4, not 2"),
    ("expected-version-ahead", [paper(P1, at(2))], {f"paper:{P1}": 5}, Conflict,
     rf"stream paper:{P1} is at version 4, not 5"),
    ("expected-version-new-stream", [paper(P2)], {f"paper:{P2}": 1}, Conflict,
     rf"stream paper:{P2} is at version 0, not 1"),
    ("expected-version-other-stream", [paper(P2)], {"source:crossref": 0, f"paper:{P2}": 0}, Conflict,
     r"stream source:crossref is at version 1, not 0"),
    ("expected-versions-negative", [paper(P2)], {f"paper:{P2}": -1}, InvalidEvent,
     r"expected_versions: must map stream names to integers >= 0"),
    ("expected-versions-float", [paper(P2)], {f"paper:{P2}": 0.0}, InvalidEvent, r"floats are not allowed"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("batch", "expected", "error", "pattern"), [pytest.param(*c[1:], id=c[0]) for c in REFUSALS]
)
def test_refused_batch_writes_nothing(
    seeded: Ledger, batch: list[dict[str, Any]], expected: Any, error: type[LedgerError], pattern: str
) -> None:
    first_id = rows(seeded)[0][1]
    batch = [with_id(e, first_id) if e.get("event_id") == "@seq1" else e for e in batch]
    # "6 minutes from now" is taken when the test runs, not when the module is collected
    batch = [{**e, "observed_at": future(6)} if e.get("observed_at") == "@future6" else e for e in batch]
    before, log_before = state(seeded), rows(seeded)
    with pytest.raises(error, match=pattern):
        send(seeded, batch, expected)
    assert state(seeded) == before
    assert rows(seeded) == log_before
    # and nothing is left half-done: the next valid append takes the very next seq
    assert send(seeded, [paper("2699.99999")]).items[0].seq == before[0].seq + 1


def test_conflict_names_stream_expected_and_current(seeded: Ledger) -> None:
    with pytest.raises(Conflict) as info:
        send(seeded, [paper(P1, at(3))], {f"paper:{P1}": 1})
    assert info.value.code == "conflict"
    assert info.value.details == {"stream": f"paper:{P1}", "expected": 1, "current": 4}


@pytest.mark.parametrize(
    "event",
    [
        pytest.param(PaperObserved(observed_at=T, data=PaperData("2509.02480v2", "t", None, T, T, 1)),
                     id="bad-arxiv"),
        pytest.param(PaperObserved(observed_at="2026-01-01T00:00:00", data=PaperData(P2, "t", None, T, T, 1)),
                     id="no-offset"),
        pytest.param(MeasurementObserved(observed_at="2999-01-01T00:00:00Z",
                                         data=MeasurementData(P2, "s", "m", 1, None, None)), id="future"),
    ],
)  # fmt: skip
def test_ledger_append_rechecks_rules_of_events_built_in_code(seeded: Ledger, event: Any) -> None:
    before = state(seeded)
    with pytest.raises(InvalidEvent, match=r"^events\[1\]\."):
        seeded.append([PaperObserved(observed_at=T, data=PaperData(P2, "t", None, T, T, 1)), event])
    assert state(seeded) == before


@pytest.mark.parametrize(
    "event",
    [
        pytest.param(MeasurementObserved(observed_at=T, data=MeasurementData(P2, "s", "m", 1.5, None, None)),  # type: ignore[arg-type]
                     id="float-value"),
        pytest.param(PaperObserved(observed_at=T, data=PaperData(P2, None, None, T, T, 0)),  # type: ignore[arg-type]
                     id="null-title-version-0"),
    ],
)  # fmt: skip
def test_ledger_append_rechecks_types_of_events_built_in_code(seeded: Ledger, event: Any) -> None:
    before = state(seeded)
    with pytest.raises(InvalidEvent, match=r"^events\[0\]\.data\."):
        seeded.append([event])
    assert state(seeded) == before


# -- accepted batches -----------------------------------------------------------------------------


def test_resolution_may_name_an_observation_defined_earlier_in_the_batch(seeded: Ledger) -> None:
    result = send(seeded, [paper(P2), citation(OID_B, P2), resolution(OID_B, cited=P1)])
    assert [i.seq for i in result.items] == [6, 7, 8]
    assert [r[2:4] for r in rows(seeded)[5:]] == [(f"paper:{P2}", 1), (f"paper:{P2}", 2), (f"paper:{P2}", 3)]


def test_resolution_may_name_an_observation_in_the_ledger(seeded: Ledger) -> None:
    result = send(seeded, [resolution(OID_A, cited=P3, observed_at=at(9))])
    assert result.appended == 1 and rows(seeded)[-1][2:4] == (f"paper:{P1}", 5)


def test_observation_may_be_observed_again_by_its_own_paper(seeded: Ledger) -> None:
    assert send(seeded, [citation(OID_A, P1, index=3, observed_at=at(5))]).appended == 1


def test_exact_resend_reports_duplicates_with_existing_seqs(seeded: Ledger) -> None:
    batch = [paper(), citation(), resolution(), standing(), measurement()]
    before = state(seeded)
    result = send(seeded, batch)
    assert (result.appended, result.duplicates) == (0, 5)
    assert [(i.position, i.seq, i.duplicate) for i in result.items] == [(n, n + 1, True) for n in range(5)]
    assert [i.event_id for i in result.items] == [r[1] for r in rows(seeded)]
    assert [i.hash for i in result.items][-1] == before[0].hash
    assert state(seeded) == before and result.head == before[0]


def test_partial_resend_appends_only_the_new_events(seeded: Ledger) -> None:
    result = send(seeded, [measurement(value=9), citation(), measurement(value=9)])
    assert [(i.seq, i.duplicate) for i in result.items] == [(6, False), (2, True), (6, True)]
    assert result.items[0].event_id == result.items[2].event_id
    assert (result.appended, result.duplicates, result.head.seq) == (1, 2, 6)
    assert state(seeded)[1] == 6


def test_explicit_event_id_versus_derived(fresh_ledger: Ledger) -> None:
    explicit = send(fresh_ledger, [with_id(paper(), EID)]).items[0]
    assert (explicit.event_id, explicit.duplicate) == (EID, False)
    derived = send(fresh_ledger, [paper()]).items[0]  # same fact, no id: another event
    assert derived.event_id != EID and (derived.seq, derived.duplicate) == (2, False)
    again = send(fresh_ledger, [with_id(paper(), EID), with_id(paper(), derived.event_id)]).items
    assert [(i.seq, i.duplicate) for i in again] == [(1, True), (2, True)]
    assert [r[1] for r in rows(fresh_ledger)] == [EID, derived.event_id]


def test_expected_versions_matching(seeded: Ledger) -> None:
    expected = {f"paper:{P1}": 4, f"paper:{P2}": 0, "source:crossref": 1}
    result = send(seeded, [paper(P1, at(4)), paper(P2), standing(observed_at=at(4))], expected)
    assert result.appended == 3
    assert [r[2:4] for r in rows(seeded)[5:]] == [
        (f"paper:{P1}", 5),
        (f"paper:{P2}", 1),
        ("source:crossref", 2),
    ]


def test_resend_of_an_acknowledged_batch_with_its_expected_versions_is_idempotent(seeded: Ledger) -> None:
    batch, expected = [paper(P2)], {f"paper:{P2}": 0}
    first = send(seeded, batch, expected)
    retry = send(seeded, batch, expected)  # nothing new to append: a duplicate, not a 409
    assert (retry.appended, retry.items[0].seq) == (0, first.items[0].seq)


def test_seq_is_gapless_and_stream_versions_count_per_stream(fresh_ledger: Ledger) -> None:
    send(fresh_ledger, [paper(P1), paper(P2), standing()])
    with pytest.raises(InvalidEvent):
        send(fresh_ledger, [paper(P1, at(1)), resolution(OID_B)])
    send(fresh_ledger, [paper(P1, at(2)), standing(observed_at=at(2)), citation(OID_A, P2)])
    send(fresh_ledger, [paper(P1, at(3)), paper(P1, at(3))])  # the repeat is a duplicate
    got = [(r[0], r[2], r[3]) for r in rows(fresh_ledger)]
    assert got == [
        (1, f"paper:{P1}", 1),
        (2, f"paper:{P2}", 1),
        (3, "source:crossref", 1),
        (4, f"paper:{P1}", 2),
        (5, "source:crossref", 2),
        (6, f"paper:{P2}", 2),
        (7, f"paper:{P1}", 3),
    ]
    assert fresh_ledger.verify().ok


def test_recorded_at_format_and_never_decreasing(fresh_ledger: Ledger, monkeypatch: Any) -> None:
    start = datetime.now(UTC) - timedelta(seconds=1)
    send(fresh_ledger, [paper(P1), paper(P2)])
    # the server clock steps back an hour: recorded_at must not go backwards along seq
    monkeypatch.setattr(fresh_ledger, "clock", fx.Clock(SYSTEM_CLOCK.now_us() - 3_600_000_000))
    send(fresh_ledger, [paper(P3)])
    monkeypatch.setattr(fresh_ledger, "clock", SYSTEM_CLOCK)
    send(fresh_ledger, [measurement()])
    recorded = [r[5] for r in rows(fresh_ledger)]
    assert all(RECORDED_RE.fullmatch(r) for r in recorded), recorded
    assert recorded[0] == recorded[1]  # one batch, one commit instant
    assert recorded == sorted(recorded) and recorded[2] == recorded[1]
    first = datetime.strptime(recorded[0], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    assert start <= first <= datetime.now(UTC)
    assert fresh_ledger.verify().ok


@pytest.mark.parametrize(
    ("batch", "stream"),
    [
        pytest.param([paper(P3)], f"paper:{P3}", id="paper.observed"),
        pytest.param([citation(OID_B, P3)], f"paper:{P3}", id="citation.observed"),
        pytest.param([citation(OID_B, P3), resolution(OID_B, cited=P1)], f"paper:{P3}",
                     id="resolution-in-batch"),
        pytest.param([resolution(OID_A, cited=P3, observed_at=at(7))], f"paper:{P1}",
                     id="resolution-in-ledger"),
        pytest.param([standing("retraction_watch")], "source:retraction_watch", id="standing.checked"),
        pytest.param([measurement(P2)], f"paper:{P2}", id="measurement.observed"),
    ],
)  # fmt: skip
def test_stream_derivation(seeded: Ledger, batch: list[dict[str, Any]], stream: str) -> None:
    send(seeded, batch)
    assert rows(seeded)[-1][2] == stream
    assert rows(seeded)[-1][4] == batch[-1]["type"]


def test_batch_error_names_place_in_ndjson(fresh_ledger: Ledger) -> None:
    body = (json.dumps(paper(P1)) + "\n\n" + json.dumps(paper("P2")) + "\n").encode()
    with pytest.raises(InvalidEvent, match=r"^line 3\.data\.arxiv_id: bad arXiv id"):
        fresh_ledger.import_bytes(body)
    assert state(fresh_ledger)[1] == 0


# -- the per-event path against the reference derivations ---------------------------------------------

_TEXTS = st.sampled_from(
    ["plain", 'quote " and backslash \\', "tab\tnew\nline", "ünï “c” \u2028", "\x01\x1f"]
)


@st.composite
def _batches(draw: Any) -> list[list[Any]]:
    """A random valid history, its strings drawn to need escaping, cut into batches, some events
    carrying an explicit event id."""
    events = draw(fx.ledgers(max_obs=6))
    out = []
    for n, e in enumerate(events):
        if isinstance(e, fx.ev.PaperObserved):
            e = msgspec.structs.replace(e, data=msgspec.structs.replace(e.data, title=draw(_TEXTS)))
        if isinstance(e, fx.ev.StandingChecked) and draw(st.booleans()):
            e = msgspec.structs.replace(e, data=msgspec.structs.replace(e.data, source=draw(_TEXTS)))
        if draw(st.integers(0, 4)) == 0:
            e = msgspec.structs.replace(e, event_id=str(uuid.UUID(int=(n + 1) * 0x9E3779B97F4A7C15)))
        out.append(e)
    cuts = sorted(draw(st.sets(st.integers(1, max(len(out) - 1, 1)), max_size=4)))
    return [out[a:b] for a, b in zip([0, *cuts], [*cuts, len(out)], strict=True) if out[a:b]]


@settings(
    max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(batches=_batches())
def test_what_an_append_stores_is_what_its_events_imply(new_db: Any, batches: list[list[Any]]) -> None:
    """Every byte, hash, id and derived row an append writes is what verify's reference derivations
    (chain.body_bytes and link_hash, uuid.uuid5, keys.link_keys, append.link_checks, spans.history)
    recompute from the stored events, escapes and explicit ids included."""
    ledger_ = Ledger(new_db(f"p{uuid.uuid4().hex}.db"))
    try:
        answers = [item for batch in batches for item in ledger_.append(batch).items if not item.duplicate]
        report = ledger_.verify()
        assert report.ok, report
        log = ledger_.store.read_log()
        assert [(a.seq, a.event_id, a.hash) for a in answers] == [(e.seq, e.event_id, e.hash) for e in log]
        given_ids = {e.event_id for batch in batches for e in batch if e.event_id}
        for e in log:
            body = body_bytes(e.data, e.event_id, e.observed_at, e.recorded_at, e.seq, e.stream,
                              e.stream_version, e.type)  # fmt: skip
            assert e.hash == link_hash(e.prev_hash, body)
            if e.event_id not in given_ids:
                name = stdlib_canonical(
                    {"data": json.loads(e.data), "observed_at": e.observed_at, "type": e.type}
                )
                assert e.event_id == str(uuid.uuid5(uuid.NAMESPACE_URL, name.decode()))
    finally:
        ledger_.close()


@settings(
    max_examples=examples(30), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(batches=_batches())
def test_an_append_given_what_a_check_made_stores_the_same(new_db: Any, batches: list[list[Any]]) -> None:
    """An append handed each event's data bytes, id and instant (`encoded`, as a file's check spills
    them) stores every byte, key and hash it stores when it makes them itself, and answers the same."""
    clock = fx.Clock()
    made, given_ = (
        Ledger(new_db(f"m{uuid.uuid4().hex}.db"), clock=clock),
        Ledger(new_db(f"g{uuid.uuid4().hex}.db"), clock=clock),
    )
    try:
        for batch in batches:
            encoded = [
                Encoded(canonical(e.data), e.event_id or derived_event_id(e), parse_near(e.observed_at))
                for e in batch
            ]
            assert given_.append(batch, encoded=encoded) == made.append(batch)
        assert given_.store.read_log() == made.store.read_log()
        assert sorted(given_.store.keys.index_rows()) == sorted(made.store.keys.index_rows())
    finally:
        made.close()
        given_.close()


def test_an_append_given_encoded_for_other_events_writes_nothing(fresh_ledger: Ledger) -> None:
    """`encoded` is one per event: a list of another length is refused before anything is written."""
    events = [fx.paper(P1, T), fx.paper(P2, T)]
    one = Encoded(canonical(events[0].data), derived_event_id(events[0]), parse_near(T))
    with pytest.raises(ValueError, match="1 encoded for 2 events"):
        fresh_ledger.append(events, encoded=[one])
    assert fresh_ledger.head().seq == 0
