"""What changed between two instants: the pure diff and the events it names, over small ledgers."""

from __future__ import annotations

from typing import Any

import pytest

from ledger.model.errors import InvalidEvent, NotFound
from ledger.model.events import Event
from ledger.model.facts import Head
from ledger.model.instants import parse_ts
from projections.diff import MISSING, Changes, Json, diff_records, field_changes, json_diff
from service.ledger import Ledger
from tests.conftest import NewDb
from tests.factories import check, citation, measurement, notice, oid_of, paper, resolution, ts, work

P, Q, R = "2101.00001", "2101.00002", "2101.00003"


def _changes(ledger: Ledger, arxiv_id: str, from_us: int, to_us: int) -> tuple[Changes, Head]:
    """The diff from FROM to TO and the head it was read at (one read of the ledger)."""
    d, head, _ = ledger.records.changes(arxiv_id, from_us, to_us)
    return d, head


def _at(step: int) -> int:
    return parse_ts(ts(step))


def _history() -> list[Event]:
    """A reference resolved, re-bound, noticed then un-noticed; a new reference; an inbound citation."""
    w1, w2 = work("w-1", ts(1)), work("w-2", ts(10))
    return [
        paper(P, ts(0)),
        paper(Q, ts(0)),
        paper(R, ts(0)),
        citation(oid_of(0), P, ts(1), 0, w1),  # seq 4
        check("retraction_watch", ts(2), ["w-1"]),  # 5
        resolution(oid_of(0), ts(10), "verified_exact", cited=w2, cited_arxiv=Q),  # 6
        check("retraction_watch", ts(11), ["w-1", "w-2"], [notice("w-2")]),  # 7
        measurement(P, ts(12), 5),  # 8
        check("retraction_watch", ts(20), ["w-2"]),  # 9: the notice went away
        measurement(P, ts(21), 7),  # 10
        citation(oid_of(1), R, ts(1), 3, None),  # 11: R cites P ...
        resolution(oid_of(1), ts(2), "verified_exact", cited_arxiv=P),  # 12
        resolution(oid_of(1), ts(15), "verified_exact", cited_arxiv=Q),  # 13: ... then resolves to Q
        citation(oid_of(2), P, ts(16), 1, work("w-3", ts(16))),  # 14: a new reference
    ]


@pytest.fixture
def ledger(new_db: NewDb) -> Ledger:
    ledger = Ledger(new_db())
    ledger.append(_history())
    return ledger


def _obs(d: dict[str, Any], oid: str) -> dict[str, Any]:
    [o] = [o for o in d["observations"] if o["observation_id"] == oid]
    return o


def _kinds(o: dict[str, Any]) -> list[str]:
    return [c["kind"] for c in o["changes"]]


def _seqs(items: list[dict[str, Any]]) -> list[int]:
    return [e["seq"] for e in items]


def test_resolution_rebinding_and_a_notice_appearing(ledger: Ledger) -> None:
    d, head = _changes(ledger, P, _at(5), _at(13))
    assert head.seq == 14 and d["changed"]
    o = _obs(d, oid_of(0))
    assert o["change"] == "changed" and o["lane"] == "outbound" and o["status"] == "verified_exact"
    assert "resolution" in _kinds(o) and "cited_work_rebound" in _kinds(o)
    [rebound] = [c for c in o["changes"] if c["kind"] == "cited_work_rebound"]
    assert (rebound["from"]["work_id"], rebound["to"]["work_id"]) == ("w-1", "w-2")
    status = [c for c in o["changes"] if c.get("path") == "resolution.status"]
    assert status == [
        {"from": "pending", "kind": "resolution", "path": "resolution.status", "to": "verified_exact"}
    ]
    [appeared] = [c for c in o["changes"] if c["kind"] == "notice_appeared"]
    assert appeared["notice"]["kind"] == "retraction" and appeared["notice"]["source"] == "retraction_watch"
    [moved] = [c for c in o["changes"] if c["kind"].startswith("receipt_")]
    assert moved == {"from": ts(2), "kind": "receipt_moved", "source": "retraction_watch", "to": ts(11)}
    # the resolution and the new check; Q's snapshot (seq 2) predates FROM: the resolution made it show
    assert _seqs(o["events"]) == [6, 7]
    assert [c["kind"] for c in o["changes"] if c["kind"] == "cited_paper"]
    [m] = d["external_citation_measurements"]
    assert (m["change"], m["to"]["value"], _seqs(m["events"])) == ("added", 5, [8])
    assert d["standing_sources"] == [
        {
            "events": [{"observed_at": ts(11), "seq": 7, "type": "standing.checked"}],
            "from": ts(2),
            "source": "retraction_watch",
            "to": ts(11),
        }
    ]


def test_a_notice_going_away_names_the_newer_check(ledger: Ledger) -> None:
    d, _ = _changes(ledger, P, _at(13), _at(22))
    o = _obs(d, oid_of(0))
    assert _kinds(o) == ["receipt_moved", "notice_gone"]
    assert _seqs(o["events"]) == [9]
    [m] = d["external_citation_measurements"]
    assert (m["change"], m["from"]["value"], m["to"]["value"], _seqs(m["events"])) == ("changed", 5, 7, [10])


