"""The adapters of sources-v1.md: Retraction Watch CSV, Crossref works JSON, citation counts."""

from __future__ import annotations

from typing import Any

import msgspec
import pytest

from ledger.model.doi import arxiv_key, doi_key, normalize_doi
from ledger.model.errors import InvalidEvent
from ledger.model.instants import parse_ts
from ledger.storage.works_store import papers_known, works_known
from service.ledger import Ledger
from service.sources import SourceFile, ingest
from service.sources.crossref import kind_of, notice_date
from service.sources.retraction_watch import parse_date, split_reasons
from tests.conftest import NewDb
from tests.factories import citation, oid_of, paper, ts
from tests.service.sources.test_sources_support import CITING, SOURCES_DIR, T_INGEST, cited, sample_ledger


@pytest.fixture
def ledger(new_db: NewDb) -> Ledger:
    return sample_ledger(new_db())


def _check(ledger: Ledger, source: str) -> dict[str, Any]:
    [e] = ledger.store.read_log(type="standing.checked", stream=f"source:{source}")
    data: dict[str, Any] = msgspec.json.decode(e.data)
    return data


def _notices(data: dict[str, Any]) -> list[tuple[Any, ...]]:
    return [
        (n["work_id"], n["kind"], n["notice_doi"], n["record_id"], n["notice_date"]) for n in data["notices"]
    ]


# -- keys ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        (" https://doi.org/10.5555/ABC ", "10.5555/abc"),
        ("HTTP://DX.DOI.ORG/10.5555/Abc", "10.5555/abc"),
        ("http://doi.org/10.5555/x", "10.5555/x"),
        ("https://dx.doi.org/10.5555/x", "10.5555/x"),
        ("doi:10.5555/X", "10.5555/x"),
        ("DOI: 10.5555/X", "10.5555/x"),
        ("10.48550/arXiv.2310.04610v2", "10.48550/arxiv.2310.04610v2"),
    ],
)
def test_normalize_doi(raw: str, expected: str) -> None:
    assert normalize_doi(raw) == expected


def test_arxiv_version_is_dropped_for_matching_only() -> None:
    assert doi_key("10.48550/arXiv.2310.04610v2") == "10.48550/arxiv.2310.04610"
    assert doi_key("10.5555/table.v2") == "10.5555/table.v2"  # not an arXiv DOI: kept
    assert arxiv_key("2310.04610") == arxiv_key("2310.04610V3") == "10.48550/arxiv.2310.04610"
    assert arxiv_key("hep-th/9901001") == "10.48550/arxiv.hep-th/9901001"
    assert doi_key("  ") is None and arxiv_key(None) is None


def test_works_known_follow_the_displayed_cited_work(ledger: Ledger) -> None:
    before = {w.work_id for w in works_known(ledger.store, parse_ts(ts(3)))}
    after = {w.work_id for w in works_known(ledger.store, parse_ts(ts(6)))}
    assert "w-old" in before and "w-old" not in after  # re-bound by the resolution at ts(5)
    assert after == {"w-cell", "w-plos", "w-arxiv", "w-never", "w-nokeys", "w-hindawi"}
    assert works_known(ledger.store, parse_ts(ts(0))) == []
    assert papers_known(ledger.store, parse_ts(ts(0))) == ["2101.00001", "2310.04610"]


# -- Retraction Watch ---------------------------------------------------------------------


def test_retraction_watch_csv(ledger: Ledger) -> None:
    s = ingest(ledger, SourceFile("retraction-watch", SOURCES_DIR / "retraction_watch.csv", T_INGEST))
    data = _check(ledger, "retraction_watch")
    # the whole database: every work with a DOI or arXiv id was checked, sorted
    assert data["work_ids"] == ["w-arxiv", "w-cell", "w-hindawi", "w-never", "w-plos"]
    assert _notices(data) == [
        ("w-arxiv", "retraction", None, "48213", "2026-03-14"),
        ("w-cell", "expression_of_concern", None, "47003", "2020-09-30"),
        ("w-cell", "retraction", "10.5555/j.cell.2021.02.017", "44871", "2021-02-17"),
        ("w-hindawi", "retraction", "10.5555/2023/9801234", "50388", "2023-08-16"),
        ("w-plos", "correction", "10.5555/journal.pone.0199999", "41020", None),
        ("w-plos", "reinstatement", "10.5555/journal.pone.0296345", "50117", "2024-01-09"),
        ("w-plos", "retraction", "10.5555/journal.pone.0220131", "39552", "2019-07-02"),
    ]
    first = data["notices"][0]
    assert first["reasons"] == ["Concerns/Issues About Results and/or Conclusions", "Withdrawal"]
    assert first["url"] == "https://example.org/rw/48213"
    assert first["raw_type"] == "Retraction"
    assert (s.read, s.matched, s.notices, s.works_checked) == (11, 8, 7, 5)
    assert s.skipped == {"no_matching_work": 2, "unknown_type": 1}
    assert s.notes == {"unparsable_date": 1}
    assert s.appended == 1


