"""A resumed walk checks the event ids and spans of what it passed a part at a time (bounded memory):
a break in any part is found, and named."""

from __future__ import annotations

import pytest

from ledger.storage.projector import READ_BY_RECORDS
from ledger.storage.verify import verify_store
from service.ledger import Ledger
from tests.conftest import NewDb
from tests.factories import citation, oid_of, paper, resolution, ts
from tests.raw import edit, rows

P = "2401.00001"
OBSERVATIONS = 7  # with parts of 2: four parts, the last one short


@pytest.fixture
def resumed(new_db: NewDb, monkeypatch: pytest.MonkeyPatch) -> Ledger:
    """A ledger verified up to its first event, then 14 more: parts of 2 ids and 2 observations."""
    ledger = Ledger(new_db())
    # on either backend (PostgreSQL reads the whole list in one statement by default)
    monkeypatch.setattr(type(ledger.store.verifying), "list_part", 2)
    ledger.append([paper(P, ts(0))])
    assert verify_store(ledger.store, remember=ledger.clock).ok
    ledger.append(
        [citation(oid_of(i), f"2201.0000{i}", ts(1), 0) for i in range(OBSERVATIONS)]
        + [resolution(oid_of(i), ts(2), cited_arxiv=P) for i in range(OBSERVATIONS)]
    )
    ledger.ops.project(READ_BY_RECORDS)
    return ledger


def test_a_resumed_walk_in_parts_passes_an_untouched_ledger(resumed: Ledger) -> None:
    report = verify_store(resumed.store, resume=True)
    assert (report.ok, report.resumed_from, report.events_checked) == (True, 1, 2 * OBSERVATIONS)


@pytest.mark.parametrize("which", [0, OBSERVATIONS // 2, OBSERVATIONS - 1], ids=["first", "middle", "last"])
def test_a_forged_span_in_any_part_is_found(resumed: Ledger, which: int) -> None:
    oid = sorted(oid_of(i) for i in range(OBSERVATIONS))[which]
    edit(resumed.url, "UPDATE inbound_spans SET reference_index = 9 WHERE observation_id = ?", params=(oid,))
    report = verify_store(resumed.store, resume=True)
    assert not report.ok
    assert f"inbound spans of observation {oid}" in (report.reason or "")


@pytest.mark.parametrize("which", [0, 7, 13], ids=["first", "middle", "last"])
def test_an_event_id_stored_twice_in_any_part_is_found(resumed: Ledger, which: int) -> None:
    # the id of one of the events the walk passes, keyed again for seq 1 (before the walk's start)
    event_id, seq = sorted(rows(resumed.url, "SELECT event_id, seq FROM events WHERE seq > 1"))[which]
    edit(resumed.url, "INSERT INTO event_keys_recent (key, seq) VALUES (?, 1)", params=(f"e:{event_id}",))
    report = verify_store(resumed.store, resume=True)
    assert not report.ok
    assert report.reason == f"event_id {event_id} is stored more than once (seq 1 and {seq})"
