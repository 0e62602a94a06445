"""A resolution explained in plain words, for a librarian: the reference as the paper gave it, the
matched work's fields beside it (each agreed, disagreed or absent), the score on its scale, the method,
the runner-up and why it lost, and who decided. The resolution page shows it; `ledger resolve --explain`
prints it. It reads the same evidence as `shown.resolution_view` and adds nothing to its JSON."""

from __future__ import annotations

from typing import TypedDict

import msgspec

from ledger.model.claims import PERSON_PREFIX, RESOLVER_PREFIX, claimed
from ledger.model.doi import arxiv_key, doi_key
from ledger.model.errors import NotFound
from ledger.model.events import CitationData
from ledger.model.jsonvalue import Json, JsonObject
from ledger.model.works import CatalogueWork
from ledger.storage.derived.catalogue import Row, event_row
from ledger.storage.sql import FAR_FUTURE
from projections.record import observations
from service.ledger import Ledger
from service.resolver import match, sbmv, score
from service.resolver.run import ref_input
from service.resolver.score import identity
from service.screen import json_part

# the most a reference showing every field of a work earns (title whole and long, every author, ...)
SCALE = (
    score.TITLE + score.LONG_TITLE + score.FIRST_AUTHOR + score.AUTHORS + score.YEAR + score.VOLUME
    + score.ISSUE + score.PAGE + score.CONTAINER
)  # fmt: skip
_OWN_METHODS = {"identifier", "title-author-year", "search-validate"}
# `error` is shown in a row of its own
_KNOWN_EVIDENCE = {"method", "catalogue_seq", "score", "agreed", "disagreed", "runner_up", "error"}
_KNOWN_RUNNER = {"catalogue_seq", "doi", "arxiv_id", "score"}
# the reference's fields a structured reference gives, by what they are compared with
_REF_FIELDS = {
    "title": ("article_title", "volume_title", "series_title"),
    "first author": ("author",),
    "year": ("year",),
    "journal or venue": ("journal_title", "volume_title"),
    "volume": ("volume",),
    "issue": ("issue",),
    "first page": ("first_page",),
    "DOI": ("DOI",),
    "arXiv id": (),
}
# the scorer's names for what agreed and disagreed, by the field shown
_AGREED = {
    "title": ("title", "title_start", "title_words"),
    "first author": ("first_author",),
    "year": ("year", "year_near"),
    "journal or venue": ("container", "preprint"),
    "volume": ("volume",),
    "issue": ("issue",),
    "first page": ("first_page",),
}
_DISAGREED = {"title": ("title",), "year": ("year",), "journal or venue": ("venue",),
              "volume": ("volume",), "first page": ("first_page",)}  # fmt: skip
_NOTES = {
    "title_start": "the reference is cut short inside the work's title",
    "title_words": "every word of the work's title, printed together in another order",
    "year_near": "one year apart, as a preprint and its journal version often are",
    "preprint": "both are preprints",
}


# the reference as its source gave it: where it comes from, its text, its (field, value) pairs
Given = TypedDict("Given", {"from": str | None, "text": str | None, "fields": list[list[str]]})


class Person(TypedDict):
    """The person who decided, and when."""

    name: str
    date: str
    at: str


class FieldMark(TypedDict):
    """One field of the matched work beside the reference's."""

    field: str
    reference: str | None
    work: str | None
    mark: str  # agreed, disagreed or absent
    note: str | None


class RunnerUp(TypedDict):
    """The runner-up, named, its score and why it lost."""

    work: str
    score: Json
    why: str
    other: list[str]


class Explanation(TypedDict):
    """A resolution explained: what the resolution page and `ledger resolve --explain` show."""

    reference: Given
    resolved_by: str | None
    person: Person | None
    method: str | None
    score: str | None
    scale: str | None
    fields: list[FieldMark]
    matched: str | None
    runner_up: RunnerUp | None
    other: list[str]


_NOTHING = "nothing: its source gave no text and no fields for this reference"
_READ = {"doi": "the DOI in the reference", "arxiv": "the arXiv id in the reference"}


