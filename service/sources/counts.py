"""Citation counts (OpenAlex, Semantic Scholar, OpenCitations) -> measurement.observed (sources-v1.md).

One measurement per matched paper, at T, named by its source; never combined across sources.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import IO, NamedTuple

from ledger.model.events import Event, MeasurementData, MeasurementObserved
from ledger.model.jsonvalue import Json, JsonObject
from service.sources.base import NotThatFormat, PaperIndex, Parsed, Summary
from service.sources.jsonstream import JsonStream, JsonSyntaxError, items_or_object

S2_PAPER_URL = "https://api.semanticscholar.org/graph/v1/paper/"
CHUNK = 500  # items whose papers are looked up together


class Reading(NamedTuple):
    """One item's measurement before matching: how it names its paper (an arXiv id, else a DOI; the
    one given), the count, release and URL."""

    arxiv_id: str | None
    doi: Json
    key: str
    value: Json
    source_release: str | None
    query_url: str | None

    def paper(self, papers: PaperIndex) -> str | None:
        """The paper known as of T this item names, else None."""
        return papers.by_arxiv(self.arxiv_id) if self.arxiv_id is not None else papers.by_doi(self.doi)


def _str(value: Json) -> str | None:
    return value if isinstance(value, str) and value else None


def _count(value: Json, digits_ok: bool) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    # OpenCitations writes its count as a string of digits; the others as a JSON integer
    if digits_ok and isinstance(value, str) and value.strip().isascii() and value.strip().isdigit():
        return int(value.strip())
    return None


def _json_items(
    text: IO[str],
    name: str,
    list_key: str | None,
    bare_list: bool,
    is_one: Callable[[JsonObject], bool] | None,
) -> Iterator[Json]:
    """Items of `{list_key: [...]}`, of a bare list, or the one object that `is_one` accepts."""
    js = JsonStream(text)
    try:
        first = js.peek()
        if first == "[" and bare_list:
            for _ in js.elements():
                yield js.value()
        elif first == "{" and list_key is not None:
            for kind, value in items_or_object(js, list_key):
                if kind == "item":
                    yield value
                elif kind == "object" and isinstance(value, dict):
                    if is_one is None or not is_one(value):
                        raise NotThatFormat(
                            name, f"an object that is neither one item nor {{{list_key!r}: [...]}}"
                        )
                    yield value
        else:
            allowed = (("an object", list_key is not None), ("a list", bare_list))
            shapes = " or ".join(shape for shape, ok in allowed if ok)
            raise NotThatFormat(name, f"expected {shapes}, found {first or 'nothing'!r}")
        js.end()
    except JsonSyntaxError as e:
        raise NotThatFormat(name, f"not JSON ({e})") from None
    except UnicodeDecodeError as e:
        raise NotThatFormat(name, f"not UTF-8 text ({e.reason} at byte {e.start})") from None


def _openalex(item: JsonObject) -> Reading:
    doi = item.get("doi")
    if doi is None:
        ids = item.get("ids")
        doi = ids.get("doi") if isinstance(ids, dict) else None
    return Reading(
        None,
        doi,
        str(doi),
        item.get("cited_by_count"),
        _str(item.get("updated_date")),
        _str(item.get("id")),
    )


def _semantic_scholar(item: JsonObject) -> Reading:
    ext = item.get("externalIds")
    ext = ext if isinstance(ext, dict) else {}
    arxiv = ext.get("ArXiv")
    pid = _str(item.get("paperId"))
    url = S2_PAPER_URL + pid if pid else None
    if isinstance(arxiv, str) and arxiv:
        return Reading(arxiv, None, f"arXiv:{arxiv}", item.get("citationCount"), None, url)
    doi = ext.get("DOI")
    return Reading(None, doi, str(doi), item.get("citationCount"), None, url)


class _Spec(NamedTuple):
    name: str
    event_source: str
    metric: str
    list_key: str | None
    bare_list: bool
    is_one: Callable[[JsonObject], bool] | None


SPECS = {
    "openalex": _Spec(
        "OpenAlex Work JSON",
        "openalex",
        "cited_by_count",
        "results",
        False,
        lambda v: "cited_by_count" in v or "doi" in v,
    ),
    "semantic-scholar": _Spec(
        "Semantic Scholar paper JSON",
        "semantic_scholar",
        "citationCount",
        "data",
        True,
        lambda v: "paperId" in v or "externalIds" in v,
    ),
    "opencitations": _Spec(
        "OpenCitations citation-count JSON", "opencitations", "citation_count", None, True, None
    ),
}


def parse(
    source: str, text: IO[str], papers: PaperIndex, summary: Summary, paper_id: str | None = None
) -> Parsed:
    """One measurement.observed per matched paper; the first item of a paper counts, later ones skip."""
    spec = SPECS[source]
    out = _Out(source, spec, papers, summary)
    chunk: list[tuple[int, Reading | Json]] = []  # (item number, its Reading, or the item when not an object)
    for n, item in enumerate(_json_items(text, spec.name, spec.list_key, spec.bare_list, spec.is_one), 1):
        summary.read += 1
        if isinstance(item, dict):
            if source == "openalex":
                chunk.append((n, _openalex(item)))
            elif source == "semantic-scholar":
                chunk.append((n, _semantic_scholar(item)))
            else:
                chunk.append((n, Reading(None, paper_id, str(paper_id), item.get("count"), None, None)))
        else:
            chunk.append((n, item))
        if len(chunk) == CHUNK:
            out.add(chunk)
            chunk = []
    out.add(chunk)
    summary.measurements = len(out.events)
    return Parsed(out.events, out.places, summary)


class _Out:
    """The measurements so far, and the papers already measured (a paper's first item counts)."""

    def __init__(self, source: str, spec: _Spec, papers: PaperIndex, summary: Summary) -> None:
        self.source, self.spec, self.papers, self.summary = source, spec, papers, summary
        self.events: list[Event] = []
        self.places: list[str] = []
        self.seen: set[str] = set()

    def add(self, chunk: list[tuple[int, Reading | Json]]) -> None:
        """Match a chunk of items in order, the papers they name looked up together."""
        readings = [r for _, r in chunk if isinstance(r, Reading)]
        self.papers.load(
            (r.doi for r in readings if r.arxiv_id is None), (r.arxiv_id for r in readings if r.arxiv_id)
        )
        summary, spec = self.summary, self.spec
        for n, r in chunk:
            if r is None:
                # a batch answer holds null where the source found no paper for a requested id
                summary.skip("not_found_by_source", f"item {n}: null")
                continue
            if not isinstance(r, Reading):
                summary.skip("unreadable", f"item {n}: not an object")
                continue
            paper = r.paper(self.papers)
            if paper is None:
                summary.skip("no_matching_paper", f"item {n}: {r.key}")
                continue
            value = _count(r.value, self.source == "opencitations")
            if value is None:
                summary.skip("unreadable", f"item {n}: {spec.metric} {r.value!r}")
                continue
            if paper in self.seen:
                summary.skip("duplicate_paper", f"item {n}: arXiv:{paper} already measured in this file")
                continue
            self.seen.add(paper)
            summary.matched += 1
            data = MeasurementData(
                paper, spec.event_source, spec.metric, value, r.source_release, r.query_url
            )
            self.events.append(MeasurementObserved(observed_at=summary.observed_at, data=data))
            self.places.append(f"{self.source} item {n}")
