"""Works in (resolver-v1.md): Crossref and OpenAlex works files become work.observed events, checked
whole before anything is written, appended in batches, and not appended again when unchanged."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from ledger.model.codec import decode_data
from ledger.model.errors import InvalidEvent
from ledger.model.works import Author, WorkData
from service.ledger import Ledger
from service.sources import SourceFile
from service.sources import works as works_module
from service.sources.works import NAME, ingest_works
from service.sources.works_map import arxiv_in, crossref_work, openalex_work, split_name
from tests import raw

DATA = Path(__file__).resolve().parent.parent / "data" / "works"
T = "2026-11-01T00:00:00Z"
T2 = "2026-11-02T00:00:00Z"


def works_in(ledger: Ledger) -> dict[str, WorkData]:
    return {
        e.stream.removeprefix("work:"): decode_data(e.type, e.data)
        for e in ledger.store.read_log()
        if e.type == "work.observed"
    }


@pytest.mark.parametrize(
    "name,dois,skipped",
    [
        ("crossref-work.json", ["10.1109/sc41405.2020.00024"], {}),
        ("crossref-works.json", ["10.5555/3454287.3454297", "10.1038/s41586-020-2649-2"], {"no DOI": 1}),
        ("crossref-items.ndjson", ["10.1145/3458817.3476205", "10.1016/j.jpdc.2020.01.005"], {"no DOI": 1}),
        ("openalex-work.json", ["10.48550/arxiv.1706.03762"], {}),
        ("openalex-results.json", ["10.1038/s41586-020-2649-2"], {"no DOI": 1}),
        ("openalex-works.ndjson", ["10.1109/sc41405.2020.00024", "10.1145/3394486.3406703"], {}),
    ],
)
def test_each_format_gives_its_works(
    fresh_ledger: Ledger, name: str, dois: list[str], skipped: dict[str, int]
) -> None:
    summary = ingest_works(fresh_ledger, SourceFile(NAME, DATA / name, T))
    assert sorted(works_in(fresh_ledger)) == sorted(dois)
    assert (summary.works, summary.appended, dict(summary.skipped)) == (len(dois), len(dois), skipped)
    assert summary.read == len(dois) + sum(skipped.values())
    assert summary.head == fresh_ledger.head()


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        (
            "crossref-work.json",
            WorkData(
                doi="10.1109/sc41405.2020.00024",
                source="crossref",
                title="ZeRO: Memory optimizations Toward Training Trillion Parameter Models",
                authors=[
                    Author("Rajbhandari", "Samyam"),
                    Author("Rasley", "Jeff"),
                    Author("Ruwase", "Olatunji"),
                    Author("He", "Yuxiong"),
                ],
                container_title="SC20: International Conference for High Performance Computing, Networking, "
                "Storage and Analysis",
                year=2020,
                volume=None,
                issue=None,
                pages="1-16",
                type="proceedings-article",
                arxiv_id="1910.02054",
            ),
        ),
        (
            "openalex-results.json",
            WorkData(
                doi="10.1038/s41586-020-2649-2",
                source="openalex",
                title="Array programming with NumPy",
                authors=[Author("Harris", "Charles R."), Author("Oliphant", "Travis E.")],
                container_title="Nature",
                year=2020,
                volume="585",
                issue="7825",
                pages="357-362",
                type="article",
                arxiv_id=None,
            ),
        ),
    ],
    ids=["crossref", "openalex"],
)
def test_a_work_is_mapped_field_by_field(fresh_ledger: Ledger, name: str, expected: WorkData) -> None:
    ingest_works(fresh_ledger, SourceFile(NAME, DATA / name, T))
    (w,) = works_in(fresh_ledger).values()
    assert w == expected


@pytest.mark.parametrize(
    "name,arxiv",
    [
        ("crossref-works.json", {"10.5555/3454287.3454297": "1811.06965", "10.1038/s41586-020-2649-2": None}),
        ("crossref-items.ndjson", {"10.1145/3458817.3476205": "2104.04473"}),
        ("openalex-work.json", {"10.48550/arxiv.1706.03762": "1706.03762"}),
        ("openalex-works.ndjson", {"10.1109/sc41405.2020.00024": "1910.02054"}),
    ],
)
def test_an_arxiv_id_named_anywhere_is_kept(fresh_ledger: Ledger, name: str, arxiv: dict[str, Any]) -> None:
    ingest_works(fresh_ledger, SourceFile(NAME, DATA / name, T))
    found = works_in(fresh_ledger)
    assert {doi: found[doi].arxiv_id for doi in arxiv} == arxiv


@pytest.mark.parametrize(
    "text,arxiv",
    [
        ("arXiv:2104.04473v2", "2104.04473"),
        ("https://arxiv.org/abs/1910.02054v3", "1910.02054"),
        ("https://arxiv.org/pdf/math.AG/0601001", "math.AG/0601001"),
        ("ARXIV: hep-th/9901001", "hep-th/9901001"),
        ("10.48550/arxiv.1706.03762", "1706.03762"),
        ("https://doi.org/10.1000/arxiv", None),
        ("arXiv:99", None),
    ],
)
def test_arxiv_in(text: str, arxiv: str | None) -> None:
    assert arxiv_in([text]) == arxiv


@pytest.mark.parametrize(
    "name,author",
    [("Samyam Rajbhandari", Author("Rajbhandari", "Samyam")), ("Plato", Author("Plato", None))],
)
def test_split_name(name: str, author: Author) -> None:
    assert split_name(name) == author


@pytest.mark.parametrize(
    "item,reason",
    [
        ({"title": ["x"]}, "no DOI"),
        ({"DOI": "  "}, "no DOI"),
        ({"DOI": 10}, "no DOI"),
        ([1], "not an object"),
    ],
)
def test_crossref_items_without_a_doi_are_skipped(item: Any, reason: str) -> None:
    assert crossref_work(item) == reason


def test_odd_but_readable_items_keep_what_reads() -> None:
    w = crossref_work(
        {
            "DOI": "doi:10.1/X",
            "title": [],
            "author": [{"sequence": "first"}, "x"],
            "issued": {"date-parts": [[None]]},
        }
    )
    assert isinstance(w, WorkData)
    assert (w.doi, w.title, w.authors, w.year) == ("10.1/x", None, [], None)
    o = openalex_work({"doi": "https://doi.org/10.1/Y", "authorships": [{"author": None}], "biblio": "x"})
    assert isinstance(o, WorkData) and (o.doi, o.authors, o.pages) == ("10.1/y", [], None)


def test_a_re_ingest_appends_nothing_even_at_a_later_instant(fresh_ledger: Ledger) -> None:
    ingest_works(fresh_ledger, SourceFile(NAME, DATA / "crossref-works.json", T))
    head = fresh_ledger.head()
    again = ingest_works(fresh_ledger, SourceFile(NAME, DATA / "crossref-works.json", T2))
    assert (again.appended, again.unchanged, again.works) == (0, 2, 2)
    assert fresh_ledger.head() == head


def test_a_changed_work_is_appended_on_its_stream(fresh_ledger: Ledger) -> None:
    ingest_works(fresh_ledger, SourceFile(NAME, DATA / "crossref-work.json", T))
    doc = json.loads((DATA / "crossref-work.json").read_text())
    doc["message"]["volume"] = "1"
    summary = ingest_works(fresh_ledger, SourceFile(NAME, json.dumps(doc).encode(), T2))
    assert (summary.appended, summary.unchanged) == (1, 0)
    streams = [(e.stream, e.stream_version) for e in fresh_ledger.store.read_log()]
    assert streams == [("work:10.1109/sc41405.2020.00024", 1), ("work:10.1109/sc41405.2020.00024", 2)]
    (w,) = fresh_ledger.catalogue.catalogue_by_keys(["10.1109/sc41405.2020.00024"])[0]
    assert w.volume == "1"


def test_the_same_work_twice_in_a_file_is_appended_once(fresh_ledger: Ledger) -> None:
    line = (DATA / "crossref-items.ndjson").read_text().splitlines()[0]
    summary = ingest_works(fresh_ledger, SourceFile(NAME, f"{line}\n{line}\n".encode(), T))
    assert (summary.works, summary.appended, summary.unchanged) == (2, 1, 1)


def test_gzip_is_read_as_a_stream(fresh_ledger: Ledger, tmp_path: Path) -> None:
    packed = tmp_path / "items.ndjson.gz"
    packed.write_bytes(gzip.compress((DATA / "openalex-works.ndjson").read_bytes()))
    assert ingest_works(fresh_ledger, SourceFile(NAME, packed, T)).appended == 2


def test_an_unseekable_stream_is_read_twice_through_a_spool(fresh_ledger: Ledger) -> None:
    class OneWay(io.RawIOBase):
        def __init__(self, data: bytes) -> None:
            self._inner = io.BytesIO(data)

        def readable(self) -> bool:
            return True

        def seekable(self) -> bool:
            return False

        def readinto(self, b: Any) -> int:
            return self._inner.readinto(b)

    stream = io.BufferedReader(OneWay((DATA / "crossref-items.ndjson").read_bytes()))
    assert ingest_works(fresh_ledger, SourceFile(NAME, stream, T)).appended == 2


@pytest.mark.parametrize(
    "body,reason",
    [
        (b"", "no JSON value"),
        (b"[]", "not a JSON object"),
        (b'{"status": "failed", "message": ["bad"]}', "status is 'failed'"),
        (b'{"message": {"total-results": 1}}', "neither a work"),
        (b'{"hello": "world"}', "neither a work nor a list"),
        (b'{"DOI": "10.1/a"}\n{"DOI": ', "not JSON"),
        (b"\xff\xfe", "not UTF-8"),
        (b'{"DOI": "10.1/a"}\nnot json\n', "value 2 is not a JSON object"),
        (b'{"DOI": "10.1/a"}\n[1]\n', "value 2 is not a JSON object"),
    ],
)
def test_a_file_that_is_not_a_works_file_is_refused_whole(
    fresh_ledger: Ledger, body: bytes, reason: str
) -> None:
    with pytest.raises(InvalidEvent, match=reason) as e:
        ingest_works(fresh_ledger, SourceFile(NAME, body, T))
    assert e.value.where == "file"
    assert fresh_ledger.head().seq == 0


def test_a_refusal_late_in_a_big_file_writes_nothing(
    fresh_ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(works_module, "BATCH", 2)
    lines = [json.dumps({"DOI": f"10.1/{i}", "title": [f"Work {i}"]}) for i in range(7)]
    with pytest.raises(InvalidEvent, match="value 8"):
        ingest_works(fresh_ledger, SourceFile(NAME, ("\n".join(lines) + "\n42\n").encode(), T))
    assert fresh_ledger.head().seq == 0
    summary = ingest_works(fresh_ledger, SourceFile(NAME, "\n".join(lines).encode(), T))
    assert (summary.appended, fresh_ledger.head().seq) == (7, 7)  # in batches of 2: 4 appends


def test_a_damaged_gzip_is_refused(fresh_ledger: Ledger) -> None:
    packed = gzip.compress((DATA / "crossref-items.ndjson").read_bytes())
    with pytest.raises(InvalidEvent, match="damaged gzip"):
        ingest_works(fresh_ledger, SourceFile(NAME, packed[: len(packed) // 2], T))
    assert fresh_ledger.head().seq == 0


@pytest.mark.parametrize(
    "item,reason",
    [
        ({"DOI": "10.1/a", "title": ["nul \u0000 here"]}, "unreadable"),
        ({"DOI": "10.1/a", "relation": {"has-preprint": [{"id-type": "arxiv", "id": "1234.5678"}]}}, None),
    ],
)
def test_an_item_the_ledger_cannot_hold_is_skipped_not_appended(
    fresh_ledger: Ledger, item: dict[str, Any], reason: str | None
) -> None:
    summary = ingest_works(fresh_ledger, SourceFile(NAME, json.dumps(item).encode(), T))
    if reason is None:
        assert summary.appended == 1
    else:
        assert summary.appended == 0 and any(k.startswith(reason) for k in summary.skipped)


@pytest.mark.parametrize(
    "when,where", [("yesterday", "observed_at"), ("2999-01-01T00:00:00Z", "observed_at")]
)
def test_observed_at_is_checked_first(fresh_ledger: Ledger, when: str, where: str) -> None:
    with pytest.raises(InvalidEvent) as e:
        ingest_works(fresh_ledger, SourceFile(NAME, DATA / "crossref-work.json", when))
    assert e.value.where == where


def test_the_summary_reads_as_json_and_lines(fresh_ledger: Ledger) -> None:
    summary = ingest_works(fresh_ledger, SourceFile(NAME, DATA / "crossref-works.json", T))
    d = summary.to_dict()
    assert (d["source"], d["works"], d["sources"], d["skipped"]) == (
        "works",
        2,
        {"crossref": 2},
        {"no DOI": 1},
    )
    assert d["examples"] == {"no DOI": ["item 3"]}
    assert summary.lines()[0] == f"works at {T}: read 3, works 2 (2 crossref)"


def test_zstd_is_read_as_a_stream(fresh_ledger: Ledger, tmp_path: Path) -> None:
    import zstandard

    packed = tmp_path / "works.ndjson.zst"
    packed.write_bytes(zstandard.ZstdCompressor().compress((DATA / "crossref-items.ndjson").read_bytes()))
    assert ingest_works(fresh_ledger, SourceFile(NAME, packed, T)).appended == 2


def test_a_damaged_zstd_is_refused(fresh_ledger: Ledger) -> None:
    import zstandard

    packed = zstandard.ZstdCompressor().compress((DATA / "crossref-items.ndjson").read_bytes())
    with pytest.raises(InvalidEvent, match="damaged zstd|not JSON"):
        ingest_works(fresh_ledger, SourceFile(NAME, packed[: len(packed) // 2], T))
    broken = packed[:8] + bytes(b ^ 0xFF for b in packed[8:40]) + packed[40:]
    with pytest.raises(InvalidEvent):
        ingest_works(fresh_ledger, SourceFile(NAME, broken, T))
    assert fresh_ledger.head().seq == 0


def test_a_zstd_file_of_several_frames_is_read_whole(fresh_ledger: Ledger) -> None:
    import zstandard

    lines = (DATA / "crossref-items.ndjson").read_bytes().splitlines(keepends=True)
    packed = b"".join(zstandard.ZstdCompressor().compress(line) for line in lines)
    assert ingest_works(fresh_ledger, SourceFile(NAME, packed, T)).appended == 2


def test_a_zstd_bomb_is_read_in_bounded_pieces() -> None:
    import zstandard

    from service.intake.inflate import Inflation
    from service.sources.reader import open_text

    bomb = zstandard.ZstdCompressor(level=19).compress(b" " * (256 * 1024 * 1024))
    tracemalloc.start()
    try:
        # caps that let it through: what is held while it is read is the point here
        with open_text(bomb, caps=Inflation(max_ratio=1e9)) as text:
            read = sum(len(text.read(1 << 20)) for _ in range(300))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert read == 256 * 1024 * 1024
    assert peak < 40 * 1024 * 1024  # the whole would be 256 MiB


@pytest.mark.parametrize(
    "item",
    [
        {"DOI": "10.1/a", "author": 7, "relation": 3, "alternative-id": "x", "title": {"a": 1}},
        {"DOI": "10.1/a", "relation": {"has-preprint": 5}, "issued": {"date-parts": 7}, "page": 12},
        {"doi": "10.1/a", "authorships": 5, "locations": "x", "ids": [1], "biblio": {"first_page": 3}},
    ],
)
def test_fields_of_the_wrong_shape_read_as_missing(item: dict[str, Any]) -> None:
    w = crossref_work(item) if "DOI" in item else openalex_work(item)
    assert isinstance(w, WorkData) and w.doi == "10.1/a" and w.authors == [] and w.pages is None


def _receipts(ledger: Ledger) -> list[tuple[Any, ...]]:
    return raw.rows(
        ledger.url,
        "SELECT source, observed_at, sha256, bytes, rows_read, rows_matched, appended, seq "
        "FROM ingest_receipts ORDER BY id",
    )


@pytest.mark.parametrize("gz", [False, True], ids=["plain", "gzip"])
def test_every_works_file_taken_leaves_its_receipt(
    fresh_ledger: Ledger, monkeypatch: pytest.MonkeyPatch, gz: bool
) -> None:
    """As every other ingest (docs/sources.md): with the last batch, the file's sha256 and size as given,
    the items read and kept as works, the events new to the ledger and the last one appended."""
    monkeypatch.setattr(works_module, "BATCH", 2)
    lines = [json.dumps({"DOI": f"10.1/{i}", "title": [f"Work {i}"]}) for i in range(5)]
    body = "\n".join([*lines, json.dumps({"title": ["no DOI"]})]).encode()
    body = gzip.compress(body) if gz else body
    digest = hashlib.sha256(body).hexdigest()
    ingest_works(fresh_ledger, SourceFile(NAME, body, T))
    assert _receipts(fresh_ledger) == [("works", T, digest, len(body), 6, 5, 5, 5)]
    # the same file again: acknowledged with a receipt of its own, nothing new
    ingest_works(fresh_ledger, SourceFile(NAME, body, T2))
    assert _receipts(fresh_ledger)[1] == ("works", T2, digest, len(body), 6, 5, 0, None)
    assert fresh_ledger.head().seq == 5


def test_a_refused_works_file_leaves_no_receipt(fresh_ledger: Ledger) -> None:
    with pytest.raises(InvalidEvent):
        ingest_works(fresh_ledger, SourceFile(NAME, b'{"DOI": "10.1/x"}\n42\n', T))
    assert _receipts(fresh_ledger) == []
