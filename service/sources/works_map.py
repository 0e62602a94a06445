"""One published work -> the data of a `work.observed` (resolver-v1.md, docs/resolver.md "Works in"):
a Crossref work item or an OpenAlex Work object, each read for the same fields; None with a reason when
the item cannot give one (no DOI)."""

from __future__ import annotations

import re
from collections.abc import Iterable

from ledger.model.codec import ARXIV_RE
from ledger.model.doi import ARXIV_DOI_PREFIX, normalize_doi
from ledger.model.jsonvalue import Json, JsonObject
from ledger.model.works import Author, WorkData

CROSSREF, OPENALEX = "crossref", "openalex"
NO_DOI = "no DOI"
# an arXiv id as a source names it: after "arXiv:", in an arxiv.org URL, or in its DataCite DOI; the
# version, if any, is left off
_ARXIV_IN = re.compile(
    r"(?:arxiv[:.]\s*|arxiv\.org/(?:abs|pdf)/)"
    r"(\d{4}\.\d{4,5}|[a-z]+(?:-[a-z]+)*(?:\.[a-z]{2})?/\d{7})(?:v\d+)?",
    re.IGNORECASE,
)
_SUBJECT_CLASS = re.compile(r"\.([a-z]{2})/")


def _str(value: Json) -> str | None:
    """A non-empty string, trimmed; None for anything else."""
    if isinstance(value, str) and value.strip():
        return value.strip()
    return None


def _dict(value: Json) -> JsonObject:
    return value if isinstance(value, dict) else {}


def _list(value: Json) -> list[Json]:
    return value if isinstance(value, list) else []


def _first(value: Json) -> str | None:
    """The first non-empty string of a list (Crossref's title, container-title), or the string itself."""
    if isinstance(value, list):
        return next((s for s in map(_str, value) if s is not None), None)
    return _str(value)


def _doi(value: Json) -> str | None:
    """A DOI as the ledger keeps it (normalised), or None when none is given; its syntax is checked
    with the work's other limits (work_limits.py), so a malformed one is named as such."""
    text = _str(value)
    return None if text is None else normalize_doi(text) or None


def _year(value: Json) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value < 10_000:
        return None
    return value


def arxiv_in(values: Iterable[Json]) -> str | None:
    """The first arXiv id named by any of these strings, without its version."""
    for value in values:
        if not isinstance(value, str):
            continue
        m = _ARXIV_IN.search(value)
        if m is None:
            continue
        found = m[1]
        if "/" in found:  # old style: the archive lower-cased, a subject class upper-cased
            archive, _, number = found.partition("/")
            found = _SUBJECT_CLASS.sub(lambda s: "." + s[1].upper() + "/", archive.lower() + "/") + number
        if ARXIV_RE.fullmatch(found):
            return found
    return None


def _date_year(value: Json) -> int | None:
    """The year of a Crossref date object ({"date-parts": [[2020, 5, 1]]})."""
    if not isinstance(value, dict):
        return None
    parts = value.get("date-parts")
    if isinstance(parts, list) and parts and isinstance(parts[0], list) and parts[0]:
        return _year(parts[0][0])
    return None


def _relation_ids(relation: Json) -> list[Json]:
    """Every id a Crossref `relation` object names ({"has-preprint": [{"id": ..., "id-type": ...}]})."""
    out: list[Json] = []
    if isinstance(relation, dict):
        for links in relation.values():
            for link in links if isinstance(links, list) else []:
                if isinstance(link, dict):
                    kind, ident = link.get("id-type"), link.get("id")
                    out.append(f"arXiv:{ident}" if kind == "arxiv" and isinstance(ident, str) else ident)
    return out