def paper_of(ledger: Ledger, observation_id: str) -> str:
    """The arXiv id of the paper whose reference this observation is (NotFound naming --observation)."""
    facts = ledger.store.works.observation_facts([observation_id], -FAR_FUTURE, ledger.clock.now_us())
    obs = observations(facts).get(observation_id)
    if obs is None:
        raise NotFound(f"no observation {observation_id!r}", details={"observation_id": observation_id})
    return obs.citing


def _citation(ledger: Ledger, view: JsonObject) -> CitationData | None:
    """The observation's latest citation, its cited work the one the record displayed before the ledger's
    resolver or a person answered (a record's references arrive with another source's resolution)."""
    oid = str(view["observation_id"])
    facts = ledger.store.works.observation_facts([oid], -FAR_FUTURE, ledger.clock.now_us())
    obs = observations(facts).get(oid)
    if obs is None:
        return None
    citation: CitationData = obs.cit.data
    shown = [f.data.cited_work for f in facts if f.type == "resolution.observed" and f.data.cited_work
             is not None and claimed(f.data.resolver_source) is None]  # fmt: skip
    if shown and citation.reference is msgspec.UNSET:
        return msgspec.structs.replace(citation, cited_work=shown[-1])
    return citation


def _work(ledger: Ledger, seq: int | None) -> Row | None:
    """The catalogue work an event holds, as the catalogue reads it (None: no such event, or not a work)."""
    if seq is None:
        return None
    found = ledger.store.envelopes([seq])
    if not found:
        return None
    e = found[0]
    return event_row(e.seq, e.type, e.observed_at, 0, e.data)


def _named(row: Row | None, seq: int, doi: str | None, arxiv_id: str | None) -> str:
    """A catalogue work as a person names it: its title, year, and identifier."""
    ident = f"DOI {doi}" if doi else f"arXiv:{arxiv_id}" if arxiv_id else f"catalogue event seq {seq}"
    if row is None or not row.title:
        return ident
    year = f" ({row.year})" if row.year else ""
    return f"“{row.title}”{year}, {ident}"


def reference_as_given(citation: CitationData | None) -> Given:
    """The reference as its source gave it: its text and structured fields, or the cited work the
    record displays when that is all there is."""
    if citation is None:
        return {"from": None, "text": None, "fields": []}
    if citation.reference is not msgspec.UNSET:
        given = msgspec.to_builtins(citation.reference)
        text = given.pop("unstructured", None)
        fields = [[k.replace("_", " "), str(v)] for k, v in given.items()]
        return {"from": "the reference as its source gave it", "text": text, "fields": fields}
    cited = citation.cited_work
    if cited is None:
        return {"from": _NOTHING, "text": None, "fields": []}
    fields = [[k, str(v)] for k, v in (("title", cited.title), ("venue", cited.venue), ("year", cited.year),
              ("DOI", cited.doi), ("arXiv", cited.arxiv_id), ("arXiv id Pith linked", cited.pith_arxiv_id))
              if v is not None]  # fmt: skip
    if not fields:
        return {"from": _NOTHING, "text": None, "fields": []}
    what = "the cited work the record displays; its source gave no reference text, only these fields"
    return {"from": what, "text": None, "fields": fields}


def _ref_value(citation: CitationData | None, name: str) -> str | None:
    if citation is None:
        return None
    if citation.reference is not msgspec.UNSET:
        for attr in _REF_FIELDS.get(name, ()):
            value = getattr(citation.reference, attr)
            if isinstance(value, str) and value.strip():
                return value
        return None
    cited = citation.cited_work
    if cited is None:
        return None
    shown = {"title": cited.title, "year": cited.year, "journal or venue": cited.venue, "DOI": cited.doi,
             "arXiv id": cited.arxiv_id or cited.pith_arxiv_id}  # fmt: skip
    value = shown.get(name)
    return None if value is None else str(value)


def _has_text(citation: CitationData | None) -> bool:
    ref = None if citation is None else citation.reference
    return isinstance(ref, msgspec.Struct) and isinstance(getattr(ref, "unstructured", None), str)


