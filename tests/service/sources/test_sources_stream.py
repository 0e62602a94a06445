"""Streaming: the JSON pull parser across read boundaries, gzip, progress by bytes, flat memory."""

from __future__ import annotations

import csv
import gzip
import io
import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from service.ledger import Ledger
from service.sources import SourceFile, ingest
from service.sources.jsonstream import JsonStream, JsonSyntaxError, items_or_object
from service.sources.retraction_watch import REQUIRED
from tests.conftest import NewDb
from tests.service.sources.test_sources_support import SOURCES_DIR, T_INGEST, sample_ledger

DOC = {
    "status": "ok",
    "message": {
        "total-results": 123456789012345,
        "items": [
            {"DOI": "10.5555/a", "score": 1.25, "title": ['he said "}]" \\ ok', "ünïcode ✓"], "n": -0.5e-3},
            {"DOI": "10.5555/b", "flags": [True, False, None], "nested": {"a": [[], {}, [1, [2, [3]]]]}},
            [],
            12345678901234567890,
        ],
        "query": {"start-index": 0},
    },
}


class Trickle(io.StringIO):
    """A text stream that hands out at most `n` characters per read, to cut tokens anywhere."""

    def __init__(self, text: str, n: int) -> None:
        super().__init__(text)
        self.n = n

    def read(self, size: int | None = -1) -> str:
        return super().read(self.n if size is None or size < 0 else min(size, self.n))


def _walk(js: JsonStream) -> Any:
    c = js.peek()
    if c == "{":
        return {k: _walk(js) for k in js.members()}
    if c == "[":
        return [_walk(js) for _ in js.elements()]
    return js.value()


@pytest.mark.parametrize("n", [1, 2, 3, 7, 64, 100_000])
def test_pull_parser_matches_json_loads_at_any_read_size(n: int) -> None:
    text = json.dumps(DOC, ensure_ascii=False, indent=1)
    js = JsonStream(Trickle(text, n), chunk=4)
    assert _walk(js) == DOC
    js.end()


def test_items_or_object_streams_the_list_and_keeps_the_rest() -> None:
    js = JsonStream(io.StringIO(json.dumps(DOC["message"])), chunk=5)
    got = list(items_or_object(js, "items"))
    assert [v for k, v in got if k == "item"] == DOC["message"]["items"]  # type: ignore[index]
    kind, rest = got[-1]
    assert kind == "rest" and isinstance(rest, dict) and "items" not in rest
    assert rest["query"] == {"start-index": 0}


@pytest.mark.parametrize("text", ['{"DOI": "10.1/x"}', '{"DOI": "10.1/x", "items": null}'])
def test_items_or_object_gives_an_object_with_no_list_whole(text: str) -> None:
    js = JsonStream(io.StringIO(text), chunk=3)
    assert list(items_or_object(js, "items")) == [("object", json.loads(text))]


def test_items_or_object_goes_by_the_last_value_of_a_repeated_list_key() -> None:
    # as json.loads reads a repeated key: the last value is the object's
    text = '{"items": [1], "items": {"DOI": "10.1/x"}}'
    got = list(items_or_object(JsonStream(io.StringIO(text), chunk=4), "items"))
    assert got == [("item", 1), ("object", {"items": {"DOI": "10.1/x"}})]


@pytest.mark.parametrize("bad", ['{"a": 1,}', '{"a" 1}', "[1 2]", '{"a": [1, 2}', '{"a": tru}', "{} []"])
def test_pull_parser_refuses_broken_json(bad: str) -> None:
    js = JsonStream(io.StringIO(bad), chunk=2)
    with pytest.raises(JsonSyntaxError):
        _walk(js)
        js.end()


def test_crossref_answer_read_in_tiny_pieces_gives_the_same_check(new_db: NewDb) -> None:
    body = (SOURCES_DIR / "crossref_works.json").read_text()
    whole = sample_ledger(new_db("a.db"))
    pieces = sample_ledger(new_db("b.db"))
    s1 = ingest(whole, SourceFile("crossref", body.encode(), T_INGEST))
    s2 = ingest(pieces, SourceFile("crossref", io.BytesIO(body.encode()), T_INGEST))
    assert {**s1.to_dict(), "head": None} == {**s2.to_dict(), "head": None}
    [a] = whole.store.read_log(type="standing.checked")
    [b] = pieces.store.read_log(type="standing.checked")
    assert (a.event_id, a.data) == (b.event_id, b.data)


def test_gzip_input_and_progress_by_bytes(new_db: NewDb, tmp_path: Path) -> None:
    ledger = sample_ledger(new_db("l.db"))
    raw = (SOURCES_DIR / "retraction_watch.csv").read_bytes()
    gz = tmp_path / "rw.csv.gz"
    gz.write_bytes(gzip.compress(raw))
    seen: list[int] = []
    s = ingest(ledger, SourceFile("retraction-watch", gz, T_INGEST), progress=seen.append)
    assert s.notices == 7 and sum(seen) == gz.stat().st_size


