"""The store contract, run against every backend: same events, chain, reads and records as SQLite."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

import pytest

from ledger.model.errors import Conflict, InvalidEvent
from ledger.model.instants import parse_as_of
from ledger.storage.backend import is_pg_url
from ledger.storage.sql_store import SqlStore
from projections.memory import MemoryReader
from service.ledger import Ledger
from tests.contract.conftest import BASE_US, FixedClock
from tests.contract.scenario import PID, replay
from tests.factories import citation, measurement, oid_of, paper, resolution, run_threads, ts

FIXTURE = Path(__file__).resolve().parent.parent / "data" / "2509.02480.record.json"
FIXTURE_ID = "2509.02480"
AS_OFS = ["2026-01-01T00:30:00Z", "2026-01-01T09:00:00Z", "2026-01-02T00:00:00Z", "2030-01-01T00:00:00Z"]


@pytest.fixture
def fixture_bytes() -> bytes:
    """The real record, exactly as served."""
    return FIXTURE.read_bytes()


@pytest.fixture
def pair(
    store_url: str, tmp_path: Path, fixed_clock: FixedClock, fixture_bytes: bytes
) -> tuple[Ledger, Ledger]:
    """(the backend under test, a SQLite reference), both holding the scenario with the same clock."""
    ledger = Ledger(store_url, clock=fixed_clock)
    replay(ledger, fixture_bytes)
    fixed_clock.restart()
    reference = Ledger(tmp_path / "reference.db", clock=fixed_clock)
    replay(reference, fixture_bytes)
    return ledger, reference


def test_chain_and_envelopes_identical_to_sqlite(pair: tuple[Ledger, Ledger]) -> None:
    ledger, reference = pair
    got, want = ledger.store.read_log(), reference.store.read_log()
    assert len(got) == len(want) > 250
    assert got == want  # every field: seq, event_id, stream, version, recorded_at, data bytes, hashes
    assert ledger.head() == reference.head()
    assert list(ledger.store.iter_chain(batch=50)) == list(reference.store.iter_chain())
    assert list(ledger.store.iter_check_works()) == list(reference.store.iter_check_works())


def test_log_filters_and_lookups_match(pair: tuple[Ledger, Ledger]) -> None:
    ledger, reference = pair
    a, b = ledger.store, reference.store
    assert a.read_log(10, 7) == b.read_log(10, 7)
    assert a.read_log(0, None, f"paper:{PID}") == b.read_log(0, None, f"paper:{PID}")
    assert a.read_log(0, 5, None, "standing.checked") == b.read_log(0, 5, None, "standing.checked")
    assert a.envelopes([5, 1, 140, 99999]) == b.envelopes([5, 1, 140, 99999])
    assert a.paper_history(PID) == b.paper_history(PID)
    assert a.paper_history("9999.99999") == []
    assert a.papers(100) == b.papers(100)
    assert a.papers(2) == b.papers(2)


@pytest.mark.parametrize("as_of", AS_OFS)
def test_five_reads_match(pair: tuple[Ledger, Ledger], as_of: str) -> None:
    ledger, reference = pair
    t = parse_as_of(as_of)
    works = [(f"w-{n}", parse_as_of(ts(1, n))) for n in range(5)] + [("nope", 0)]
    for k in (None, 1_786_000_000_005_000):
        with ledger.store.snapshot(t, k) as r1, reference.store.snapshot(t, k) as r2:
            assert r1.head() == r2.head()
            assert r1.paper_stream(PID) == r2.paper_stream(PID)
            memory = MemoryReader(ledger.store.read_log(), t, k)
            for pid in (PID, "2101.00002", "2201.00003", "0000.00000"):
                for cap in (100, 1, 0):
                    assert r1.inbound(pid, cap) == r2.inbound(pid, cap) == memory.inbound(pid, cap)
            ids = [PID, "2101.00002", "2101.00003", "2201.00003", "0000.00000"]
            assert r1.snapshots(ids) == r2.snapshots(ids)
            assert r1.snapshots([]) == []
            assert r1.source_heads() == r2.source_heads()
            assert sorted(r1.work_checks(works)) == sorted(r2.work_checks(works))


@pytest.mark.parametrize("as_of", AS_OFS)
def test_records_byte_identical(pair: tuple[Ledger, Ledger], as_of: str) -> None:
    ledger, reference = pair
    t = parse_as_of(as_of)
    for pid in (PID, "2101.00002", "2201.00004"):
        for k in (None, 1_786_000_000_004_000):
            try:
                want = reference.record_bytes(pid, t, k)
            except Exception as e:  # noqa: BLE001 - the same refusal on both
                with pytest.raises(type(e)):
                    ledger.record_bytes(pid, t, k)
                continue
            assert ledger.record_bytes(pid, t, k) == want


def test_real_record_byte_identical_at_its_as_of(store_url: str, fixture_bytes: bytes) -> None:
    ledger = Ledger(store_url)
    ledger.import_bytes(fixture_bytes)
    as_of = json.loads(fixture_bytes)["as_of"]
    body, head = ledger.record_bytes(FIXTURE_ID, parse_as_of(as_of))
    assert body == fixture_bytes
    assert head.seq == 132
    assert ledger.verify().ok


def test_idempotent_reimport(store_url: str, fixture_bytes: bytes) -> None:
    ledger = Ledger(store_url)
    first = ledger.import_bytes(fixture_bytes)
    again = ledger.import_bytes(fixture_bytes)
    assert again.appended == 0 and again.duplicates == first.appended == 132
    assert [i.seq for i in again.items] == [i.seq for i in first.items]
    assert [i.hash for i in again.items] == [i.hash for i in first.items]
    assert ledger.head() == first.head


def test_conflict_and_atomicity(store_url: str) -> None:
    ledger = Ledger(store_url)
    ledger.append([paper(PID, ts(0)), citation(oid_of(1), PID, ts(1))])
    head = ledger.head()
    changed = paper(PID, ts(0), title="Another title")
    original_id = ledger.store.read_log()[0].event_id
    with pytest.raises(Conflict):
        ledger.append(
            [measurement(PID, ts(2), 1), type(changed)(**{**_fields(changed), "event_id": original_id})]
        )
    with pytest.raises(
        InvalidEvent
    ):  # a resolution of an unknown observation: nothing of the batch is written
        ledger.append([measurement(PID, ts(3), 1), resolution(oid_of(99), ts(3))])
    with pytest.raises(InvalidEvent):  # an observation belongs to one citing paper forever
        ledger.append([paper("2101.00002", ts(0)), citation(oid_of(1), "2101.00002", ts(4))])
    assert ledger.head() == head


def _fields(e: Any) -> dict[str, Any]:
    return {f: getattr(e, f) for f in e.__struct_fields__}


def test_expected_versions(store_url: str) -> None:
    ledger = Ledger(store_url)
    ledger.append([paper(PID, ts(0)), measurement(PID, ts(1), 1)])
    stream = f"paper:{PID}"
    with pytest.raises(Conflict) as refused:
        ledger.append([measurement(PID, ts(2), 2)], {stream: 1})
    assert refused.value.details == {"stream": stream, "expected": 1, "current": 2}
    result = ledger.append([measurement(PID, ts(2), 2)], {stream: 2})
    assert result.appended == 1 and ledger.store.read_log()[-1].stream_version == 3


def test_group_commit_threads_share_transactions(store_url: str) -> None:
    ledger = Ledger(store_url, group_commit=True)
    ledger.append([paper(PID, ts(0))])
    errors: list[BaseException] = []

    def worker(n: int) -> None:
        try:
            for i in range(10):
                ledger.append([measurement(PID, ts(1, n * 100 + i), i, source=f"s{n}")])
            with pytest.raises(InvalidEvent):  # refused alone, the others in its group commit
                ledger.append([resolution(oid_of(500 + n), ts(2))])
        except BaseException as e:  # noqa: BLE001
            errors.append(e)

    run_threads(*(functools.partial(worker, n) for n in range(6)))
    ledger.close()
    assert errors == []
    reopened = Ledger(store_url)
    assert reopened.head().seq == 61
    assert reopened.verify().ok


def test_integrity_identical_across_backends(
    pair: tuple[Ledger, Ledger], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Merkle roots, proofs, a checkpoint signed with one key, verify and works lookups: as SQLite."""
    from ledger.storage import works_store
    from ledger.tlog import merkle_store
    from ledger.tlog.checkpoint import Checkpointer
    from ledger.tlog.merkle import verify_consistency, verify_inclusion

    ledger, reference = pair
    a, b = ledger.store, reference.store
    size = a.head().seq
    for n in (1, 2, 16, 17, 100, size):
        assert merkle_store.tree_root(a, n) == merkle_store.tree_root(b, n)
    for seq in (1, 16, 17, size):
        got = merkle_store.inclusion(a, seq)
        assert got == merkle_store.inclusion(b, seq)
        verify_inclusion(seq - 1, size, got.leaf_hash, got.path, got.root)
    proof = merkle_store.consistency(a, 17, size)
    assert proof == merkle_store.consistency(b, 17, size)
    verify_consistency(17, size, merkle_store.tree_root(a, 17), merkle_store.tree_root(a, size), proof)
    # the same key signs the same tree: Ed25519 is deterministic, so the notes are byte-identical
    monkeypatch.setenv("LEDGER_KEY_FILE", str(tmp_path / "shared.key"))
    note = Checkpointer.for_db(a, "example.org/log").latest().note
    assert note == Checkpointer.for_db(b, "example.org/log").latest().note
    assert a.tree.last_checkpoint() == note
    report, want = ledger.verify(), reference.verify()
    assert report.ok and report.merkle_nodes_checked == want.merkle_nodes_checked > 0
    keys = ["10.48550/arxiv.2310.04610", "10.48550/arxiv.2509.02480", "10.5555/nowhere"]
    for t in (0, parse_as_of("2026-01-01T09:00:00Z"), 2**62):
        assert works_store.works_known(a, t) == works_store.works_known(b, t)
        assert works_store.papers_known(a, t) == works_store.papers_known(b, t)
        assert works_store.works_matching(a, keys, t) == works_store.works_matching(b, keys, t)
        assert works_store.checkable_works(a, t) == works_store.checkable_works(b, t)
        assert works_store.papers_matching(a, keys, t) == works_store.papers_matching(b, keys, t)
    oids = [o for o, *_ in b.works.latest_cited_works(2**62)][:20]
    assert works_store.observation_events(a, oids, 0, 2**62) == works_store.observation_events(
        b, oids, 0, 2**62
    )
    assert ledger.store.kind == ("postgresql" if is_pg_url(ledger.store.db) else "sqlite")


