"""One rich ledger history the contract tests replay on every backend (batches of events)."""

from __future__ import annotations

from ledger.model.events import Event
from ledger.model.importer import Batch, parse_input
from service.ledger import Ledger
from tests.factories import check, citation, measurement, notice, oid_of, paper, resolution, ts, work

PID = "2101.00001"


def batches(fixture_bytes: bytes) -> list[Batch | list[Event]]:
    """The real record, then papers, citations both ways, resolutions, checks with notices, measurements."""
    out: list[Batch | list[Event]] = [parse_input(fixture_bytes)]
    out.append([paper(PID, ts(0)), paper("2101.00002", ts(0, 1)), paper("2101.00003", ts(0, 2), version=2)])
    refs: list[Event] = []
    for n in range(40):
        w = work(f"w-{n}", ts(1, n), pith="2101.00002" if n % 2 else None)
        refs.append(citation(oid_of(n), PID, ts(1, n), n, w))
        refs.append(resolution(oid_of(n), ts(2, n), cited_arxiv="2101.00002" if n % 2 else "2101.00003"))
    out.append(refs)
    inbound: list[Event] = []
    for n in range(12):
        citing = f"2201.{n:05d}"
        inbound.append(paper(citing, ts(3, n)))
        inbound.append(citation(oid_of(1000 + n), citing, ts(4, n), 0, work(f"x-{n}", ts(4, n))))
        inbound.append(resolution(oid_of(1000 + n), ts(5, n), cited_arxiv=PID))
    out.append(inbound)
    out.append([check("crossref", ts(500), None)])
    out.append([check("retraction_watch", ts(510), ["w-1", "w-2", "w-3"], [notice("w-2")])])
    out.append([measurement(PID, ts(600), 7), measurement(PID, ts(700), 9), paper(PID, ts(800), version=2)])
    out.append([resolution(oid_of(3), ts(900), "unresolved", cited_arxiv=None)])
    return out


def replay(ledger: Ledger, fixture_bytes: bytes) -> None:
    """Append every batch of the scenario."""
    for b in batches(fixture_bytes):
        if isinstance(b, Batch):
            ledger.append_batch(b)
        else:
            ledger.append(b)