def test_reingest_same_file_same_time_appends_nothing(ledger: Ledger) -> None:
    path = SOURCES_DIR / "retraction_watch.csv"
    first = ingest(ledger, SourceFile("retraction-watch", path, T_INGEST))
    again = ingest(ledger, SourceFile("retraction-watch", path.read_bytes(), T_INGEST))
    assert first.appended == 1 and again.appended == 0 and again.duplicates == 1
    assert again.head == first.head
    later = ingest(ledger, SourceFile("retraction-watch", path, "2026-09-02T12:00:00Z"))
    assert later.appended == 1  # another look at another time is another fact


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("8/16/2023 0:00", ("2023-08-16", False)),
        ("12/1/2018", ("2018-12-01", False)),
        ("1/9/2024 12:00:00 AM", ("2024-01-09", False)),
        ("", (None, False)),
        ("2/30/2020 0:00", (None, True)),
        ("2020-01-01", (None, True)),
    ],
)
def test_retraction_watch_dates(text: str, expected: tuple[str | None, bool]) -> None:
    assert parse_date(text) == expected


def test_reasons_are_split_and_stripped() -> None:
    assert split_reasons("+Paper Mill; +Fake Peer Review;;") == ["Paper Mill", "Fake Peer Review"]
    assert split_reasons("") == []


def test_one_row_matching_two_works_gives_two_notices(ledger: Ledger) -> None:
    # w-plos and a second work sharing its DOI in another spelling
    twin = cited("w-plos-twin", ts(0), doi="doi:10.5555/journal.pone.0123456")
    ledger.append([citation(oid_of(99), CITING, ts(2), 9, twin)])
    ingest(ledger, SourceFile("retraction-watch", SOURCES_DIR / "retraction_watch.csv", T_INGEST))
    works = [n[0] for n in _notices(_check(ledger, "retraction_watch")) if n[3] == "39552"]
    assert works == ["w-plos", "w-plos-twin"]


def test_an_empty_database_is_still_a_check(new_db: NewDb) -> None:
    ledger = Ledger(new_db("empty.db"))
    s = ingest(ledger, SourceFile("retraction-watch", SOURCES_DIR / "retraction_watch.csv", T_INGEST))
    assert s.works_checked == 0 and s.appended == 1
    assert _check(ledger, "retraction_watch") == {"notices": [], "source": "retraction_watch", "work_ids": []}


# -- Crossref -----------------------------------------------------------------------------


def test_crossref_works_list(ledger: Ledger) -> None:
    s = ingest(ledger, SourceFile("crossref", SOURCES_DIR / "crossref_works.json", T_INGEST))
    data = _check(ledger, "crossref")
    assert data["work_ids"] == ["w-hindawi", "w-never", "w-plos"]  # only the works items matched
    assert _notices(data) == [
        ("w-hindawi", "retraction", "10.5555/2023/9801234", "50388", "2023-08-16"),
        ("w-plos", "correction", "10.5555/journal.pone.0199999", None, None),
        ("w-plos", "correction", "10.5555/journal.pone.0301234", None, None),
        ("w-plos", "expression_of_concern", "10.5555/journal.pone.0228000", None, "2020-01-15"),
        ("w-plos", "retraction", "10.5555/journal.pone.0220131", None, "2019-07-02"),
    ]
    raw = {n["notice_doi"]: n["raw_type"] for n in data["notices"]}
    assert raw["10.5555/journal.pone.0220131"] == "Retraction"
    assert raw["10.5555/journal.pone.0228000"] == "expression-of-concern"
    assert all(n["reasons"] == [] and n["url"] is None for n in data["notices"])
    assert (s.read, s.matched) == (5, 4)
    assert s.skipped == {"no_matching_work": 1, "unknown_type": 1}
    assert s.ignored == {"new_edition": 1, "new_version": 1}
    assert s.notes == {"partial_date": 1, "unparsable_date": 1}


