"""The record as of T: the real fixture byte for byte, every projection rule, hypothesis properties."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger.model.codec import canonical, context_digest, digest, observation_digest
from ledger.model.errors import NotFound
from ledger.model.events import Event
from ledger.model.facts import Head
from ledger.model.instants import parse_as_of, parse_ts
from ledger.model.record_types import Record
from ledger.storage.backend import is_pg_url
from projections.memory import MemoryReader
from projections.record import build_record
from service.ledger import Ledger
from tests import raw
from tests.conftest import examples
from tests.factories import (
    PAPERS,
    Clock,
    check,
    citation,
    ledgers,
    measurement,
    notice,
    oid_of,
    paper,
    resolution,
    ts,
    valid_order,
    work,
)

if TYPE_CHECKING:
    from tests.conftest import NewDb

FIX_ID = "2509.02480"
R = TypeVar("R")


def test_fixture_comes_back_byte_for_byte(imported_ledger: Ledger, fixture_bytes: bytes) -> None:
    record = json.loads(fixture_bytes)
    body, _ = imported_ledger.record_bytes(FIX_ID, parse_ts(record["as_of"]))
    assert body == fixture_bytes.strip()


def test_fixture_digests_recomputed(imported_ledger: Ledger, fixture_record: dict[str, Any]) -> None:
    rebuilt = _json(imported_ledger.record(FIX_ID, parse_ts(fixture_record["as_of"])))
    assert len(rebuilt["outbound"]) == 56
    for got, want in zip(rebuilt["outbound"], fixture_record["outbound"], strict=True):
        assert got["observation_digest"] == want["observation_digest"]
        body = {k: v for k, v in got.items() if k != "observation_digest"}
        assert digest(body) == want["observation_digest"]
    assert rebuilt["context_digest"] == fixture_record["context_digest"]


def test_same_content_later_instant_shares_context_digest(
    imported_ledger: Ledger, fixture_record: dict[str, Any]
) -> None:
    later = _json(imported_ledger.record(FIX_ID, parse_as_of("2026-08-09")))
    assert later["as_of"] == "2026-08-09T23:59:59.999999Z"
    assert later["thesis"].startswith("As of 9 August 2026,")
    # thesis date differs, so the context differs; same day -> same digest
    same_day = _json(imported_ledger.record(FIX_ID, parse_ts("2026-08-08T23:00:00Z")))
    assert same_day["context_digest"] == fixture_record["context_digest"]
    assert same_day["as_of"] == "2026-08-08T23:00:00Z"


def test_before_first_snapshot_is_not_found(imported_ledger: Ledger) -> None:
    with pytest.raises(NotFound, match="first observed at 2026-08-07T16:39:03.985890Z"):
        imported_ledger.record(FIX_ID, parse_as_of("2026-08-06"))
    with pytest.raises(NotFound, match="never been observed"):
        imported_ledger.record("2101.99999")


def test_time_travel_between_citation_and_resolution(imported_ledger: Ledger) -> None:
    """After the paper snapshot but before the standing checks: receipts not there yet."""
    rec = _json(imported_ledger.record(FIX_ID, parse_ts("2026-08-07T17:00:00Z")))
    assert rec["standing_sources"] == []
    notices = {o["standing_notice"]["reason"] for o in rec["outbound"]}
    assert notices == {"not_yet_queried", "canonical_work_link_unavailable"}
    assert rec["coverage"][1]["source_observed_at"] is None


def _json(read: tuple[Record, list[int], Head]) -> dict[str, Any]:
    """The record of `Ledger.record` as the JSON values it encodes to."""
    value: dict[str, Any] = msgspec.to_builtins(read[0])
    return value


def _ledger_with(db: str | Ledger, events: list[Event]) -> Ledger:
    ledger = db if isinstance(db, Ledger) else Ledger(db)
    ledger.append(events)
    return ledger


def test_pending_resolution(new_db: NewDb) -> None:
    events: list[Event] = [
        paper("2101.00001", ts(0)),
        citation(oid_of(1), "2101.00001", ts(1), 3, work("w-1", ts(1))),
    ]
    rec = _json(_ledger_with(new_db(), events).record("2101.00001"))
    obs = rec["outbound"][0]
    assert obs["resolution"] == {"observed_at": None, "resolver_source": None, "status": "pending"}
    assert rec["reference_resolution"]["state_counts"]["pending"] == 1
    assert obs["citation"]["cited_work"]["work_id"] == "w-1"
    assert obs["standing_notice"]["reason"] == "not_yet_queried"


def test_standing_with_events_and_receipts(new_db: NewDb) -> None:
    events: list[Event] = [
        paper("2101.00001", ts(0)),
        citation(oid_of(1), "2101.00001", ts(1), 0, work("w-1", ts(1))),
        check("crossref", ts(2), ["w-1"], [notice("w-1", "retraction", None), notice("w-1", "correction")]),
        check(
            "retraction_watch",
            ts(3, style=1),
            None,
            [notice("w-1", "retraction", "10.1/x"), notice("w-2", "retraction")],
        ),
        check("crossref", ts(4), ["w-2"]),  # later, but does not cover w-1
    ]
    rec = _json(_ledger_with(new_db(), events).record("2101.00001"))
    sn = rec["outbound"][0]["standing_notice"]
    assert sn["state"] == "measured"
    assert sn["source_receipts"] == [
        {"observed_at": ts(2), "source": "crossref"},
        {"observed_at": ts(3, style=1), "source": "retraction_watch"},
    ]
    assert [(e["source"], e["kind"], e["notice_doi"]) for e in sn["events"]] == [
        ("crossref", "correction", "10.1000/notice"),
        ("crossref", "retraction", None),
        ("retraction_watch", "retraction", "10.1/x"),
    ]
    assert sn["observation"] == f"3 events found in the named queried sources as of {ts(3, style=1)}."
    assert rec["standing_sources"] == [
        {"observed_at": ts(4), "source": "crossref"},
        {"observed_at": ts(3, style=1), "source": "retraction_watch"},
    ]


def test_check_before_work_snapshot_does_not_count(new_db: NewDb) -> None:
    events: list[Event] = [
        paper("2101.00001", ts(0)),
        check("crossref", ts(1), None),
        citation(oid_of(1), "2101.00001", ts(2), 0, work("w-1", ts(2))),
    ]
    rec = _json(_ledger_with(new_db(), events).record("2101.00001"))
    assert rec["outbound"][0]["standing_notice"]["reason"] == "not_yet_queried"


def test_inbound_and_cited_paper(new_db: NewDb) -> None:
    a, b = "2101.00001", "2101.00002"
    events: list[Event] = [
        paper(a, ts(0), title="Paper A"),
        paper(b, ts(1), title="Paper B", category=None),
        citation(oid_of(1), b, ts(2), 7),
        resolution(oid_of(1), ts(3), cited_arxiv=a),
        citation(oid_of(2), b, ts(4), 8),
        resolution(oid_of(2), ts(5), cited_arxiv=a),
        resolution(oid_of(2), ts(6), "unresolved", cited_arxiv=None),  # re-bound away from A
        citation(oid_of(3), a, ts(7), 1),
        resolution(oid_of(3), ts(8), cited_arxiv=a),  # self
    ]
    ledger = _ledger_with(new_db(), events)
    rec = _json(ledger.record(a))
    assert [o["observation_id"] for o in rec["inbound"]] == [oid_of(1)]
    inbound = rec["inbound"][0]
    assert inbound["citation"]["cited_paper"]["title"] == "Paper A"
    assert inbound["citation"]["citing_paper"]["title"] == "Paper B"
    assert inbound["links"] == {"citing_paper": f"/paper/{b}", "cited_paper": f"/paper/{a}"}
    assert rec["coverage"][2]["denominator"] == 1
    assert rec["thesis"].endswith(
        f"1 of 1 outbound references and 1 inbound Pith citation observations for arXiv:{a}."
    )
    # the inbound object is the same object as in the citing paper's outbound list
    rec_b = _json(ledger.record(b))
    assert rec_b["outbound"][0] == inbound
    assert rec_b["paper"]["primary_category"] is None
    # as of before the resolution: not inbound yet
    early = _json(ledger.record(a, parse_ts(ts(2))))
    assert early["inbound"] == []


def test_primary_category_from_latest_snapshot_that_has_one(new_db: NewDb) -> None:
    events: list[Event] = [
        paper("2101.00001", ts(0), category="cs.DC", version=1),
        paper("2101.00001", ts(1), category=None, version=2, title="New"),
    ]
    rec = _json(_ledger_with(new_db(), events).record("2101.00001"))
    assert rec["paper"]["primary_category"] == "cs.DC"
    assert rec["paper"]["latest_version"] == 2 and rec["paper"]["title"] == "New"


def test_measurements_latest_per_source_and_metric(new_db: NewDb) -> None:
    pid = "2101.00001"
    events: list[Event] = [
        paper(pid, ts(0)),
        measurement(pid, ts(1), 5),
        measurement(pid, ts(2), 9),
        measurement(pid, ts(3), 7, "semantic_scholar", "citationCount"),
    ]
    rec = _json(_ledger_with(new_db(), events).record(pid))
    assert [(m["source"], m["value"]) for m in rec["external_citation_measurements"]] == [
        ("openalex", 9),
        ("semantic_scholar", 7),
    ]
    lane = rec["coverage"][3]
    assert (lane["denominator"], lane["records_observed"], lane["source_observed_at"]) == (2, 2, ts(3))


def test_caps_and_ordering(new_db: NewDb) -> None:
    pid = "2101.00001"
    events: list[Event] = [paper(pid, ts(0))]
    events += [citation(oid_of(n), pid, ts(1, n), 150 - n) for n in range(150)]
    rec = _json(_ledger_with(new_db(), events).record(pid))
    assert rec["reference_resolution"]["displayed"] == 100
    assert rec["reference_resolution"]["total_outbound_references"] == 150
    assert [o["citation"]["reference_index"] for o in rec["outbound"]] == list(range(1, 101))
    assert rec["coverage"][0]["denominator"] == 150 and rec["coverage"][0]["records_observed"] == 100


def test_statement_budget_150_references_30_inbound(new_db: NewDb) -> None:
    """caps.database_statements = 6 holds whatever the size: every statement the store hands the
    database is counted (sqlite3's trace callback; PostgresStore.trace), transaction control and the
    head aside."""
    pid = "2101.00001"
    events: list[Event] = [paper(pid, ts(0)), paper("2101.00002", ts(0, 1)), paper("2101.00003", ts(0, 2))]
    events.append(check("crossref", ts(500), None))
    for n in range(150):
        w = work(f"w-{n}", ts(1, n), pith="2101.00002" if n % 2 else None)
        events.append(citation(oid_of(n), pid, ts(1, n), n, w))
        events.append(resolution(oid_of(n), ts(2, n), cited_arxiv="2101.00002" if n % 2 else "2101.00003"))
    for n in range(30):
        citing = f"2201.{n:05d}"
        events.append(paper(citing, ts(3, n)))
        events.append(citation(oid_of(1000 + n), citing, ts(4, n), 0, work(f"x-{n}", ts(4, n))))
        events.append(resolution(oid_of(1000 + n), ts(5, n), cited_arxiv=pid))
    ledger = _ledger_with(new_db(), events)
    ledger.record(pid)  # warm this thread's connection
    (rec, _, _), statements = _traced(ledger, lambda: ledger.record(pid))
    counted = [
        s
        for s in statements
        if s.split()[0].upper() not in ("BEGIN", "COMMIT") and "ORDER BY seq DESC LIMIT 1" not in s
    ]
    assert rec.reference_resolution.total_outbound_references == 150
    assert len(rec.inbound) == 30
    assert all(o.standing_notice.state == "measured" for o in rec.outbound)
    assert counted, f"the trace saw no statement but these: {statements}"
    assert len(counted) <= rec.caps.database_statements, counted


def _traced(ledger: Ledger, action: Callable[[], R]) -> tuple[R, list[str]]:
    """What `action` returns, and every SQL text the ledger's store handed its database meanwhile."""
    statements: list[str] = []
    store: Any = ledger.store
    if is_pg_url(ledger.url):
        store.trace = statements
        try:
            return action(), statements
        finally:
            store.trace = None
    store._conn().set_trace_callback(statements.append)
    try:
        return action(), statements
    finally:
        store._conn().set_trace_callback(None)


# -- hypothesis properties -------------------------------------------------------------------

_SETTINGS = settings(
    max_examples=examples(60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

NewLedger = Callable[[str], Ledger]


class Scratch:
    """Empty ledgers for the examples of one hypothesis test, by name.

    SQLite: new files in a new directory for every example. PostgreSQL: one database per name for the
    whole test, emptied before each example that asks for it again (a new database per ledger would
    be hundreds of them, ~0.5 s each)."""

    def __init__(self, db_factory: Callable[[Path, str], str], directory: Callable[[], Path]) -> None:
        self.db_factory = db_factory
        self.directory = directory
        self.reused: dict[str, str] = {}

    @contextmanager
    def example(self) -> Iterator[NewLedger]:
        """`new(name)`: an empty ledger of its own; all of them are closed when the example ends."""
        directory = self.directory()
        opened: list[Ledger] = []

        def new(name: str) -> Ledger:
            db = self.reused.get(name)
            if db is None:
                db = self.db_factory(directory, name)
                if is_pg_url(db):
                    self.reused[name] = db
            else:
                _empty(db)
            ledger = Ledger(db)
            opened.append(ledger)
            assert ledger.head().seq == 0 and not ledger.store.read_log(), f"{name} is not empty"
            return ledger

        try:
            yield new
        finally:
            for ledger in opened:
                ledger.close()


def _empty(db: str) -> None:
    """Delete every row of every ledger table of a PostgreSQL database (its append-only triggers off
    meanwhile, as tests/raw.py's attacker does); the schema and its version stay."""
    sql = (
        "SELECT tablename FROM pg_tables WHERE schemaname = current_schema() "
        "AND tablename <> 'ledger_schema' ORDER BY tablename"
    )
    tables = [name for (name,) in raw.rows(db, sql)]
    raw.edit(db, "TRUNCATE " + ", ".join(tables))


@pytest.fixture
def scratch(
    db_factory: Callable[[Path, str], str],
    tmp_path_factory: pytest.TempPathFactory,
    request: pytest.FixtureRequest,
) -> Scratch:
    return Scratch(db_factory, lambda: tmp_path_factory.mktemp(request.node.name[:30]))


def _records(ledger: Ledger, t: int) -> dict[str, bytes | None]:
    out: dict[str, bytes | None] = {}
    for pid in PAPERS:
        try:
            out[pid] = ledger.record_bytes(pid, t)[0]
        except NotFound:
            out[pid] = None
    return out


@_SETTINGS
@given(events=ledgers(), cut=st.integers(0, 430), data=st.data())
def test_as_of_equals_a_ledger_of_only_earlier_events(
    scratch: Scratch, events: list[Event], cut: int, data: Any
) -> None:
    t = parse_ts(ts(cut, data.draw(st.integers(0, 999_999))))
    with scratch.example() as new:
        full = _ledger_with(new("full.db"), events)
        earlier = [e for e in events if parse_ts(e.observed_at) <= t]
        partial = _ledger_with(new("partial.db"), earlier)
        assert _records(full, t) == _records(partial, t)


@_SETTINGS
@given(events=ledgers(), seed=st.integers(0, 2**32))
def test_append_order_does_not_change_records(scratch: Scratch, events: list[Event], seed: int) -> None:
    shuffled = list(events)
    random.Random(seed).shuffle(shuffled)
    with scratch.example() as new:
        a = _ledger_with(new("a.db"), events)
        b = new("b.db")
        for chunk in _chunks(valid_order(shuffled), seed):
            b.append(chunk)
        t = parse_ts(ts(600))
        assert _records(a, t) == _records(b, t)


def _chunks(events: list[Event], seed: int) -> list[list[Event]]:
    rng, out, i = random.Random(seed), [], 0
    while i < len(events):
        n = rng.randint(1, 5)
        out.append(events[i : i + n])
        i += n
    return out


@contextmanager
def _ledger_and_cut(
    scratch: Scratch, name: str, events: list[Event], cut: int
) -> Iterator[tuple[NewLedger, Ledger, int]]:
    """In one example: `new` for more ledgers, the ledger `name` of `events`, and the instant `cut`."""
    with scratch.example() as new:
        yield new, _ledger_with(new(name), events), parse_ts(ts(cut))


@_SETTINGS
@given(events=ledgers(), cut=st.integers(0, 430))
def test_round_trip_import_of_any_projected_record(scratch: Scratch, events: list[Event], cut: int) -> None:
    with _ledger_and_cut(scratch, "src.db", events, cut) as (new, source, t):
        for pid, body in _records(source, t).items():
            if body is None:
                continue
            target = new(f"rt-{pid.replace('/', '_')}.db")
            target.import_bytes(body)
            record = json.loads(body)
            again, _ = target.record_bytes(pid, parse_ts(record["as_of"]))
            assert again == body
            assert target.import_bytes(body).appended == 0


@_SETTINGS
@given(events=ledgers(), cut=st.integers(0, 430))
def test_memory_reader_agrees_with_the_store(scratch: Scratch, events: list[Event], cut: int) -> None:
    with _ledger_and_cut(scratch, "mem.db", events, cut) as (_, ledger, t):
        log = ledger.store.read_log()
        for pid, body in _records(ledger, t).items():
            try:
                built = build_record(MemoryReader(log, t), pid, t)
            except NotFound:
                assert body is None
                continue
            assert canonical(built.record) == body


@settings(_SETTINGS, max_examples=examples(15))  # each example is a new ledger: kept under 10 s
@given(events=ledgers(), cut=st.integers(0, 430))
def test_the_typed_record_is_its_canonical_json(scratch: Scratch, events: list[Event], cut: int) -> None:
    """The Record Structs encode to what record-v1.md's canonical() gives for the same JSON values (the
    keys a record leaves out left out, not null), decode back to themselves, and hash by the dict rule."""
    with _ledger_and_cut(scratch, "typed.db", events, cut) as (_, ledger, t):
        for pid in PAPERS:
            try:
                rec, _, _ = ledger.record(pid, t)
            except NotFound:
                continue
            body = canonical(rec)
            value = json.loads(body)
            assert (
                json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode() == body
            )
            assert msgspec.to_builtins(rec) == value
            assert msgspec.json.decode(body, type=Record) == rec
            for o in (*value["outbound"], *value["inbound"]):
                assert observation_digest(o) == o["observation_digest"]
                if o["standing_notice"]["state"] == "unavailable":
                    assert "observation" not in o["standing_notice"]
                assert ("cited_paper" in o["links"]) == (o["citation"]["cited_paper"] is not None)
            assert context_digest(value) == rec.context_digest
            assert ("pending" in value["reference_resolution"]["state_counts"]) == any(
                o["resolution"]["status"] == "pending" for o in value["outbound"]
            )


def test_known_at_hides_events_recorded_later(new_db: NewDb) -> None:
    pid = "2101.00001"
    clock = Clock()
    ledger = _ledger_with(Ledger(new_db(), clock=clock), [paper(pid, ts(0)), measurement(pid, ts(1), 5)])
    known = clock.advance()
    clock.advance()
    ledger.append([measurement(pid, ts(2), 8)])  # observed long ago, but recorded only now
    now_view = _json(ledger.record(pid))
    then_view = _json(ledger.record(pid, None, known))
    assert now_view["external_citation_measurements"][0]["value"] == 8
    assert then_view["external_citation_measurements"][0]["value"] == 5