def _work_value(row: Row, name: str) -> str | None:
    authors = row.authors and msgspec.json.decode(row.authors)
    values = {"title": row.title, "first author": authors[0] if authors else None,
              "year": row.year, "journal or venue": row.container, "volume": row.volume,
              "issue": row.issue, "first page": row.first_page, "DOI": row.doi,
              "arXiv id": row.arxiv_id}  # fmt: skip
    value = values.get(name)
    return None if value is None else str(value)


def _identifier(citation: CitationData | None, row: Row) -> str | None:
    """Which identifier of the reference named the work: "doi" or "arxiv" (None: none found)."""
    if citation is None:
        return None
    work = CatalogueWork(row.seq, row.observed_at, row.source, row.type, row.doi, row.arxiv_id, row.title,
                         (), row.container, row.year, row.volume, row.issue, row.first_page)  # fmt: skip
    key = identity(work)
    for ident in match.read(ref_input(citation, None)).idents:
        if key in ident.keys:
            return ident.kind
    return None


def field_marks(
    citation: CitationData | None, row: Row, agreed: list[str], disagreed: list[str], by_id: str | None
) -> list[FieldMark]:
    """The matched work's fields beside the reference's, each marked agreed, disagreed or absent (the
    reference does not show it, or the work has none)."""
    out: list[FieldMark] = []
    for name in _REF_FIELDS:
        mine, theirs = _ref_value(citation, name), _work_value(row, name)
        mark, note = "absent", None
        in_text = mine is None and _has_text(citation)
        hits = [a for a in _AGREED.get(name, ()) if a in agreed]
        if name == "DOI":
            if mine is not None and theirs is not None:
                mark = "agreed" if doi_key(mine) == doi_key(theirs) else "disagreed"
            elif by_id == "doi":
                mark, note = "agreed", "found in the reference's text"
        elif name == "arXiv id":
            if mine is not None and theirs is not None:
                mark = "agreed" if arxiv_key(mine) == arxiv_key(theirs) else "disagreed"
            elif by_id == "arxiv":
                mark, note = "agreed", "found in the reference's text"
        elif hits:
            mark, note = "agreed", _NOTES.get(hits[0])
            mine = "found in the text" if in_text else mine
        elif any(d in disagreed for d in _DISAGREED.get(name, ())):
            mark = "disagreed"
            mine = "another in the text" if in_text else mine
        if mark == "absent" and theirs is None:
            note = "the catalogue holds none for this work"
        elif mark == "absent":
            note = "not found in the reference" if mine is None else "not compared"
        if name == "first author" and "authors" in agreed:
            note = ((note + "; ") if note else "") + "other authors of the work are in the reference too"
        out.append({"field": name, "reference": mine, "work": theirs, "mark": mark, "note": note})
    return out


def method_words(method: str, status: str, by_identifier: str | None) -> str:
    """What decided, in plain words."""
    if method == "identifier":
        named = _READ.get(by_identifier or "", "an identifier (a DOI or an arXiv id) in the reference")
        if status == "metadata_mismatch":
            return f"{named} names a work of the catalogue, but the reference's other fields disagree with it"
        return f"{named}, and the reference's other fields do not contradict it"
    if method == "title-author-year":
        return "title, first author and year agree (the title word for word), and no other work has all three"
    if method == "search-validate":
        if status.startswith("verified"):
            return ("the catalogue was searched with the reference's words, and the best candidate's fields "
                    "were checked one by one against the reference")  # fmt: skip
        return "the catalogue was searched with the reference's words; no candidate was accepted"
    if method == "sbmv":
        return ("SBMV: the catalogue searched with the reference's words, the best candidate kept when the "
                "two are similar enough")  # fmt: skip
    if method == "person":
        return "a person's decision"
    if method == "error":
        return "none: the resolver could not read this reference, and this version of it will not try again"
    return f"a method this page does not describe ({method})"


def score_words(method: str, value: int, chosen: bool) -> str | None:
    """The score with its scale and what it must reach."""
    whose = "" if chosen else "the best candidate scored " if value else "no candidate scored a point: "
    if method == "identifier":
        return (f"{whose}{value} of {SCALE} points; an identifier needs no score: it stands unless the "
                "reference's other fields contradict it")  # fmt: skip
    if method in _OWN_METHODS:
        return (
            f"{whose}{value} of {SCALE} points; a match found by searching needs {match.THRESHOLD}, "
            f"{match.TITLE_NEEDED} of them from the title, or, for a reference without a title, "
            f"{match.NUMBERS_THRESHOLD} with its first page and three of volume, year, first author and "
            "journal agreeing"
        )
    if method == "sbmv":
        least = round(sbmv.MIN_SIMILARITY * 100)
        return f"{whose}{value} of 100 (similarity in per cent); SBMV keeps a candidate from {least}"
    return None


