"""Collections (service/collections.py): a change checked, kept in the log, and the membership known at K."""

from __future__ import annotations

import uuid
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger.model.codec import canonical, check_rules, check_types, decode_data, decode_event, event_to_dict
from ledger.model.errors import InvalidEvent, NotFound
from ledger.model.events import CollectionChanged, CollectionData, Event
from ledger.model.instants import parse_instant
from projections.record import build_record
from service.collections import CollectionLimits, change_data, limits_from_env
from service.ledger import Ledger, by_token
from tests.conftest import NewDb
from tests.factories import citation, paper, ts, work

LIMITS = CollectionLimits()
IDS = ["2101.00001", "2101.00002", "2101.00003", "hep-th/9901001"]


class Clock:
    """A ledger clock tests advance by hand (recorded_at is what `known_at` reads)."""

    def __init__(self, us: int) -> None:
        self.us = us

    def now_us(self) -> int:
        self.us += 1_000_000
        return self.us


def test_a_change_round_trips_through_the_codec_and_keeps_its_bytes() -> None:
    event = CollectionChanged(
        observed_at=ts(1), data=CollectionData("office", ["2101.00001"], ["2101.00002"])
    )
    raw = canonical(event_to_dict(event))
    back: Event = decode_event(raw)
    assert back == event and canonical(event_to_dict(back)) == raw
    check_types(back, "events[0]")
    assert msgspec.json.decode(raw)["type"] == "collection.changed"
    data = canonical(event.data)
    assert data == b'{"add":["2101.00001"],"name":"office","remove":["2101.00002"]}'
    assert decode_data("collection.changed", data) == event.data


@pytest.mark.parametrize(
    ("data", "where", "why"),
    [
        pytest.param(("bad name", ["2101.00001"], []), "data.name", "bad collection name", id="space"),
        pytest.param(("", ["2101.00001"], []), "data.name", "1 to 128", id="empty-name"),
        pytest.param(("x" * 129, ["2101.00001"], []), "data.name", "1 to 128", id="long-name"),
        pytest.param(("..", ["2101.00001"], []), "data.name", "a letter or digit first", id="dots"),
        pytest.param(("c", [], []), "data.add", "at least one", id="nothing"),
        pytest.param(("c", ["arXiv:2101.00001"], []), "data.add[0]", "bad arXiv id", id="prefixed"),
        pytest.param(("c", ["2101.00001v2"], []), "data.add[0]", "bad arXiv id", id="versioned"),
        pytest.param(("c", ["2101.00001", "2101.00001"], []), "data.add[1]", "twice", id="twice"),
        pytest.param(("c", [], ["2101.00001", "x"]), "data.remove[1]", "bad arXiv id", id="bad-remove"),
        pytest.param(("c", ["2101.00001"], ["2101.00001"]), "data.remove", "both", id="both"),
    ],
)  # fmt: skip
def test_the_event_rules_refuse_naming_the_field(data: tuple[Any, ...], where: str, why: str) -> None:
    event = CollectionChanged(observed_at=ts(1), data=CollectionData(*data))
    with pytest.raises(InvalidEvent, match=why) as refused:
        check_rules(event, "events[0]", now=10**18)
    assert refused.value.where == f"events[0].{where}"


def test_a_change_as_asked_reads_ids_as_pasted_once_each_sorted() -> None:
    data = change_data(
        "office",
        ["arXiv:2101.00002v3", "https://arxiv.org/abs/2101.00001", "2101.00002"],
        ["hep-th/9901001"],
        LIMITS,
    )
    assert data == CollectionData("office", ["2101.00001", "2101.00002"], ["hep-th/9901001"])


@pytest.mark.parametrize(
    ("args", "where", "why"),
    [
        pytest.param(("a b", ["2101.00001"], []), "name", "bad collection name", id="name"),
        pytest.param(("n" * 65, ["2101.00001"], []), "name", "LEDGER_COLLECTION_MAX_NAME", id="name-cap"),
        pytest.param((7, ["2101.00001"], []), "name", "a string", id="name-type"),
        pytest.param(("c", "2101.00001", []), "add", "a list", id="add-not-list"),
        pytest.param(("c", ["2101.00001", 3], []), "add[1]", "a string", id="add-type"),
        pytest.param(("c", ["no"], []), "add[0]", "bad arXiv id", id="add-bad"),
        pytest.param(("c", [], []), "add", "at least one", id="empty"),
        pytest.param(("c", ["2101.00001"], ["arXiv:2101.00001v1"]), "remove", "both", id="both"),
        pytest.param(("c", ["2101.00001", "2101.00002"], ["2101.00003"]), "add", "LEDGER_COLLECTION_MAX_IDS",
                     id="ids-cap"),
    ],
)  # fmt: skip
def test_a_bad_change_is_refused_naming_the_field_and_the_setting(
    args: tuple[Any, ...], where: str, why: str
) -> None:
    with pytest.raises(InvalidEvent, match=why) as refused:
        name, add, remove = args
        change_data(name, add, remove, CollectionLimits(max_ids=2))
    assert refused.value.where == where


def test_the_limits_are_read_from_the_environment_and_a_bad_one_is_named() -> None:
    assert limits_from_env({"LEDGER_COLLECTION_MAX_IDS": "10", "LEDGER_COLLECTION_MAX_NAME": "20"}) == (
        CollectionLimits(max_ids=10, max_name=20)
    )
    with pytest.raises(ValueError, match="LEDGER_COLLECTION_MAX_IDS must be a positive integer"):
        limits_from_env({"LEDGER_COLLECTION_MAX_IDS": "0"})
    with pytest.raises(ValueError, match="LEDGER_COLLECTION_MAX_NAME must be at most 128"):
        limits_from_env({"LEDGER_COLLECTION_MAX_NAME": "129"})


