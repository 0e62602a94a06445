"""Shared builders for the source-ingest tests (no tests here): a ledger whose cited works have DOIs."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from cli.main import main
from ledger.model.events import CitedWork, Event
from service.ledger import Ledger
from tests.conftest import FIXTURE_PATH
from tests.factories import citation, oid_of, paper, resolution, ts
from tests.paths import DATA

SOURCES_DIR = DATA / "sources"
CITING = "2101.00001"
T_INGEST = "2026-09-01T12:00:00Z"


def cited(work_id: str, at: str, *, doi: str | None = None, arxiv: str | None = None) -> CitedWork:
    """A cited work with the keys a source can match on."""
    return CitedWork(arxiv, doi, "crossref", None, at, f"Work {work_id}", None, work_id, 2020)


def sample_events() -> list[Event]:
    """One citing paper, seven observations: DOIs in mixed case and with prefixes, an arXiv work,
    a work with no key, no work at all, and a work re-bound by a later resolution."""
    at = ts(0)
    works = [
        cited("w-cell", at, doi="10.5555/j.cell.2019.05.031"),
        cited("w-plos", at, doi="10.5555/JOURNAL.PONE.0123456"),
        cited("w-arxiv", at, arxiv="2310.04610"),
        cited("w-never", at, doi="https://doi.org/10.5555/never.retracted"),
        cited("w-nokeys", at),
        cited("w-hindawi", at, doi="10.5555/2022/1234567"),
        None,
    ]
    events: list[Event] = [paper(CITING, ts(0)), paper("2310.04610", ts(0), category=None)]
    for i, w in enumerate(works):
        events.append(citation(oid_of(i), CITING, ts(1), i, w))
    # observation 7 first cites w-old, then a resolution binds it to w-cell
    events.append(citation(oid_of(7), CITING, ts(1), 7, cited("w-old", at, doi="10.5555/old")))
    events.append(
        resolution(oid_of(7), ts(5), cited=cited("w-cell", ts(5), doi="10.5555/j.cell.2019.05.031"))
    )
    return events


def sample_ledger(path: str | Path) -> Ledger:
    """A fresh ledger (a SQLite path or a postgresql:// URL) holding `sample_events`."""
    ledger = Ledger(path)
    ledger.append(sample_events())
    return ledger


def imported_sample(db: str) -> str:
    """`db` after `ledger import` of the sample record (tests/data), as a user would load it."""
    assert CliRunner().invoke(main, ["import", str(FIXTURE_PATH), "--db", db]).exit_code == 0
    return db