def test_tables_identical_across_backends(
    pair: tuple[Ledger, Ledger], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The index read in one go or a page at a time, the resume point and the row counts: as SQLite."""
    import dataclasses

    ledger, reference = pair
    a, b = ledger.store, reference.store
    size = a.head().seq
    ranges = [(0, None), (3, 40), (size - 2, None), (size, None)]
    want = [list(b.keys.check_works_after(after, upto)) for after, upto in ranges]
    assert [list(a.keys.check_works_after(after, upto)) for after, upto in ranges] == want
    for store in (a, b):  # pages of 2 rows: the continuation skips nothing, repeats nothing
        assert isinstance(store, SqlStore)
        monkeypatch.setattr(type(store), "dialect", dataclasses.replace(store.dialect, page=2))
        assert [list(store.keys.check_works_after(after, upto)) for after, upto in ranges] == want
    peaks = [bytes([1]) * 32, bytes([2]) * 32]
    for store in (a, b):
        store.verifying.save_verified_point(size, "h", peaks, BASE_US)
        point = store.verifying.verified_point()
        assert point is not None and (point.seq, point.hash, point.peaks) == (size, "h", peaks)
        # the space-separated hex that PostgreSQL ledgers hold still reads
        store.verifying._q(  # type: ignore[attr-defined]
            "UPDATE verified_point SET peaks = ? WHERE id = 1", (" ".join(p.hex() for p in peaks),)
        )
        assert store.verifying.verified_point().peaks == peaks  # type: ignore[union-attr]
    got, ref = a.stats(), b.stats()
    assert {k: got[k] for k in ref} == ref and ref["events"] == size