def scale_words(method: str) -> str | None:
    """How the resolver's own scorer earns and loses points."""
    if method not in _OWN_METHODS:
        return None
    gains = (f"title up to {score.TITLE + score.LONG_TITLE}, first author {score.FIRST_AUTHOR}, other "
             f"authors {score.AUTHORS}, year {score.YEAR}, first page {score.PAGE}, volume {score.VOLUME}, "
             f"issue {score.ISSUE}, journal {score.CONTAINER}")  # fmt: skip
    costs = (f"another work's title {score.WRONG_TITLE}, a year two or more apart {score.WRONG_YEAR}, a "
             f"preprint for a journal version {score.WRONG_VENUE}, a wrong first page {score.WRONG_PAGE}, "
             f"a volume and first page neither printed {score.WRONG_NUMBERS}, pages or authors of a work "
             f"that has none (a chapter for its book) {score.WRONG_PART}")  # fmt: skip
    return f"a field of the reference that agrees adds points ({gains}); one that disagrees costs ({costs})"


def runner_up_words(ledger: Ledger, evidence: JsonObject, chosen: bool) -> RunnerUp | None:
    """The runner-up, named, and why it lost (or, when nothing was chosen, why neither was taken)."""
    ru = evidence.get("runner_up")
    if not isinstance(ru, dict):
        return None
    seq = ru.get("catalogue_seq")
    row = _work(ledger, seq if isinstance(seq, int) else None)
    gap = _int(evidence.get("score", 0)) - _int(ru.get("score", 0))
    if chosen and gap == 0:
        why = ("it agreed with the reference as fully as the chosen work (the same points); of two "
               "works that agree equally, the one the catalogue held first is taken: this one came "
               "later")  # fmt: skip
    elif chosen and gap >= match.MARGIN:
        why = f"it scored {gap} points below the chosen work (a lead of {match.MARGIN} or more decides)"
    elif chosen:
        why = (f"it scored within {match.MARGIN} points of the chosen work ({gap} below), and a field the "
               "chosen work agreed on and it did not told them apart")  # fmt: skip
    elif gap < match.MARGIN and _int(evidence.get("score", 0)) >= match.NUMBERS_THRESHOLD:
        why = (f"neither was taken: the best and the runner-up were within {match.MARGIN} points and no "
               "field told them apart")  # fmt: skip
    else:
        why = "neither was taken: no candidate reached what a match needs"
    other = [f"{k.replace('_', ' ')}: {v}" for k, v in ru.items() if k not in _KNOWN_RUNNER]
    named = _named(row, seq if isinstance(seq, int) else 0, _text(ru.get("doi")), _text(ru.get("arxiv_id")))
    return {"work": named, "score": ru.get("score"), "why": why, "other": other}


def resolved_by(source: str | None, observed_at: str) -> str:
    """Who resolved it, in words: a person (named, with the date) or the resolver (its method, version)."""
    if source is None:
        return "no resolver named"
    if source.startswith(PERSON_PREFIX):
        return (f"a person, {source.removeprefix(PERSON_PREFIX)}, on {observed_at[:10]} (the resolver never "
                "changes a person's decision)")  # fmt: skip
    if source.startswith(RESOLVER_PREFIX):
        method, _, version = source.removeprefix(RESOLVER_PREFIX).rpartition("/")
        return f"this ledger's resolver (method {method or version}, version {version if method else '?'})"
    return f"another source, {source}"


