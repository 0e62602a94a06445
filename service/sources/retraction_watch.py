"""Retraction Watch CSV (the Crossref-distributed export) -> one standing.checked (sources-v1.md)."""

from __future__ import annotations

import csv
import re
from datetime import date
from typing import IO

from ledger.model.doi import normalize_doi
from ledger.model.events import Notice, NoticeKind
from service.sources.base import NotThatFormat, Parsed, Refused, Summary, WorkIndex, standing_batch

EVENT_SOURCE = "retraction_watch"
CHUNK = 500  # rows whose DOIs are looked up together
NAME = "Retraction Watch CSV"
# the rules a whole-database file is refused by (sources-v1.md)
NO_ROWS = "no_readable_row"
UNREADABLE = "unreadable_row"
# Only the columns read are required: the export's other columns come and go over the years.
REQUIRED = (
    "Record ID",
    "URLS",
    "RetractionDate",
    "RetractionDOI",
    "OriginalPaperDOI",
    "RetractionNature",
    "Reason",
)
KINDS: dict[str, NoticeKind] = {
    "retraction": "retraction",
    "correction": "correction",
    "expression of concern": "expression_of_concern",
    "reinstatement": "reinstatement",
}
# M/D/YYYY with an optional time ("8/16/2023 0:00", "8/16/2023 12:00:00 AM")
_DATE = re.compile(r"\s*(\d{1,2})/(\d{1,2})/(\d{4})(?:\s+\d{1,2}:\d{2}(?::\d{2})?(?:\s*[AaPp][Mm])?)?\s*")


def parse_date(text: str) -> tuple[str | None, bool]:
    """RetractionDate -> (YYYY-MM-DD or None, whether it was unparsable rather than empty)."""
    if not text.strip():
        return None, False
    m = _DATE.fullmatch(text)
    if m is None:
        return None, True
    try:
        return date(int(m[3]), int(m[1]), int(m[2])).isoformat(), False
    except ValueError:
        return None, True


def split_reasons(text: str) -> list[str]:
    """`+A;+B;` -> ["A", "B"]: split on ';', spaces and a leading '+' removed, empties dropped."""
    out = []
    for part in text.split(";"):
        reason = part.strip().removeprefix("+").strip()
        if reason:
            out.append(reason)
    return out


def _notice_doi(text: str) -> str | None:
    doi = normalize_doi(text)
    return None if doi in ("", "unavailable") else doi


def parse(text: IO[str], index: WorkIndex, summary: Summary) -> Parsed:
    """Read the CSV row by row; every work with a DOI or arXiv id is checked, matched rows are notices.

    The file is the whole database, so it is refused whole (Refused) at its first row that cannot be
    read, and when it has no readable row: a check written from part of it would say "no notice" for
    every work whose row was lost.
    """
    # strict: a quote the writer did not close is an error, not a field run on to the next quote
    reader = csv.reader(text, strict=True)
    try:
        header = next(reader, None)
    except csv.Error as e:
        raise NotThatFormat(NAME, f"its first line is not CSV ({e})") from None
    if header is None:
        raise NotThatFormat(NAME, "the file is empty")
    names = [h.strip() for h in header]
    missing = [c for c in REQUIRED if c not in names]
    if missing:
        found = ", ".join(repr(n) for n in names[:6] if n) or "none"
        raise NotThatFormat(NAME, f"missing column(s) {', '.join(missing)} (found {found} ...)")
    col = {c: names.index(c) for c in REQUIRED}
    shape = _Shape(names)
    notices: list[Notice] = []
    chunk: list[tuple[int, list[str]]] = []
    while True:
        line = reader.line_num + 1  # where the next row starts (its fields may span lines)
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as e:
            # e.g. a quote left open: the csv module would read on to the next quote, rows and all
            raise Refused(UNREADABLE, f"a row that cannot be read as CSV ({e})", line=line) from None
        if not any(cell.strip() for cell in row):
            continue  # a blank line is not a row
        problem = shape.problem(row, col, spanned=reader.line_num > line)
        if problem is not None:
            raise Refused(UNREADABLE, f"a row that cannot be read: {problem}", line=line)
        summary.read += 1
        chunk.append((line, row))
        if len(chunk) == CHUNK:
            _rows(chunk, col, index, summary, notices)
            chunk = []
    if not summary.read:
        raise Refused(NO_ROWS, "no readable row below the header (a header alone is not the database)")
    _rows(chunk, col, index, summary, notices)
    # The file is the whole database: every work it could have named was checked.
    return standing_batch(summary, index.checkable(), notices, f"{EVENT_SOURCE} check")


class _Shape:
    """What a readable row looks like, from the header: its number of fields, and how many commas a
    field must hold to have swallowed a whole row."""

    def __init__(self, names: list[str]) -> None:
        self.names = names
        self.fields = len(names)
        # the export ends every line with a comma: an empty last column, which a row may leave out
        self.trailing = names[-1] == ""
        named = self.fields - self.trailing
        self.row_commas = max(named - 1, 1)

    def problem(self, row: list[str], col: dict[str, int], spanned: bool) -> str | None:
        """Why this row cannot be read (`spanned`: it runs over several lines), or None when it can."""
        n = len(row)
        fits = n == self.fields or (self.trailing and n == self.fields - 1)
        if not fits and not (n == self.fields + 1 and row[-1] == ""):
            return f"{n} fields where the header has {self.fields}"
        for i, cell in enumerate(row if spanned else ()):
            # a line break with a row's worth of commas: a quote that ran on over the next rows
            if ("\n" in cell or "\r" in cell) and cell.count(",") >= self.row_commas:
                name = self.names[i] if i < len(self.names) else ""
                return f"field {i + 1} ({name or 'unnamed'}) runs on over other rows (a quote left open?)"
        for name, i in col.items():
            if i < n and "\ufffd" in row[i]:
                return f"{name} holds bytes that are not UTF-8"
        return None


def _rows(
    chunk: list[tuple[int, list[str]]],
    col: dict[str, int],
    index: WorkIndex,
    summary: Summary,
    notices: list[Notice],
) -> None:
    """The notices of a chunk of rows, in order, their DOIs looked up together."""

    def get(row: list[str], name: str) -> str:
        i = col[name]
        return row[i] if i < len(row) else ""

    index.load(get(row, "OriginalPaperDOI") for _, row in chunk)
    for line, row in chunk:
        original = get(row, "OriginalPaperDOI")
        works = index.match(original)
        if not works:
            summary.skip("no_matching_work", f"line {line}: {original.strip() or 'no DOI'}")
            continue
        nature = get(row, "RetractionNature")
        kind = KINDS.get(nature.strip().lower())
        if kind is None:
            summary.skip("unknown_type", f"line {line}: RetractionNature {nature!r}")
            continue
        summary.matched += 1
        raw_date = get(row, "RetractionDate")
        notice_date, unparsable = parse_date(raw_date)
        if unparsable:
            summary.note("unparsable_date", f"line {line}: RetractionDate {raw_date!r}")
        record_id = get(row, "Record ID").strip() or None
        url = get(row, "URLS").split(";")[0].strip() or None
        reasons = split_reasons(get(row, "Reason"))
        notice_doi = _notice_doi(get(row, "RetractionDOI"))
        for work_id in works:
            notices.append(Notice(work_id, kind, notice_doi, record_id, nature, reasons, notice_date, url))
