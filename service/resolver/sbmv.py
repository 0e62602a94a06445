"""Crossref's search-based matching with validation (SBMV), re-implemented from its published evaluation
code as the baseline the bench compares the matcher with, on the same retrieval.

Crossref's validation is a generalised Jaccard similarity between a candidate's metadata and the string:
each number of the candidate's volume, year, issue, pages and title counts when the string holds it (a year
off by one counts half), the first author's family name by its fuzzy similarity to the string's start, and
every number of the string no field explains counts against; the search engine's relevance (raw and per
character) adds two terms. Our catalogue returns no relevance score, so both terms use the title's fuzzy
similarity to the string instead. No identifier rule, no near-duplicate guard: that is the baseline."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from rapidfuzz import fuzz

from ledger.model.resolving import Decision, RefInput
from ledger.model.works import CatalogueWork, Evidence, RunnerUp
from ledger.storage.interface import CatalogueTables
from service.resolver.match import SEARCH_LIMIT, reference_text
from service.resolver.normalise import fold

METHOD = "sbmv"
MIN_SIMILARITY = 0.5  # tuned on the tune split
_DOI = re.compile(r"(?<!\d)10\.\d{4,9}/[-._;()/:a-zA-Z0-9]+")
_ARXIV = re.compile(r"(?<![a-zA-Z0-9])arXiv:[\d.]+")
_BRACKETS = re.compile(r"\[[^\[\]]*\]")
# from the first digit of a number only: a start inside it fails as the first did, each after reading
# the rest of the number (quadratic in a long one)
_RANGE = re.compile(r"(?<!\d)(\d++)[\u002d\u00ad\u2010-\u2015\u207b\u208b\u2212](\d+)")
_NUMBER = re.compile(r"(?<!\d)\d+(?!\d)")


def _digits(number: str) -> list[int]:
    """A number's digits (any script's, as `\\d` reads them): two of one length compare as their
    values do, with no int() (which refuses more than 4,300 digits)."""
    return [unicodedata.decimal(c) for c in number]


def _numbers(text: str) -> list[str]:
    """The string's numbers as SBMV reads them: identifiers and bracketed labels out, page ends completed."""
    text = _BRACKETS.sub("", _ARXIV.sub("", _DOI.sub("", text)))

    def complete(m: re.Match[str]) -> str:
        first, last = m.group(1), m.group(2)
        if len(first) > len(last) and _digits(first[-len(last) :]) <= _digits(last):
            last = first[: len(first) - len(last)] + last
        return f"{first}-{last}"

    text = _RANGE.sub(complete, text)
    return _NUMBER.findall(text[5:])  # the first characters are a label's, when there is one


def similarity(text: str, w: CatalogueWork) -> float:
    """SBMV's validation similarity of `w` to the reference string `text` (0-1)."""
    numbers = _numbers(text)
    if not numbers:
        return 0.0
    relevance = fuzz.partial_ratio(fold(w.title or ""), fold(text)) / 100 if w.title else 0.0
    cand: dict[str, float] = {"score": relevance, "score_norm": relevance}
    found: dict[str, float] = {"score": 1.0, "score_norm": 1.0}
    year = str(w.year) if w.year is not None else None
    if w.volume and year and w.volume == year and numbers.count(w.volume) == 1:
        numbers.append(w.volume)  # a volume that is the year, printed once, stands for both

    def count(name: str, value: str | None) -> None:
        for i, n in enumerate(_NUMBER.findall(value or "")):
            cand[f"{name}{i}"] = 1.0
            found[f"{name}{i}"] = 0.0
            if n in numbers:
                found[f"{name}{i}"] = 1.0
                numbers.remove(n)

    count("volume", w.volume)
    count("year", year)
    count("issue", w.issue)
    count("page", w.first_page)
    count("title", w.title)
    if w.authors:
        family = fold(w.authors[0])
        cand["author"] = 1.0
        found["author"] = fuzz.partial_ratio(family, fold(text)[: 2 * len(family)]) / 100
    if year is not None and found.get("year0") == 0.0:
        for near in (str(int(year) - 1), str(int(year) + 1)):
            if near in numbers:
                found["year0"] = 0.5
                numbers.remove(near)
                break
    for i in range(len(numbers)):
        cand[f"rest{i}"] = 0.0
        found[f"rest{i}"] = 1.0
    num = sum(min(cand[k], found[k]) for k in cand)
    den = sum(max(cand[k], found[k]) for k in cand)
    return num / den if den else 1.0


def resolve_many(
    inputs: Sequence[RefInput], catalogue: CatalogueTables, min_similarity: float = MIN_SIMILARITY
) -> list[Decision]:
    """One decision per input: the candidate of the search most similar to the string, when similar enough."""
    texts = [reference_text(i)[0].replace("\n", " ") for i in inputs]
    asked = [n for n, t in enumerate(texts) if t.strip()]
    found = catalogue.catalogue_search([texts[n] for n in asked], SEARCH_LIMIT) if asked else []
    cands: dict[int, list[CatalogueWork]] = dict(zip(asked, found, strict=True))
    out = []
    for n, text in enumerate(texts):
        scored = sorted(((similarity(text, w), w) for w in cands.get(n, [])), key=lambda t: (-t[0], t[1].seq))
        best = scored[0] if scored else None
        runner = scored[1] if len(scored) > 1 else None
        ru = (
            RunnerUp(runner[1].seq, runner[1].doi, runner[1].arxiv_id, round(runner[0] * 100))
            if runner
            else None
        )
        if best is not None and best[0] >= min_similarity and best[0] > 0:
            out.append(
                Decision(
                    "verified_fuzzy", best[1], Evidence(METHOD, best[1].seq, round(best[0] * 100), [], [], ru)
                )
            )
        else:
            score = round(best[0] * 100) if best else 0
            out.append(Decision("unresolved", None, Evidence(METHOD, None, score, [], [], ru)))
    return out