def write_rw_csv(path: Path, rows: int, match_every: int = 1000) -> None:
    """A Retraction Watch export of `rows` rows; every `match_every`th names a work of the sample ledger."""
    header = [
        "Record ID", "Title", "Subject", "Institution", "Journal", "Publisher", "Country", "Author",
        "URLS", "ArticleType", "RetractionDate", "RetractionDOI", "RetractionPubMedID", "OriginalPaperDate",
        "OriginalPaperDOI", "OriginalPaperPubMedID", "RetractionNature", "Reason", "Paywalled", "Notes",
    ]  # fmt: skip
    assert set(REQUIRED) <= set(header)
    with path.open("w", encoding="utf-8-sig", newline="") as f:
        w = csv.writer(f)
        w.writerow([*header, ""])
        for i in range(rows):
            doi = "10.5555/j.cell.2019.05.031" if i % match_every == 0 else f"10.5555/gen.{i:07d}"
            w.writerow(
                [
                    str(100000 + i),
                    f"Generated title number {i} about an invented topic",
                    "(BLS) Biology;",
                    "Department of Examples, Invented University, Somewhere;",
                    "Journal of Tests",
                    "Publisher",
                    "Nowhere",
                    "A. Author;B. Author;C. Author",
                    f"https://example.org/rw/{i}",
                    "Research Article;",
                    f"{i % 12 + 1}/{i % 28 + 1}/2020 0:00",
                    f"10.5555/notice.{i:07d}",
                    "0",
                    "1/1/2019 0:00",
                    doi,
                    "0",
                    "Retraction",
                    "+Concerns/Issues About Data;+Investigation by Journal/Publisher;",
                    "No",
                    "",
                    "",
                ]  # fmt: skip
            )


def _peak(ledger: Ledger, path: Path) -> tuple[int, Any]:
    tracemalloc.start()
    try:
        s = ingest(ledger, SourceFile("retraction-watch", path, T_INGEST))
        return tracemalloc.get_traced_memory()[1], s
    finally:
        tracemalloc.stop()


def test_memory_stays_flat_as_the_csv_grows(new_db: NewDb, tmp_path: Path) -> None:
    small, big = tmp_path / "small.csv", tmp_path / "big.csv"
    write_rw_csv(small, 2_000)
    write_rw_csv(big, 20_000)
    peak_small, s_small = _peak(sample_ledger(new_db("a.db")), small)
    peak_big, s_big = _peak(sample_ledger(new_db("b.db")), big)
    assert s_big.read == 20_000 and s_big.matched == 20 and s_small.matched == 2
    # ten times the rows (7 MB more file) costs no more memory: about 140 kB peak for both
    assert peak_big < peak_small * 1.25 + 100_000, (peak_small, peak_big)
    assert peak_big < 2_000_000, peak_big


def write_crossref_json(path: Path, items: int) -> None:
    """A `/works` answer of `items` items; every 1000th names a work of the sample ledger."""
    with path.open("w", encoding="utf-8") as f:
        f.write('{"status":"ok","message-type":"work-list","message":{"facets":{},')
        f.write(f'"total-results":{items},"items":[')
        for i in range(items):
            doi = "10.5555/j.cell.2019.05.031" if i % 1000 == 0 else f"10.5555/gen.{i:07d}"
            item = {
                "DOI": doi,
                "type": "journal-article",
                "title": [f"Generated work {i}"],
                "score": 1.5,
                "author": [{"given": "A", "family": f"Author{i}", "sequence": "first", "affiliation": []}],
                "updated-by": [{"DOI": f"10.5555/notice.{i}", "type": "retraction", "source": "publisher"}],
            }
            f.write(("," if i else "") + json.dumps(item))
        f.write(f'],"items-per-page":{items}}}}}')


def test_memory_stays_flat_as_the_crossref_answer_grows(new_db: NewDb, tmp_path: Path) -> None:
    small, big = tmp_path / "small.json", tmp_path / "big.json"
    write_crossref_json(small, 2_000)
    write_crossref_json(big, 20_000)
    peaks = []
    for name, path in (("a", small), ("b", big)):
        ledger = sample_ledger(new_db(f"{name}.db"))
        tracemalloc.start()
        try:
            s = ingest(ledger, SourceFile("crossref", path, T_INGEST))
            peaks.append(tracemalloc.get_traced_memory()[1])
        finally:
            tracemalloc.stop()
    assert s.read == 20_000 and s.matched == 20 and s.notices == 20  # 20 distinct notice DOIs for one work
    assert peaks[1] < peaks[0] * 1.25 + 100_000, peaks
