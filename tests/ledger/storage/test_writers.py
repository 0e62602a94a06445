"""Who made each write (ledger/storage/writers.py), on the backend under test: one row per acknowledged
batch, written in its transaction (group commit too), none for a refused batch or for duplicates; a
ledger of the layout before the table is upgraded in place; a copy of the ledger carries the rows."""

from __future__ import annotations

import threading

import pytest

from ledger.model.errors import InvalidEvent
from ledger.model.events import Event
from ledger.storage.backend import copy_ledger
from service.ledger import Ledger, WriteBy, WriterRow, writing_as
from tests import raw
from tests.conftest import NewDb
from tests.factories import citation, oid_of, paper, resolution, ts
from tests.old_layout import build_old_ledger, version_before

ALICE = WriteBy("token:" + "a" * 64, "POST /events")
BOB = WriteBy("cli:bob", "ledger import")


def _rows(ledger: Ledger) -> list[WriterRow]:
    return ledger.store.writers.rows_between(1, 2**62)


def _has_writers_table(db: str) -> bool:
    with raw.connect(db) as conn:
        if conn.pg:
            return conn.execute("SELECT to_regclass('event_writers')").fetchone()[0] is not None
        found = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'event_writers'")
        return found.fetchone() is not None


def test_each_write_names_its_seqs_and_writer_and_duplicates_name_none(fresh_ledger: Ledger) -> None:
    first = fresh_ledger.append([paper("2101.00001", ts(0)), paper("2101.00002", ts(0))], by=ALICE)
    with writing_as(BOB):
        fresh_ledger.append([paper("2101.00003", ts(0)), paper("2101.00001", ts(0))])  # one duplicate
    fresh_ledger.append([paper("2101.00002", ts(0))], by=BOB)  # all duplicates: nothing written
    fresh_ledger.append([paper("2101.00004", ts(0))])  # no writer said: none recorded
    assert first.appended == 2
    assert _rows(fresh_ledger) == [WriterRow(1, 2, *ALICE), WriterRow(3, 3, *BOB)]
    found = fresh_ledger.store.writers.writers_of([1, 2, 3, 4, 99])
    assert found == {1: WriterRow(1, 2, *ALICE), 2: WriterRow(1, 2, *ALICE), 3: WriterRow(3, 3, *BOB)}
    assert fresh_ledger.store.writers.writer_of(4) is None


def test_a_refused_batch_records_no_writer(fresh_ledger: Ledger) -> None:
    fresh_ledger.append([paper("2101.00001", ts(0))], by=ALICE)
    orphan = resolution(oid_of(7), ts(1))  # no citation of this observation: refused inside the append
    with pytest.raises(InvalidEvent, match="no citation.observed"):
        fresh_ledger.append([paper("2101.00002", ts(0)), orphan], by=BOB)
    assert fresh_ledger.head().seq == 1 and _rows(fresh_ledger) == [WriterRow(1, 1, *ALICE)]


def test_group_commit_records_each_acknowledged_batch_and_none_of_a_refused_one(new_db: NewDb) -> None:
    ledger = Ledger(new_db(), group_commit=True)
    try:
        ledger.append([paper("2101.00001", ts(0))], by=ALICE)
        acknowledged: dict[int, WriteBy] = {}
        refused: list[str] = []
        lock = threading.Lock()

        def write(i: int) -> None:
            by = WriteBy(f"token:{i:064x}", "POST /events")
            events: list[Event] = [citation(oid_of(i), "2101.00001", ts(1), i)]
            if i % 5 == 0:  # a resolution of an observation nobody cited: this batch alone is refused
                events.append(resolution(oid_of(1000 + i), ts(2)))
            try:
                result = ledger.append(events, by=by)
            except InvalidEvent:
                with lock:
                    refused.append(by.writer)
                return
            with lock:
                acknowledged[result.items[0].seq] = by

        threads = [threading.Thread(target=write, args=(i,)) for i in range(1, 41)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        rows = _rows(ledger)[1:]
        assert len(refused) == 8 and len(acknowledged) == 32
        assert {r.first_seq: WriteBy(r.writer, r.via) for r in rows} == acknowledged
        assert all(r.first_seq == r.last_seq for r in rows)
        assert not {r.writer for r in rows} & set(refused)
    finally:
        ledger.close()


def test_a_ledger_of_the_layout_before_writers_is_upgraded_in_place(new_db: NewDb) -> None:
    source = Ledger(new_db("source.db"))
    source.append([paper("2101.00001", ts(0)), paper("2101.00002", ts(0))], by=ALICE)
    old = new_db("old.db")
    build_old_ledger(old, version_before(old, "event_writers"), source)
    source.close()
    assert not _has_writers_table(old)
    upgraded = Ledger(old)
    try:
        assert _has_writers_table(old)
        assert _rows(upgraded) == []  # written before the record was kept: no writer
        upgraded.append([paper("2101.00003", ts(0))], by=BOB)
        assert _rows(upgraded) == [WriterRow(3, 3, *BOB)]
        assert upgraded.verify().ok
    finally:
        upgraded.close()


def test_the_writers_table_refuses_changes(fresh_ledger: Ledger) -> None:
    fresh_ledger.append([paper("2101.00001", ts(0))], by=ALICE)
    with raw.connect(fresh_ledger.url) as conn, pytest.raises(Exception, match="never change|append-only"):
        conn.execute("UPDATE event_writers SET writer = 'token:forged'")
    assert _rows(fresh_ledger) == [WriterRow(1, 1, *ALICE)]


def test_a_copy_of_the_ledger_carries_its_writers(fresh_ledger: Ledger, new_db: NewDb) -> None:
    for i in range(5):
        fresh_ledger.append([paper(f"2101.{i + 1:05d}", ts(0)), paper(f"2102.{i + 1:05d}", ts(0))], by=ALICE)
    target = Ledger(new_db("copy.db"))
    try:
        copy_ledger(fresh_ledger.store, target.store, batch=3)
        assert _rows(target) == _rows(fresh_ledger) and len(_rows(target)) == 5
    finally:
        target.close()