def test_added_and_removed_observations(ledger: Ledger) -> None:
    d, _ = _changes(ledger, P, _at(5), _at(22))
    added = _obs(d, oid_of(2))
    assert (added["change"], added["changes"], _seqs(added["events"])) == ("added", [], [14])
    removed = _obs(d, oid_of(1))  # R's citation was re-resolved to Q: it left P's inbound list
    assert (removed["change"], removed["lane"], _seqs(removed["events"])) == ("removed", "inbound", [13])
    lanes = {c["lane"]: c for c in d["coverage"]}
    assert {"path": "denominator", "from": 1, "to": 0} in lanes["inbound_itemization"]["changes"]
    assert _seqs(lanes["inbound_itemization"]["events"]) == [13]
    assert {"from": 1, "path": "reference_resolution.total_outbound_references", "to": 2} in d[
        "reference_resolution"
    ]["changes"]
    assert _seqs(d["events"]) == sorted(set(_seqs(d["events"])))


def test_no_change_and_bad_ranges(ledger: Ledger) -> None:
    d, _ = _changes(ledger, P, _at(22), _at(30))
    assert not d["changed"] and d["observations"] == [] and d["events"] == []
    with pytest.raises(InvalidEvent, match="after"):
        _changes(ledger, P, _at(30), _at(22))
    with pytest.raises(NotFound):
        _changes(ledger, "2101.09999", _at(0), _at(30))


def test_from_before_the_paper_was_observed(ledger: Ledger) -> None:
    d, _ = _changes(ledger, P, parse_ts("2025-12-31T00:00:00Z"), _at(3))
    assert d["from"] is None
    assert [o["change"] for o in d["observations"]] == ["added", "added"]
    assert d["paper"]["changes"] and _seqs(d["paper"]["events"]) == [1]


def test_pure_diff_of_identical_records_is_empty(ledger: Ledger) -> None:
    record, _, _ = ledger.record(P, _at(22))
    d = diff_records(record, record, [])
    assert not d["changed"] and d["from"] == d["to"]


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        pytest.param({"x": [1, {"y": 2}]}, {"x": [1, {"y": 2}]}, [], id="equal"),
        pytest.param(None, None, [], id="equal-null"),
        pytest.param(
            {"l": [[1, 2], [3]]},
            {"l": [[1], [3, 4], [5]]},
            [("l[0][1]", 2, MISSING), ("l[1][1]", MISSING, 4), ("l[2]", MISSING, [5])],
            id="nested-lists-of-different-lengths",
        ),
        pytest.param(
            {"gone": 1, "kept": {"n": 1}},
            {"kept": {"n": 1, "new": None}, "added": {"k": []}},
            [("added", MISSING, {"k": []}), ("gone", 1, MISSING), ("kept.new", MISSING, None)],
            id="keys-added-and-removed",
        ),
        pytest.param(
            {"a": 1, "b": [], "c": "1", "d": {"x": 1}},
            {"a": True, "b": {}, "c": 1, "d": [1]},
            [("a", 1, True), ("b", [], {}), ("c", "1", 1), ("d", {"x": 1}, [1])],
            id="type-changes",
        ),
        pytest.param([1], [2], [("[0]", 1, 2)], id="root-list"),
        pytest.param(1, "1", [("", 1, "1")], id="root-leaf"),
    ],
)
def test_json_diff(a: Any, b: Any, expected: list[tuple[str, Any, Any]]) -> None:
    assert json_diff(a, b) == expected


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        pytest.param({"l": [1, 2]}, {"l": [1, 2]}, [], id="equal-lists"),
        pytest.param({"l": [1, 2]}, {"l": [1]}, [("p.l", [1, 2], [1])], id="list-is-one-value"),
        pytest.param({"l": [1]}, {"l": [True]}, [("p.l", [1], [True])], id="list-item-type-change"),
        pytest.param({"k": None}, {}, [], id="absent-key-is-null"),
        pytest.param({}, {"k": {"n": 1}}, [("p.k", None, {"n": 1})], id="key-added"),
    ],
)
def test_json_diff_lists_as_values_absent_as_null(
    a: Any, b: Any, expected: list[tuple[str, Any, Any]]
) -> None:
    assert json_diff(a, b, "p", lists=False, missing=None) == expected


def test_field_changes_lists_leaves() -> None:
    a: Json = {"x": {"y": 1, "z": [1]}, "k": None}
    b: Json = {"x": {"y": 2, "z": [1]}, "k": {"n": 1}}
    assert field_changes(a, b) == [
        {"from": None, "path": "k", "to": {"n": 1}},
        {"from": 1, "path": "x.y", "to": 2},
    ]


def test_a_long_lane_is_counted_before_it_is_listed(new_db: NewDb, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ten citing papers arrive; the record shows four: the diff lists those and counts all ten."""
    from cli.sources import diff_lines

    monkeypatch.setitem(__import__("projections.record").record.CAPS, "inbound", 4)
    ledger = Ledger(new_db())
    ledger.append([paper("2101.00001", ts(0))])
    for n in range(10):
        citing = f"2201.{n:05d}"
        ledger.append(
            [
                paper(citing, ts(1, n)),
                citation(oid_of(n), citing, ts(2, n), 0),
                resolution(oid_of(n), ts(3, n), cited_arxiv="2101.00001"),
            ]
        )
    d, _ = _changes(ledger, "2101.00001", _at(0), _at(10))
    assert d["counts"] == {
        "inbound": {"from": 0, "shown_from": 0, "shown_to": 4, "to": 10},
        "outbound": {"from": 0, "shown_from": 0, "shown_to": 0, "to": 0},
    }
    assert [o["change"] for o in d["observations"]] == ["added"] * 4
    assert diff_lines(d)[1] == "  inbound 0 -> 10 (4 shown)"
