"""A citation's `reference` (resolver-v1.md) is not part of the record's JSON: record-v1 is unchanged."""

from __future__ import annotations

import msgspec

from ledger.model import events as ev
from ledger.model.codec import canonical
from ledger.model.instants import parse_ts
from ledger.model.works import Reference
from service.ledger import Ledger
from tests.conftest import NewDb
from tests.factories import citation, oid_of, paper, ts

REF = Reference(unstructured="S. Rajbhandari et al. ZeRO. SC20, 2020.", year="2020", first_page="1")


def _record(db: str, with_reference: bool) -> bytes:
    ledger = Ledger(db)
    cited = citation(oid_of(1), "2509.02480", ts(2), index=3)
    if with_reference:
        cited = msgspec.structs.replace(cited, data=msgspec.structs.replace(cited.data, reference=REF))
    ledger.append([paper("2509.02480", ts(1)), cited])
    record, _, _ = ledger.record("2509.02480", parse_ts(ts(3)))
    stored = [e for e in ledger.store.read_log() if e.type == "citation.observed"][0]
    assert (b'"reference":' in stored.data) == with_reference
    ledger.close()
    return canonical(record)


def test_a_record_is_the_same_with_or_without_the_references_of_its_citations(new_db: NewDb) -> None:
    plain, referenced = _record(new_db("plain.db"), False), _record(new_db("ref.db"), True)
    assert b"Rajbhandari" not in referenced
    assert referenced == plain


def test_a_citation_with_a_reference_round_trips_through_the_store(new_db: NewDb) -> None:
    ledger = Ledger(new_db())
    data = ev.CitationData(oid_of(1), "2509.02480", 0, "pdf_text", None, REF)
    ledger.append([paper("2509.02480", ts(1)), ev.CitationObserved(observed_at=ts(2), data=data)])
    (stored,) = [e for e in ledger.store.read_log() if e.type == "citation.observed"]
    assert msgspec.json.decode(stored.data, type=ev.CitationData).reference == REF
    assert ledger.verify().ok
