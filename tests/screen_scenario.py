"""A small ledger to screen: three papers citing a retracted, a corrected and a clean work, resolved in
different ways, checked by two sources over three batches recorded a day apart (so `known_at` tells
them apart). Built at a fixed clock, so the same ledger on SQLite and PostgreSQL holds the same bytes."""

from __future__ import annotations

from typing import NamedTuple

from ledger.model import events as ev
from ledger.model.instants import parse_ts
from service.ledger import Ledger
from tests.factories import Clock

DAY = 86_400_000_000
START = parse_ts("2026-03-01T00:00:00Z")
PAPERS = {
    "2101.00001": "Graph kernels for protein folding",
    "2101.00002": "A survey of folding benchmarks",
    "2101.00003": "Notes on kernel methods",
}
SEEN = "2026-01-05T00:00:00Z"


def _work(doi: str, title: str, venue: str, year: int) -> ev.CitedWork:
    return ev.CitedWork(None, doi, "crossref", None, SEEN, title, venue, f"doi:{doi}", year)


RETRACTED = _work("10.1000/retracted.1", "Fabricated folding energies", "J. Folding", 2024)
CORRECTED = _work("10.1000/corrected.2", "Kernel bounds, revisited", "Ann. Kernels", 2023)
CLEAN = _work("10.1000/clean.3", "A clean result", "J. Clean", 2022)


def oid(n: int) -> str:
    """The observation id of reference n of the scenario."""
    return f"00000000-0000-4000-8000-{n:012d}"


class Seeded(NamedTuple):
    """When each batch was recorded (UTC microseconds)."""

    first: int
    second: int
    third: int


def _notice(work_id: str, kind: str, doi: str, date: str) -> ev.Notice:
    return ev.Notice(work_id, kind, doi, "rw-1", kind.title(), ["Data fabrication"], date, None)  # type: ignore[arg-type]


def _cite(n: int, citing: str, index: int, work: ev.CitedWork, status: str, resolver: str) -> list[ev.Event]:
    return [
        ev.CitationObserved(
            observed_at="2026-01-10T00:00:00Z", data=ev.CitationData(oid(n), citing, index, "pdf_text", None)
        ),
        ev.ResolutionObserved(
            observed_at="2026-01-11T00:00:00Z",
            data=ev.ResolutionData(oid(n), status, resolver, work, None),  # type: ignore[arg-type]
        ),
    ]


def batches() -> list[list[ev.Event]]:
    """The three batches: papers and their references; the first checks; a later check and a re-resolve."""
    papers: list[ev.Event] = [
        ev.PaperObserved(
            observed_at="2026-01-09T00:00:00Z",
            data=ev.PaperData(pid, title, "cs.LG", "2025-09-02T16:30:49Z", "2025-09-02T16:30:49Z", 1),
        )
        for pid, title in PAPERS.items()
    ]
    refs = [
        *_cite(1, "2101.00001", 4, RETRACTED, "verified_exact", "crossref_match"),
        *_cite(2, "2101.00001", 7, CORRECTED, "verified_fuzzy", "crossref_match"),
        *_cite(3, "2101.00002", 0, RETRACTED, "verified_fuzzy", "openalex_match"),
        *_cite(4, "2101.00002", 1, CLEAN, "verified_exact", "crossref_match"),
        *_cite(5, "2101.00003", 2, RETRACTED, "unresolved", "crossref_match"),
        *_cite(6, "2101.00003", 3, CORRECTED, "verified_exact", "crossref_match"),
    ]
    checks: list[ev.Event] = [
        ev.StandingChecked(
            observed_at="2026-02-01T00:00:00Z",
            data=ev.StandingData(
                "retraction_watch",
                None,
                [_notice(str(RETRACTED.work_id), "retraction", "10.1000/retraction.9", "2026-01-20")],
            ),
        ),
        ev.StandingChecked(
            observed_at="2026-02-01T00:00:00Z",
            data=ev.StandingData(
                "crossref",
                [str(CORRECTED.work_id), str(CLEAN.work_id)],
                [_notice(str(CORRECTED.work_id), "correction", "10.1000/correction.8", "2026-01-25")],
            ),
        ),
    ]
    later: list[ev.Event] = [
        # the correction is no longer listed: the crossref check clears it
        ev.StandingChecked(
            observed_at="2026-02-15T00:00:00Z",
            data=ev.StandingData("crossref", [str(CORRECTED.work_id), str(CLEAN.work_id)], []),
        ),
        # reference 4 of 2101.00003 is now resolved to the retracted work after all
        ev.ResolutionObserved(
            observed_at="2026-02-10T00:00:00Z",
            data=ev.ResolutionData(oid(5), "verified_fuzzy", "person:Ada Lovelace", RETRACTED, None),
        ),
    ]
    return [[*papers, *refs], checks, later]


def seed(ledger: Ledger, clock: Clock) -> Seeded:
    """Append the three batches, a day of recorded time apart."""
    at = []
    for batch in batches():
        ledger.append(batch, resolver_events=True)
        at.append(clock.us)
        clock.advance(DAY)
    return Seeded(*at)


def seeded_ledger(db: str) -> tuple[Ledger, Seeded]:
    """A new ledger at `db` holding the scenario, recorded from START."""
    clock = Clock(START)
    ledger = Ledger(db, clock=clock)
    return ledger, seed(ledger, clock)