def test_crossref_single_work_publisher_and_retraction_watch_entries(ledger: Ledger) -> None:
    ingest(ledger, SourceFile("crossref", SOURCES_DIR / "crossref_work.json", T_INGEST))
    data = _check(ledger, "crossref")
    assert data["work_ids"] == ["w-cell"]
    # the publisher's two identical entries are one notice; Retraction Watch's differs (record-id)
    assert _notices(data) == [
        ("w-cell", "expression_of_concern", "10.5555/j.cell.2020.09.002", "47003", "2020-09-30"),
        ("w-cell", "retraction", "10.5555/j.cell.2021.02.017", "44871", "2021-02-17"),
        ("w-cell", "retraction", "10.5555/j.cell.2021.02.017", None, "2021-02-17"),
    ]


def test_crossref_type_and_date_rules() -> None:
    assert kind_of("Expression-of-Concern") == "expression_of_concern"
    assert kind_of("partial retraction") == "partial_retraction"
    assert notice_date({"date-time": "2021-02-17T05:00:00Z"}) == ("2021-02-17", None)
    assert notice_date({"date-parts": [[2021, 2, 7]]}) == ("2021-02-07", None)
    assert notice_date({"date-parts": [[2021, 2]]}) == (None, "partial_date")
    assert notice_date({"date-time": "soon", "date-parts": [[2021, 2, 7]]}) == ("2021-02-07", None)
    assert notice_date(None) == (None, None)


def test_crossref_public_data_file_shape_and_arxiv_version(ledger: Ledger) -> None:
    body = (
        b'{"items": [{"DOI": "10.48550/ARXIV.2310.04610v2", '
        b'"updated-by": [{"type": "withdrawal", "DOI": "10.48550/arXiv.2310.04610v3"}]}]}'
    )
    ingest(ledger, SourceFile("crossref", body, T_INGEST))
    data = _check(ledger, "crossref")
    # matched without its version; the stored notice DOI keeps its own
    assert _notices(data) == [("w-arxiv", "withdrawal", "10.48550/arxiv.2310.04610v3", None, None)]


# -- counts -------------------------------------------------------------------------------


def _measurements(ledger: Ledger) -> list[tuple[Any, ...]]:
    out = []
    for e in ledger.store.read_log(type="measurement.observed"):
        d = msgspec.json.decode(e.data)
        out.append((d["arxiv_id"], d["source"], d["metric"], d["value"], d["source_release"], d["query_url"]))
    return out


# 2310.04610's count as the OpenAlex fixtures give it (a results page and a single work alike)
OPENALEX_2310 = (
    "2310.04610",
    "openalex",
    "cited_by_count",
    37,
    "2026-08-30T06:12:45.118245",
    "https://openalex.org/W4387598116",
)


def test_openalex_results_page(ledger: Ledger) -> None:
    ledger.append([paper("2509.02480", ts(0))])
    s = ingest(ledger, SourceFile("openalex", SOURCES_DIR / "openalex_works.json", T_INGEST))
    assert _measurements(ledger) == [
        (
            "2509.02480",
            "openalex",
            "cited_by_count",
            4,
            "2026-08-29T22:01:13.554101",
            "https://openalex.org/W4414002480",
        ),
        OPENALEX_2310,
    ]
    assert s.skipped == {"duplicate_paper": 1, "no_matching_paper": 1}
    assert (s.read, s.matched, s.measurements) == (4, 2, 2)


def test_openalex_work_and_semantic_scholar_paper(ledger: Ledger) -> None:
    ingest(ledger, SourceFile("openalex", SOURCES_DIR / "openalex_work.json", T_INGEST))
    ingest(ledger, SourceFile("semantic-scholar", SOURCES_DIR / "semantic_scholar_paper.json", T_INGEST))
    assert _measurements(ledger) == [
        OPENALEX_2310,
        (
            "2310.04610",
            "semantic_scholar",
            "citationCount",
            41,
            None,
            "https://api.semanticscholar.org/graph/v1/paper/5f1c3e9a2b7d4c8e6a0f1b2c3d4e5f6a7b8c9d0e",
        ),
    ]


