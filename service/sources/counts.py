"""Citation counts (OpenAlex, Semantic Scholar, OpenCitations) -> measurement.observed (sources-v1.md).

One measurement per matched paper, at T, named by its source; never combined across sources.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import IO, Any, NamedTuple

from ledger.events import Event, MeasurementData, MeasurementObserved
from service.sources.base import NotThatFormat, PaperIndex, Parsed, Summary
from service.sources.jsonstream import STREAMED, JsonStream, JsonSyntaxError, items_or_object

S2_PAPER_URL = "https://api.semanticscholar.org/graph/v1/paper/"


class Reading(NamedTuple):
    """One item's measurement before matching: the paper it names, the count, release and URL."""

    paper: str | None
    key: str
    value: Any
    source_release: str | None
    query_url: str | None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _count(value: Any, digits_ok: bool) -> int | None:
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
    is_one: Callable[[dict[str, Any]], bool] | None,
) -> Iterator[Any]:
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
                elif value.get(list_key) is not STREAMED:
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


def _openalex(item: dict[str, Any], papers: PaperIndex) -> Reading:
    doi = item.get("doi")
    if doi is None:
        ids = item.get("ids")
        doi = ids.get("doi") if isinstance(ids, dict) else None
    return Reading(
        papers.by_doi(doi),
        str(doi),
        item.get("cited_by_count"),
        _str(item.get("updated_date")),
        _str(item.get("id")),
    )


def _semantic_scholar(item: dict[str, Any], papers: PaperIndex) -> Reading:
    ext = item.get("externalIds")
    ext = ext if isinstance(ext, dict) else {}
    arxiv = ext.get("ArXiv")
    if isinstance(arxiv, str) and arxiv:
        paper, key = papers.by_arxiv(arxiv), f"arXiv:{arxiv}"
    else:
        paper, key = papers.by_doi(ext.get("DOI")), str(ext.get("DOI"))
    pid = _str(item.get("paperId"))
    url = S2_PAPER_URL + pid if pid else None
    return Reading(paper, key, item.get("citationCount"), None, url)


class _Spec(NamedTuple):
    name: str
    event_source: str
    metric: str
    list_key: str | None
    bare_list: bool
    is_one: Callable[[dict[str, Any]], bool] | None


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
    events: list[Event] = []
    places: list[str] = []
    seen: set[str] = set()
    oc_paper = papers.by_doi(paper_id) if source == "opencitations" else None
    for n, item in enumerate(_json_items(text, spec.name, spec.list_key, spec.bare_list, spec.is_one), 1):
        summary.read += 1
        if item is None:
            # a batch answer holds null where the source found no paper for a requested id
            summary.skip("not_found_by_source", f"item {n}: null")
            continue
        if not isinstance(item, dict):
            summary.skip("unreadable", f"item {n}: not an object")
            continue
        if source == "openalex":
            r = _openalex(item, papers)
        elif source == "semantic-scholar":
            r = _semantic_scholar(item, papers)
        else:
            r = Reading(oc_paper, str(paper_id), item.get("count"), None, None)
        if r.paper is None:
            summary.skip("no_matching_paper", f"item {n}: {r.key}")
            continue
        value = _count(r.value, source == "opencitations")
        if value is None:
            summary.skip("unreadable", f"item {n}: {spec.metric} {r.value!r}")
            continue
        if r.paper in seen:
            summary.skip("duplicate_paper", f"item {n}: arXiv:{r.paper} already measured in this file")
            continue
        seen.add(r.paper)
        summary.matched += 1
        data = MeasurementData(r.paper, spec.event_source, spec.metric, value, r.source_release, r.query_url)
        events.append(MeasurementObserved(observed_at=summary.observed_at, data=data))
        places.append(f"{source} item {n}")
    summary.measurements = len(events)
    return Parsed(events, places, summary)
