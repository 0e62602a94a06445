"""A works file cannot take a match over (resolver-v1.md "Resolving"): a copy of a catalogued work under
a new DOI, however it is dated, loses a tie to the work the catalogue held first, and the evidence names
it as the runner-up; the original observed again keeps its place. Re-observing a DOI with another title
changes the work (the catalogue as of T is each DOI's latest work.observed): the ingest's summary names
that DOI, and the resolver follows the catalogue. Both backends, through the ledger's own catalogue."""

from __future__ import annotations

from typing import Any

from ledger.model.resolving import Decision, RefInput
from ledger.model.works import Reference
from service.ledger import Ledger
from service.resolver.match import resolve_many
from service.sources import SourceFile
from service.sources.works import NAME, WorksSummary, ingest_works
from tests.service.test_works_limits import item, ndjson

REAL = "10.1016/j.real.2019.01.001"
COPY = "10.9999/copy.of.real"
TITLE = "Fast retrieval of citation metadata under adversarial catalogues"
OTHER = item("10.1016/j.other.2018.1", title=["An unrelated study of river sediments in spring"])
REF = (
    "Doe, J., & Roe, R. (2019). Fast retrieval of citation metadata under adversarial catalogues. "
    "Journal of Things, 12(3), 45-67."
)


def work(doi: str, **over: Any) -> dict[str, Any]:
    base = {
        "title": [TITLE],
        "author": [{"family": "Doe", "given": "J."}, {"family": "Roe", "given": "R."}],
        "container-title": ["Journal of Things"],
        "issued": {"date-parts": [[2019]]},
        "volume": "12",
        "issue": "3",
        "page": "45-67",
    }
    base.update(over)
    return item(doi, **base)


def ingest(ledger: Ledger, *items: dict[str, Any], at: str) -> WorksSummary:
    return ingest_works(ledger, SourceFile(NAME, ndjson(*items), at))


def resolve(ledger: Ledger) -> Decision:
    (d,) = resolve_many([RefInput("r1", Reference(unstructured=REF), None)], ledger.catalogue)
    return d


def test_a_copy_under_a_new_doi_does_not_take_the_match(fresh_ledger: Ledger) -> None:
    ingest(fresh_ledger, work(REAL), OTHER, at="2026-01-01T00:00:00Z")
    before = resolve(fresh_ledger)
    assert (before.status, before.work and before.work.doi) == ("verified_exact", REAL)
    # the copy dated before the original, then the original observed again (a later seq than the copy)
    ingest(fresh_ledger, work(COPY), at="2025-01-01T00:00:00Z")
    ingest(fresh_ledger, work(REAL, type="journal-article-v2"), at="2026-02-01T00:00:00Z")
    after = resolve(fresh_ledger)
    assert after.work is not None and after.work.doi == REAL
    # two works agree with it: resolver-v1 makes no exact match of two, but the first held is the answer
    assert after.status == "verified_fuzzy"
    runner = after.evidence.runner_up
    assert runner is not None and runner.doi == COPY and runner.score == after.evidence.score


def test_many_copies_do_not_take_it_either(fresh_ledger: Ledger) -> None:
    ingest(fresh_ledger, work(REAL), OTHER, at="2026-01-01T00:00:00Z")
    ingest(fresh_ledger, *(work(f"10.9999/copy.{i}") for i in range(30)), at="2020-01-01T00:00:00Z")
    d = resolve(fresh_ledger)
    assert d.work is not None and d.work.doi == REAL


def test_a_copy_that_differs_in_kind_is_still_a_near_duplicate(fresh_ledger: Ledger) -> None:
    # a preprint of the same title and authors is another work: neither is preferred (as before)
    ingest(fresh_ledger, work(REAL), OTHER, at="2026-01-01T00:00:00Z")
    ingest(
        fresh_ledger, work(COPY, type="posted-content", **{"container-title": []}), at="2026-01-02T00:00:00Z"
    )
    d = resolve(fresh_ledger)
    assert d.work is None or d.work.doi == REAL


def test_a_doi_observed_again_with_another_title_changes_the_work_and_is_named(fresh_ledger: Ledger) -> None:
    ingest(fresh_ledger, work(REAL), OTHER, at="2026-01-01T00:00:00Z")
    assert resolve(fresh_ledger).work is not None
    s = ingest(
        fresh_ledger, work(REAL, title=["Something else entirely about gardens"]), at="2026-02-01T00:00:00Z"
    )
    assert s.changed_listed == [{"doi": REAL, "fields": ["title"]}]
    d = resolve(fresh_ledger)
    assert d.status != "verified_exact" and (d.work is None or d.work.doi == REAL)


def test_a_copy_does_not_take_a_reference_without_a_title_either(fresh_ledger: Ledger) -> None:
    # a reference of numbers alone (ACS, AIP): the copy has the original's title, so it is the same work
    ingest(fresh_ledger, work(REAL), OTHER, at="2026-01-01T00:00:00Z")
    numbers = "(1) Doe, J.; Roe, R. Journal of Things 2019, 12, 45."
    (before,) = resolve_many([RefInput("r", Reference(unstructured=numbers), None)], fresh_ledger.catalogue)
    assert before.work is not None and before.work.doi == REAL
    ingest(fresh_ledger, work(COPY), at="2025-01-01T00:00:00Z")
    (after,) = resolve_many([RefInput("r", Reference(unstructured=numbers), None)], fresh_ledger.catalogue)
    assert after.work is not None and after.work.doi == REAL
    assert after.evidence.runner_up is not None and after.evidence.runner_up.doi == COPY


def test_two_works_of_other_titles_alike_in_numbers_stay_a_near_duplicate(fresh_ledger: Ledger) -> None:
    # two parts of a series in one issue, for a reference that shows no title: neither is answered
    ingest(fresh_ledger, work(REAL), OTHER, at="2026-01-01T00:00:00Z")
    ingest(fresh_ledger, work(COPY, title=[TITLE + ", part two"]), at="2026-01-02T00:00:00Z")
    numbers = "(1) Doe, J.; Roe, R. Journal of Things 2019, 12, 45."
    (d,) = resolve_many([RefInput("r", Reference(unstructured=numbers), None)], fresh_ledger.catalogue)
    assert d.work is None


def test_a_copy_of_a_work_without_a_title_does_not_take_it(fresh_ledger: Ledger) -> None:
    # a journal's untitled item (a list of members, an index) copied field for field
    untitled: dict[str, Any] = {"title": [], "author": []}
    ingest(fresh_ledger, work(REAL, **untitled), OTHER, at="2026-01-01T00:00:00Z")
    numbers = "[1] Journal of Things 12 (2019) 45."
    (before,) = resolve_many([RefInput("r", Reference(unstructured=numbers), None)], fresh_ledger.catalogue)
    assert before.work is not None and before.work.doi == REAL
    ingest(fresh_ledger, work(COPY, **untitled), at="2025-01-01T00:00:00Z")
    (after,) = resolve_many([RefInput("r", Reference(unstructured=numbers), None)], fresh_ledger.catalogue)
    assert after.work is not None and after.work.doi == REAL
