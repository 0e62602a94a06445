"""Crossref REST works JSON (`/works/{doi}` or `/works?...`) -> one standing.checked (sources-v1.md)."""

from __future__ import annotations

import re
from datetime import date
from typing import IO

from ledger.model.doi import normalize_doi
from ledger.model.events import Notice, NoticeKind
from ledger.model.jsonvalue import Json, JsonObject
from service.sources.base import NotThatFormat, Parsed, Summary, WorkIndex, standing_batch
from service.sources.jsonstream import JsonStream, JsonSyntaxError, items_or_object

EVENT_SOURCE = "crossref"
NAME = "Crossref REST works JSON"
KINDS: dict[str, NoticeKind] = {
    "retraction": "retraction",
    "partial_retraction": "partial_retraction",
    "withdrawal": "withdrawal",
    "removal": "removal",
    "expression_of_concern": "expression_of_concern",
    "correction": "correction",
    "erratum": "correction",
    "corrigendum": "correction",
    "addendum": "correction",
    "clarification": "correction",
}
NOT_NOTICES = ("new_version", "new_edition")
CHUNK = 500  # items whose DOIs are looked up together
KEPT = ("DOI", "updated-by")  # the fields of an item that are read
_DATE_TIME = re.compile(r"(\d{4})-(\d{2})-(\d{2})")


def kind_of(raw_type: str) -> str:
    """`Expression-of-Concern` -> `expression_of_concern`: lowercased, '-' and spaces read as '_'."""
    return re.sub(r"[- ]", "_", raw_type.strip().lower())


def notice_date(updated: Json) -> tuple[str | None, str | None]:
    """(the entry's date as YYYY-MM-DD or None, a note when a date was given but not usable)."""
    if not isinstance(updated, dict):
        return None, None
    note = None
    stamp = updated.get("date-time")
    if isinstance(stamp, str):
        m = _DATE_TIME.match(stamp)
        day = _day(int(m[1]), int(m[2]), int(m[3])) if m else None
        if day is not None:
            return day, None
        note = "unparsable_date"
    parts = updated.get("date-parts")
    if isinstance(parts, list) and parts and isinstance(parts[0], list):
        first = parts[0]
        ints = [p for p in first if type(p) is int]  # a bool is not a year, month or day
        if len(first) == 3 and len(ints) == 3:
            day = _day(*ints)
            return day, None if day is not None else "unparsable_date"
        return None, "partial_date"
    return None, note


def _day(y: int, m: int, d: int) -> str | None:
    try:
        return date(y, m, d).isoformat()
    except ValueError:
        return None


def _record_id(value: Json) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)  # the API writes Retraction Watch record ids as numbers or strings
    return value if isinstance(value, str) and value else None


def _item(
    item: Json, n: int, index: WorkIndex, summary: Summary, checked: set[str], out: list[Notice]
) -> None:
    summary.read += 1
    if not isinstance(item, dict):
        summary.skip("unreadable", f"item {n}: not an object")
        return
    doi = item.get("DOI")
    works = index.match(doi)
    if not works:
        summary.skip("no_matching_work", f"item {n}: {doi if isinstance(doi, str) else 'no DOI'}")
        return
    summary.matched += 1
    checked.update(works)
    entries = item.get("updated-by") or []
    if not isinstance(entries, list):
        summary.skip("unreadable", f"item {n}: updated-by is not a list")
        return
    for j, entry in enumerate(entries):
        where = f"item {n} updated-by[{j}]"
        raw_type = entry.get("type") if isinstance(entry, dict) else None
        if not isinstance(raw_type, str):
            summary.skip("unreadable", f"{where}: no type")
            continue
        name = kind_of(raw_type)
        if name in NOT_NOTICES:
            summary.ignore(name)
            continue
        kind = KINDS.get(name)
        if kind is None:
            summary.skip("unknown_type", f"{where}: type {raw_type!r}")
            continue
        assert isinstance(entry, dict)
        day, note = notice_date(entry.get("updated"))
        if note is not None:
            summary.note(note, f"{where}: updated {entry.get('updated')!r}")
        raw_doi = entry.get("DOI")
        notice_doi = (normalize_doi(raw_doi) or None) if isinstance(raw_doi, str) else None
        record_id = _record_id(entry.get("record-id"))
        for work_id in works:
            out.append(Notice(work_id, kind, notice_doi, record_id, raw_type, [], day, None))


def parse(text: IO[str], index: WorkIndex, summary: Summary) -> Parsed:
    """Stream the answer's items (or its one work); only works matched by an item are checked."""
    js = JsonStream(text)
    checked: set[str] = set()
    notices: list[Notice] = []
    chunk: list[tuple[int, Json]] = []  # (item number, item)
    count = 0

    def flush() -> None:
        # the chunk's DOIs looked up together, then its items in order
        index.load(item.get("DOI") for _, item in chunk if isinstance(item, dict))
        for n, item in chunk:
            _item(item, n, index, summary, checked, notices)
        chunk.clear()

    def handle(item: Json) -> None:
        nonlocal count
        count += 1
        # only what _item reads is kept while the chunk waits: an item's other fields can be large
        chunk.append((count, {k: item[k] for k in KEPT if k in item} if isinstance(item, dict) else item))
        if len(chunk) == CHUNK:
            flush()

    top: JsonObject = {}
    found = False
    try:
        if js.peek() != "{":
            raise NotThatFormat(NAME, 'expected a JSON object {"message": ...}')
        for key in js.members():
            if key == "message" and js.peek() == "{":
                found = True
                for kind, value in items_or_object(js, "items"):
                    if kind == "item":
                        handle(value)
                    elif kind == "object" and isinstance(value, dict):  # `/works/{doi}`: one work
                        if "DOI" not in value:
                            raise NotThatFormat(
                                NAME, "its message is neither a work (DOI) nor a list of items"
                            )
                        handle(value)
            elif key == "items" and js.peek() == "[":
                found = True  # the public data file's shape: {"items": [...]} at the top
                for _ in js.elements():
                    handle(js.value())
            else:
                top[key] = js.value()
        js.end()
        flush()
    except JsonSyntaxError as e:
        raise NotThatFormat(NAME, f"not JSON ({e})") from None
    except UnicodeDecodeError as e:
        raise NotThatFormat(NAME, f"not UTF-8 text ({e.reason} at byte {e.start})") from None
    if top.get("status") not in (None, "ok"):
        raise NotThatFormat(NAME, f"the answer's status is {top.get('status')!r}, not 'ok'")
    if not found:
        raise NotThatFormat(NAME, 'no "message" holding a work or items')
    return standing_batch(summary, checked, notices, f"{EVENT_SOURCE} check")