def test_semantic_scholar_batch(ledger: Ledger) -> None:
    s = ingest(ledger, SourceFile("semantic-scholar", SOURCES_DIR / "semantic_scholar_batch.json", T_INGEST))
    assert [m[:4] for m in _measurements(ledger)] == [("2310.04610", "semantic_scholar", "citationCount", 41)]
    assert s.skipped == {"no_matching_paper": 2, "not_found_by_source": 1}  # 2509.02480 is not in this ledger


def test_opencitations_needs_id_and_reads_a_string_count(ledger: Ledger) -> None:
    with pytest.raises(InvalidEvent, match="--id"):
        ingest(ledger, SourceFile("opencitations", SOURCES_DIR / "opencitations_count.json", T_INGEST))
    s = ingest(
        ledger,
        SourceFile(
            "opencitations",
            SOURCES_DIR / "opencitations_count.json",
            T_INGEST,
            "doi:10.48550/arXiv.2310.04610",
        ),
    )
    assert _measurements(ledger) == [("2310.04610", "opencitations", "citation_count", 34, None, None)]
    miss = ingest(ledger, SourceFile("opencitations", b'[{"count": "3"}]', T_INGEST, "doi:10.5555/nothing"))
    assert miss.skipped == {"no_matching_paper": 1} and miss.appended == 0
    bad = ingest(
        ledger, SourceFile("opencitations", b'[{"count": "many"}]', T_INGEST, "doi:10.48550/arXiv.2310.04610")
    )
    assert bad.skipped == {"unreadable": 1}
    assert s.appended == 1


def test_a_paper_unknown_as_of_t_is_skipped(ledger: Ledger) -> None:
    s = ingest(ledger, SourceFile("openalex", SOURCES_DIR / "openalex_work.json", "2025-12-31T00:00:00Z"))
    assert s.skipped == {"no_matching_paper": 1} and s.measurements == 0


# -- refusals -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "body", "message"),
    [
        ("retraction-watch", (SOURCES_DIR / "crossref_work.json").read_bytes(), "missing column"),
        ("retraction-watch", b"", "empty"),
        ("crossref", (SOURCES_DIR / "retraction_watch.csv").read_bytes(), "expected a JSON object"),
        ("crossref", b'{"status": "failed", "message-type": "validation-failure", "message": []}', "status"),
        ("crossref", b'{"status": "ok", "message": {"facets": {}}}', "neither a work"),
        ("crossref", b'{"status": "ok", "message": {"items": [{"DOI": "10.5555/x"}', "not JSON"),
        ("openalex", b"[]", "expected an object"),
        ("openalex", b'{"meta": {}}', "neither one item"),
        ("semantic-scholar", b"not json", "expected an object or a list, found 'n'"),
        ("opencitations", b'{"count": "3"}', "expected a list"),
    ],
)
def test_not_the_named_format_is_refused_and_nothing_written(
    ledger: Ledger, source: str, body: bytes, message: str
) -> None:
    head = ledger.head()
    paper_id = "doi:10.48550/arXiv.2310.04610" if source == "opencitations" else None
    with pytest.raises(InvalidEvent, match=message):
        ingest(ledger, SourceFile(source, body, T_INGEST, paper_id))
    assert ledger.head() == head


@pytest.mark.parametrize("observed_at", ["2026-09-01", "2026-09-01T12:00:00", "2999-01-01T00:00:00Z", "x"])
def test_observed_at_must_be_a_past_instant_with_offset(ledger: Ledger, observed_at: str) -> None:
    with pytest.raises(InvalidEvent, match="observed_at"):
        ingest(ledger, SourceFile("retraction-watch", SOURCES_DIR / "retraction_watch.csv", observed_at))


def test_unknown_source(ledger: Ledger) -> None:
    with pytest.raises(InvalidEvent, match="unknown source"):
        ingest(ledger, SourceFile("pubmed", b"", T_INGEST))