def crossref_work(item: Json) -> WorkData | str:
    """A Crossref work item (an element of `/works` items, or the message of `/works/{doi}`)."""
    if not isinstance(item, dict):
        return "not an object"
    doi = _doi(item.get("DOI"))
    if doi is None:
        return NO_DOI
    authors = []
    for a in _list(item.get("author")):
        if isinstance(a, dict):
            family, given = _str(a.get("family")), _str(a.get("given"))
            if family is None and given is None:
                family = _str(a.get("name"))  # an organisation
            if family is not None or given is not None:
                authors.append(Author(family, given))
    year = next(
        (
            y
            for key in ("issued", "published", "published-print", "published-online")
            if (y := _date_year(item.get(key))) is not None
        ),
        None,
    )
    named = [doi, *_relation_ids(item.get("relation")), *_list(item.get("alternative-id")), item.get("URL")]
    return WorkData(
        doi=doi,
        source=CROSSREF,
        title=_first(item.get("title")),
        authors=authors,
        container_title=_first(item.get("container-title")),
        year=year,
        volume=_str(item.get("volume")),
        issue=_str(item.get("issue")),
        pages=_str(item.get("page")),
        type=_str(item.get("type")),
        arxiv_id=arxiv_in(_arxiv_doi(named)),
    )


def _arxiv_doi(values: list[Json]) -> list[Json]:
    """The strings as given, an arXiv DataCite DOI spelled so `arxiv_in` reads it."""
    return [
        f"arXiv:{v[len(ARXIV_DOI_PREFIX) :]}"
        if isinstance(v, str) and normalize_doi(v).startswith(ARXIV_DOI_PREFIX)
        else v
        for v in values
    ]


def split_name(name: str) -> Author:
    """A display name ("Samyam Rajbhandari") as family (the last word) and given (the rest)."""
    words = name.split()
    if len(words) <= 1:
        return Author(name.strip() or None, None)
    return Author(words[-1], " ".join(words[:-1]))


def openalex_work(item: Json) -> WorkData | str:
    """An OpenAlex Work object."""
    if not isinstance(item, dict):
        return "not an object"
    ids = _dict(item.get("ids"))
    doi = _doi(item.get("doi")) or _doi(ids.get("doi"))
    if doi is None:
        return NO_DOI
    authors = []
    for a in _list(item.get("authorships")):
        author = a.get("author") if isinstance(a, dict) else None
        name = _str(author.get("display_name")) if isinstance(author, dict) else None
        if name is None and isinstance(a, dict):
            name = _str(a.get("raw_author_name"))
        if name is not None:
            authors.append(split_name(name))
    primary = _dict(item.get("primary_location"))
    source = _dict(primary.get("source"))
    biblio = _dict(item.get("biblio"))
    first, last = _str(biblio.get("first_page")), _str(biblio.get("last_page"))
    pages = f"{first}-{last}" if first and last and last != first else first or last
    locations = [loc for loc in _list(item.get("locations")) if isinstance(loc, dict)]
    urls = [loc.get(k) for loc in [primary, *locations] for k in ("landing_page_url", "pdf_url")]
    year = _year(item.get("publication_year"))
    return WorkData(
        doi=doi,
        source=OPENALEX,
        title=_str(item.get("display_name")) or _str(item.get("title")),
        authors=authors,
        container_title=_str(source.get("display_name")),
        year=year,
        volume=_str(biblio.get("volume")),
        issue=_str(biblio.get("issue")),
        pages=pages,
        type=_str(item.get("type")),
        arxiv_id=arxiv_in(_arxiv_doi([doi, *ids.values(), *urls])),
    )


def is_crossref(obj: JsonObject) -> bool:
    """Whether a top-level object reads as a Crossref work item (its DOI key is upper-case)."""
    return "DOI" in obj or ("title" in obj and isinstance(obj.get("title"), list))


def is_openalex(obj: JsonObject) -> bool:
    """Whether a top-level object reads as an OpenAlex Work (an openalex.org id, or its own keys)."""
    ident = obj.get("id")
    return (
        (isinstance(ident, str) and "openalex.org/" in ident)
        or "display_name" in obj
        or ("publication_year" in obj)
    )
