"""An ingest's human summary (Summary.lines, WorksSummary.lines): every count grouped by thousands, one
way throughout, as the import's summary writes them."""

from __future__ import annotations

import re
from collections import Counter

from ledger.model.facts import Head
from service.sources.base import Summary
from service.sources.works import WorksSummary

HEAD = Head(123456, "ab" * 32)


def _ungrouped(lines: list[str]) -> list[str]:
    """The numbers of four digits or more written without grouping (the instant's year aside)."""
    return [m for line in lines for m in re.findall(r"(?<![\d,.:-])\d{4,}(?![\d-])", line.split(": ", 1)[-1])]


def test_a_source_ingests_summary_groups_its_counts() -> None:
    s = Summary("crossref", "crossref", "2026-09-01T00:00:00Z", read=100000, matched=12345,
                works_checked=5000, notices=1200, skipped=Counter({"no_matching_work": 88655}),
                appended=1201, duplicates=3000, head=HEAD)  # fmt: skip
    lines = s.lines()
    assert lines[0] == "crossref at 2026-09-01T00:00:00Z: read 100,000, matched 12,345"
    assert lines[1] == "  works checked: 5,000; notices: 1,200"
    assert "  skipped: 88,655 no_matching_work" in lines
    assert lines[-1] == "  1,201 appended, 3,000 duplicate; head seq 123,456"
    assert _ungrouped(lines) == []


def test_a_works_ingests_summary_groups_its_counts() -> None:
    s = WorksSummary("2026-09-01T00:00:00Z", read=250000, works=249000, sources=Counter({"crossref": 249000}),
                     unchanged=1000, appended=248000, duplicates=0, head=HEAD)  # fmt: skip
    lines = s.lines()
    assert lines[0] == "works at 2026-09-01T00:00:00Z: read 250,000, works 249,000 (249,000 crossref)"
    assert lines[-1] == "  248,000 appended, 1,000 unchanged, 0 duplicate; head seq 123,456"
    assert _ungrouped(lines) == []