def test_members_are_known_at_each_instant_and_a_collection_never_made_is_none(new_db: NewDb) -> None:
    clock = Clock(1_800_000_000_000_000)
    ledger = Ledger(new_db(), clock=clock)
    before = clock.us
    ledger.intake.change_collection(change_data("office", IDS[:2], [], LIMITS))
    first = clock.us
    ledger.intake.change_collection(change_data("office", [IDS[2]], [IDS[0]], LIMITS))
    ledger.intake.change_collection(change_data("other", [IDS[3]], [], LIMITS))
    ledger.intake.change_collection(change_data("other", [], [IDS[3]], LIMITS))
    c = ledger.collections
    assert c.members("office", before) is None and c.names(before) == []
    assert c.members("office", first) == frozenset(IDS[:2])
    assert c.members("office") == frozenset({IDS[1], IDS[2]}) == c.members("office", clock.us)
    assert c.members("other") == frozenset()  # made, then emptied: not None
    assert c.members("never") is None and c.members("bad name") is None
    assert c.members("a\x00b") is None and c.members("x" * 200) is None  # never reach SQL
    assert c.names() == ["office", "other"] and c.names(first) == ["office"]
    assert c.sizes() == {"office": 2, "other": 0}
    # bound to a head read already: no change past its seq
    assert c.members("office", upto_seq=1) == frozenset(IDS[:2]) and c.names(upto_seq=2) == ["office"]
    assert c.sizes(upto_seq=3) == {"office": 2, "other": 1} and c.members("other", upto_seq=2) is None


def test_removing_from_a_collection_never_made_is_refused_and_writes_nothing(new_db: NewDb) -> None:
    ledger = Ledger(new_db())
    with pytest.raises(NotFound, match="no collection 'office'"):
        ledger.intake.change_collection(change_data("office", [], [IDS[0]], LIMITS))
    assert ledger.head().seq == 0


def test_a_change_is_chained_verified_and_recorded_as_its_writer(new_db: NewDb) -> None:
    ledger = Ledger(new_db())
    done = ledger.intake.change_collection(
        change_data("office", IDS[:2], [], LIMITS), by=by_token("ab" * 32, "POST x")
    )
    (stored,) = ledger.store.read_log()
    assert (
        stored.stream == "collection:office"
        and stored.stream_version == 1
        and stored.seq == done.result.items[0].seq
    )
    assert ledger.store.writers.writer_of(stored.seq) == (1, 1, "token:" + "ab" * 32, "POST x")
    assert ledger.verify().ok


def test_records_ignore_collection_events(new_db: NewDb) -> None:
    ledger = Ledger(new_db())
    ledger.append(
        [
            paper(IDS[0], ts(1)),
            citation("00000000-0000-4000-8000-000000000001", IDS[0], ts(2), 0, work("w-1", ts(2))),
        ]
    )
    t = parse_instant(ts(3))
    before, _ = ledger.record_bytes(IDS[0], t)
    lanes = ledger.records.timeline(IDS[0])[0]
    ledger.intake.change_collection(change_data("office", [IDS[0]], [], LIMITS))
    after, _ = ledger.record_bytes(IDS[0], t)
    assert after == before and ledger.records.timeline(IDS[0])[0] == lanes
    with ledger.store.snapshot(t) as reader:
        assert canonical(build_record(reader, IDS[0], t).record) == before


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.lists(
        st.tuples(st.sampled_from(["a", "b"]), st.sets(st.sampled_from(IDS)), st.sets(st.sampled_from(IDS))),
        min_size=1,
        max_size=8,
    )
)
def test_members_known_at_each_step_are_those_of_a_set_model(new_db: NewDb, steps: list[Any]) -> None:
    clock = Clock(1_800_000_000_000_000)
    ledger = Ledger(new_db(f"{uuid.uuid4().hex}.db"), clock=clock)  # a new ledger for each example
    model: dict[str, set[str]] = {}
    seen: list[tuple[int, dict[str, frozenset[str]]]] = []
    for name, add, remove in steps:
        remove = remove - add
        if not add and not remove:
            continue
        if not add and name not in model:
            with pytest.raises(NotFound):
                ledger.intake.change_collection(change_data(name, [], sorted(remove), LIMITS))
            continue
        ledger.intake.change_collection(change_data(name, sorted(add), sorted(remove), LIMITS))
        model.setdefault(name, set()).difference_update(remove)
        model[name].update(add)
        seen.append((clock.us, {n: frozenset(m) for n, m in model.items()}))
    c = ledger.collections
    for at, want in seen:
        assert {n: c.members(n, at) for n in ("a", "b")} == {n: want.get(n) for n in ("a", "b")}
        assert c.names(at) == sorted(want)
    ledger.close()


@settings(max_examples=60, deadline=None)
@given(
    st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._-]{0,40}", fullmatch=True),
    st.lists(st.sampled_from(IDS), unique=True),
    st.lists(st.sampled_from(IDS), unique=True),
)
def test_any_valid_change_round_trips_through_its_canonical_bytes(
    name: str, add: list[str], remove: list[str]
) -> None:
    remove = [r for r in remove if r not in add]
    event = CollectionChanged(observed_at=ts(1), data=CollectionData(name, add, remove))
    raw = canonical(event_to_dict(event))
    if not add and not remove:
        with pytest.raises(InvalidEvent, match="at least one"):
            decode_event(raw)
        return
    back = decode_event(raw)
    assert back == event and canonical(event_to_dict(back)) == raw
    assert decode_data("collection.changed", canonical(back.data)) == event.data