def explanation(ledger: Ledger, view: JsonObject) -> Explanation:
    """The resolution of `view` (shown.resolution_view) explained for a person."""
    citation = _citation(ledger, view)
    out: Explanation = {"reference": reference_as_given(citation), "resolved_by": None, "person": None,
                           "method": None, "score": None, "scale": None, "fields": [], "matched": None,
                           "runner_up": None, "other": []}  # fmt: skip
    shown = view.get("resolution")
    if shown is None:
        return out
    res = json_part(shown)
    at, status = str(res["observed_at"]), str(res["status"])
    out["resolved_by"] = resolved_by(_text(res["resolver_source"]), at)
    if res.get("by_person"):
        out["person"] = {"name": str(res["by_person"]), "date": at[:10], "at": at}
    evidence = view.get("evidence")
    if not isinstance(evidence, dict):
        return out
    method = str(evidence.get("method"))
    seq = evidence.get("catalogue_seq")
    row = _work(ledger, seq if isinstance(seq, int) else None)
    by_identifier = None if row is None or method != "identifier" else _identifier(citation, row)
    out["method"] = method_words(method, status, by_identifier)
    chosen = row is not None and status.startswith("verified")
    out["score"] = score_words(method, _int(evidence.get("score", 0)), chosen or method == "identifier")
    out["scale"] = scale_words(method)
    if row is not None:
        out["matched"] = _named(row, row.seq, row.doi, row.arxiv_id)
    if row is not None and method in _OWN_METHODS:  # only the resolver's own scorer records fields
        agreed, disagreed = _texts(evidence.get("agreed", [])), _texts(evidence.get("disagreed", []))
        out["fields"] = field_marks(citation, row, agreed, disagreed, by_identifier)
    out["runner_up"] = runner_up_words(ledger, evidence, chosen)
    out["other"] = [f"{k.replace('_', ' ')}: {v}" for k, v in evidence.items() if k not in _KNOWN_EVIDENCE]
    return out


def explain_lines(view: JsonObject, x: Explanation) -> list[str]:
    """The explanation as `ledger resolve --explain` prints it."""
    lines = [f"Reference {view['reference_index']} of arXiv:{view['arxiv_id']} "
             f"(observation {view['observation_id']}), as of {view['as_of']}"]  # fmt: skip
    ref = x["reference"]
    lines.append(f"As given ({ref['from'] or 'nothing recorded'}):")
    if ref["text"]:
        lines.append(f"  {ref['text']}")
    lines += [f"  {k}: {v}" for k, v in ref["fields"]]
    res = view.get("resolution")
    if res is None:
        lines.append("Resolution: pending (not yet resolved)")
        return lines
    lines.append(f"Status: {str(json_part(res)['status']).replace('_', ' ')}")
    lines.append(f"Resolved by: {x['resolved_by']}")
    if x["method"] is None:
        lines.append("Evidence: none recorded (not an answer of this ledger's resolver)")
        return lines
    lines.append(f"Method: {x['method']}")
    if x["score"]:
        lines.append(f"Score: {x['score']}")
    if x["scale"]:
        lines.append(f"  (how: {x['scale']})")
    if x["matched"]:
        lines.append(f"Matched work: {x['matched']}")
    if x["fields"]:
        lines.append("Fields (reference | matched work):")
        for f in x["fields"]:
            note = f" ({f['note']})" if f["note"] else ""
            shown = f"{f['reference'] or '-'} | {f['work'] or '-'}"
            lines.append(f"  {f['mark'].upper():9} {f['field']}: {shown}{note}")
    ru = x["runner_up"]
    if ru is None:
        lines.append("Runner-up: none")
    else:
        lines.append(f"Runner-up: {ru['work']}, {ru['score']} points: {ru['why']}")
        lines += [f"  {o}" for o in ru["other"]]
    lines += [f"Also recorded: {o}" for o in x["other"]]
    return lines


def _int(value: Json) -> int:
    """A score of the evidence (a number by its schema) as an int."""
    if isinstance(value, (int, float, str)):
        return int(value)
    raise TypeError(f"the evidence holds {type(value).__name__} where a score belongs")


def _text(value: Json) -> str | None:
    """An identifier or a name of the evidence (a string or null by its schema)."""
    return value if isinstance(value, str) else None


def _texts(value: Json) -> list[str]:
    """The evidence's field names (a list of strings by its schema)."""
    if not isinstance(value, list):
        raise TypeError(f"the evidence holds {type(value).__name__} where a list belongs")
    return [str(v) for v in value]
