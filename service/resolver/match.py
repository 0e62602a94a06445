"""The resolver's decision (resolver-v1.md): identifiers first, then candidates searched for in batches and
validated field by field, with guards for near-duplicate works; one `Decision` per reference.

The catalogue returns candidates (a superset, in no order); everything decided here is decided in code
with a fixed order for ties (score, then the seq of the first event of the work's DOI, then the
catalogue seq), so both backends give the same answers.
`resolve_many` keeps no state between calls: a process pool may run it over batches, each worker with its
own catalogue."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from functools import cache, partial
from typing import NamedTuple, TypeVar

from rapidfuzz import fuzz

from ledger.model.events import Status
from ledger.model.resolving import Decision, RefInput
from ledger.model.works import CatalogueWork, Evidence, RunnerUp
from ledger.storage.interface import CatalogueTables
from service.resolver import identifiers, run
from service.resolver.identifiers import Ident
from service.resolver.parse import parse, text_cap
from service.resolver.score import (
    Cand,
    RefView,
    Scored,
    first_author_leads,
    identity,
    name_in,
    name_near,
    prepare,
    score,
    title_continues,
    unexplained_words,
    view,
)

METHOD_VERSION = "sbmv+guards/3"
SEARCH_LIMIT = 20  # candidates asked per reference from the text index
PAIR_LIMIT = 10  # and per (volume, first page) pair
THRESHOLD = 52  # the score a candidate needs to be a match
TITLE_NEEDED = 25  # ... with this much of it from its title
NUMBERS_THRESHOLD = 36  # or, for a reference without a title, with its numbers and a name agreeing
BARE_TITLE_WORDS = 3  # a reference that is a work's whole title and nothing else, of this many words
MARGIN = 10  # a runner-up this close is a near-duplicate: only a field that tells them apart decides
MAX_WORDS = 48  # words of a reference sent to the text index
DOI_CLOSE = 90  # how alike (0-100) a printed identifier and a candidate's must be to be one misprinted
# the characters of a reference the matcher reads (its fields and the work it displays, joined); the rest
# of a longer one is not read. A reference is a few hundred characters: past the cap is no citation
ENV_MAX_TEXT = "LEDGER_RESOLVER_MAX_TEXT"
DEFAULT_MAX_TEXT = 4096


@cache
def max_text() -> int:
    """LEDGER_RESOLVER_MAX_TEXT, read once (SettingError naming it when it is not a valid cap)."""
    return text_cap(os.environ.get(ENV_MAX_TEXT), ENV_MAX_TEXT, DEFAULT_MAX_TEXT)


_T = TypeVar("_T")


class _Ref(NamedTuple):
    idents: list[Ident]
    malformed: list[str]
    view: RefView


def reference_text(inp: RefInput) -> tuple[str, list[Ident]]:
    """The text of a reference (its fields and the cited work it displays) and the identifiers its fields
    name."""
    parts: list[str] = []
    doi: str | None = None
    arxiv: list[str | None] = []
    ref = inp.reference
    if ref is not None:
        for name in (
            "unstructured",
            "author",
            "article_title",
            "volume_title",
            "series_title",
            "journal_title",
            "year",
            "volume",
            "issue",
            "first_page",
            "edition",
            "component",
        ):
            value = getattr(ref, name)
            if isinstance(value, str) and value.strip() and value not in parts[:1]:
                parts.append(value)
        doi = ref.DOI if isinstance(ref.DOI, str) else None
    cited = inp.cited
    if cited is not None:
        seen = " ".join(parts)
        for value in (cited.title, cited.venue):
            if value and value.strip() and value not in seen:
                parts.append(value)
        if cited.year is not None and str(cited.year) not in seen:
            parts.append(str(cited.year))
        doi = doi or cited.doi
        arxiv = [cited.arxiv_id, cited.pith_arxiv_id]
    # fields apart by punctuation, as a printed reference keeps its parts; each read up to the cap
    cap = max_text()
    capped = [a[:cap] if a else a for a in arxiv]
    return " ; ".join(parts)[:cap], identifiers.from_fields(doi[:cap] if doi else doi, capped)


def read(inp: RefInput) -> _Ref:
    """One reference read: its identifiers (fields first, then text) and its text for matching."""
    text, fields = reference_text(inp)
    found = identifiers.find(text)
    idents = list({i.keys[0]: i for i in fields + found.idents}.values())
    ref = inp.reference
    volume = ref.volume if ref is not None and isinstance(ref.volume, str) else None
    page = ref.first_page if ref is not None and isinstance(ref.first_page, str) else None
    parsed = parse(found.rest)
    if volume and page:
        # a structured reference states its volume and first page: the pair the catalogue is asked for
        # first (its fields, joined with ";", are not printed as a style prints the pair)
        pair = (volume.strip().lstrip("0"), page.strip().lstrip("0").lower())
        if all(pair):
            parsed = parsed._replace(pairs=list(dict.fromkeys([pair, *parsed.pairs]))[:4])
    return _Ref(idents, found.malformed, view(parsed, volume, page))


def _evidence(method: str, best: Scored | None, chosen: bool, runner: Scored | None) -> Evidence:
    ru = None
    if runner is not None:
        w = runner.cand.work
        ru = RunnerUp(w.seq, w.doi, w.arxiv_id, runner.total)
    if best is None:
        return Evidence(method, None, 0, [], [], ru)
    return Evidence(
        method,
        best.cand.work.seq if chosen else None,
        best.total,
        list(best.agreed),
        list(best.disagreed),
        ru,
    )


def held_since(w: CatalogueWork) -> int:
    """When the catalogue first held a work: the seq of its DOI's (or paper's) first event, which no
    later event changes (a reader that does not know it gives none: then the work's own seq)."""
    return w.seq if w.first_seq is None else w.first_seq


def _order(s: Scored) -> tuple[int, int, int]:
    # ties to the work held first: a copy of a work under a new DOI comes after it, however its
    # observed_at is set and however often the original is observed again
    return (-s.total, held_since(s.cand.work), s.cand.work.seq)


def _described(
    w: CatalogueWork,
) -> tuple[str | None, tuple[str, ...], str | None, int | None, str | None, str | None, str | None]:
    """What a reference could tell a work by: two works alike in all of it are one to any reference."""
    return (w.title, w.authors, w.container, w.year, w.volume, w.issue, w.first_page)


def _alike(a: Scored, b: Scored) -> bool:
    """Whether two candidates agree equally with a reference: the same points from the same fields,
    works of the same kind (a preprint, a notice, a part), and the reference showing their title, or
    the two having one title, or the two described alike in every field (an untitled item copied).
    The same article deposited under two DOIs is common: neither is told from the other, so the first
    held is taken. Two works of other titles alike in a journal, volume, page and year, for a reference
    without a title, are as often two notices or two parts of one series: a near-duplicate still."""
    same_title = bool(a.cand.title_compact) and a.cand.title_compact == b.cand.title_compact
    return (
        ("title" in a.agreed or same_title or _described(a.cand.work) == _described(b.cand.work))
        and a.total == b.total
        and set(a.agreed) == set(b.agreed)
        and set(a.disagreed) == set(b.disagreed)
        and a.title_exact == b.title_exact
        and (a.cand.preprint, a.cand.notice, a.cand.part) == (b.cand.preprint, b.cand.notice, b.cand.part)
    )


def _by_identifier(
    r: _Ref, by_key: dict[str, list[CatalogueWork]], cache: dict[int, Cand]
) -> Decision | None:
    """The decision an identifier makes, or None when none names a known work."""
    first_mismatch: Decision | None = None
    for ident in r.idents:
        for key in ident.keys:
            # the work whose own identifier this is: not a journal version that names its preprint's id
            works = sorted(
                (w for w in by_key.get(key, []) if identity(w) == key),
                key=lambda w: (w.source != "arxiv", w.seq),
            )
            if not works:
                continue
            c = _cand(works[0], cache)
            s = score(r.view, c)
            if _agrees(r.view, s):
                return Decision("verified_exact", c.work, _evidence("identifier", s, True, None))
            if first_mismatch is None:
                # the evidence names the work the identifier names, though it is not the match
                first_mismatch = Decision("metadata_mismatch", None, _evidence("identifier", s, True, None))
            break
    return first_mismatch


def _agrees(r: RefView, s: Scored) -> bool:
    """Whether the reference's text, beside the identifier, agrees with the work it names: it agrees
    when it shows too little to disagree."""
    if r.substance < 3 and not r.p.years:
        return True
    shown = {"title", "first_author", "year", "year_near", "volume", "first_page", "container", "preprint"}
    agreed = len(shown.intersection(s.agreed))
    if r.substance < 3:
        return "year" not in s.disagreed
    return agreed > len(s.disagreed) and agreed > 0


def _cand(w: CatalogueWork, cache: dict[int, Cand]) -> Cand:
    c = cache.get(w.seq)
    if c is None:
        c = cache[w.seq] = prepare(w)
    return c


def _accepted(r: RefView, s: Scored) -> bool:
    if s.title_exact and r.p.compact == s.cand.title_compact and len(r.p.words) >= BARE_TITLE_WORDS:
        # the reference is the work's whole title word for word and nothing else (a list's line whose
        # other parts were lost): a title of three words or more is seldom another work's whole title
        return True
    if s.total >= THRESHOLD and s.title >= TITLE_NEEDED:
        # a title alone decides only when it is the whole reference (a record's cited title): beside
        # other text that agrees with nothing, it may be the beginning of another work's title
        return len(s.agreed) > 1 or len(r.p.compact) <= len(s.cand.title_compact) * 1.2
    # a reference without a title (ACS, AIP, Elsevier's styles): its first page and three of its
    # volume, year, first author and journal must agree
    a = s.agreed
    if s.cand.page is None and not s.disagreed and all(f in a for f in _NO_PAGE_NEEDS):
        # a work held without a first page (an article number) cannot agree on one: its volume, year,
        # journal and first author must all agree, and its other authors too when it has any (without a
        # volume either, two papers of one team at one conference are common: left unresolved)
        return len(s.cand.authors) < 2 or "authors" in a
    if (
        s.cand.page is None
        and s.cand.volume is None
        and not s.disagreed
        and all(f in a for f in ("year", "first_author", "container"))
        and len(s.cand.authors) >= 2
        and all(name_in(r, n) for n in s.cand.authors[:6])
    ):
        # a paper of a proceedings volume or a chapter, held with neither volume nor pages: its whole
        # team (two or more), its venue and its year agree
        return True
    held = [f for f, v in _HELD.items() if v(s.cand)]
    if "first_page" in a and not s.disagreed and len(held) >= 2 and all(f in a for f in held):
        # every field the work holds agrees, with its first page: an item without authors (an issue's
        # editorial), a chapter of a book held without a volume or a year
        return True
    return (
        s.total >= NUMBERS_THRESHOLD
        # a name the reference prints that is not the work's first author's, nor that name misprinted,
        # is another work's author
        and (
            "first_author" in a
            or not s.cand.authors
            or name_near(r, s.cand.authors[0])
            or not unexplained_words(r, s.cand)
        )
        and "year" not in s.disagreed  # years apart: another paper at the same place of another volume
        and "first_page" in a
        and sum(f in a for f in ("volume", "year", "first_author", "container")) >= 3
    )


_NO_PAGE_NEEDS = ("volume", "year", "first_author", "container")
# the fields beside its first page a title-less reference is matched by, when the work holds them
_HELD: dict[str, Callable[[Cand], bool]] = {
    "volume": lambda c: c.volume is not None,
    "year": lambda c: c.work.year is not None,
    "first_author": lambda c: bool(c.authors),
    "container": lambda c: bool(c.container),
}


def _beats(b: Scored, r: Scored) -> bool:
    """Whether a field tells `b` from a close runner-up `r` in `b`'s favour."""
    if b.total - r.total >= MARGIN:
        return True
    more = set(b.agreed) - set(r.agreed)
    fewer = set(r.agreed) - set(b.agreed)
    worse = set(r.disagreed) - set(b.disagreed)
    return bool((more or worse) and not fewer and not (set(b.disagreed) - set(r.disagreed)))


def _compatible(c: Cand, idents: list[Ident]) -> bool:
    """Whether a candidate may be the work an unknown identifier names: only as that identifier misprinted."""
    mine = c.key
    return any(fuzz.ratio(mine, k) >= DOI_CLOSE for i in idents for k in i.keys)


def _by_text(r: _Ref, cands: list[Cand]) -> Decision:
    # of works equal in points, one whose first author the reference prints first comes first: two
    # deposits of one paper, their authors in another order, are told apart by it
    scored = sorted(
        (score(r.view, c) for c in cands),
        key=lambda s: (-s.total, not first_author_leads(r.view, s.cand), *_order(s)[1:]),
    )
    if not scored:
        return _unresolved(r, None, None)
    best = scored[0]
    runner = scored[1] if len(scored) > 1 else None
    continues = best.title >= TITLE_NEEDED and "title_words" not in best.agreed  # a title in order
    if not _accepted(r.view, best) or (continues and title_continues(r.view, best.cand)):
        return _unresolved(r, best, runner)
    rival = next((s for s in scored[1:] if not _alike(best, s)), None)
    if rival is not None and not _beats(best, rival):
        # a near-duplicate (a preprint and its journal version, Part I and II): prefer neither
        return _unresolved(r, best, runner)
    if not first_author_leads(r.view, best.cand):
        return _unresolved(r, best, runner)
    if r.idents and not _compatible(best.cand, r.idents):
        # the reference names a work by an identifier the catalogue lacks: it cites that work, not this one
        return _unresolved(r, best, runner)
    exact = (
        best.title_exact
        and "first_author" in best.agreed
        and "year" in best.agreed
        and not best.disagreed
        and not r.idents
        and first_author_leads(r.view, best.cand)
        and not any(s.title_exact and "first_author" in s.agreed and "year" in s.agreed for s in scored[1:])
    )
    status: Status = "verified_exact" if exact else "verified_fuzzy"
    return Decision(
        status,
        best.cand.work,
        _evidence("title-author-year" if exact else "search-validate", best, True, runner),
    )


def _by_text_of(r: _Ref, works: list[CatalogueWork], cache: dict[int, Cand]) -> Decision:
    return _by_text(r, _dedupe(works, cache))


def _unresolved(r: _Ref, best: Scored | None, runner: Scored | None) -> Decision:
    status: Status = "malformed_identifier" if r.malformed and not r.idents else "unresolved"
    return Decision(status, None, _evidence("search-validate", best, False, runner))


def _dedupe(works: list[CatalogueWork], cache: dict[int, Cand]) -> list[Cand]:
    """One candidate per work: the arXiv paper the ledger holds before a catalogue record of the same id."""
    best: dict[str, Cand] = {}
    for w in sorted(works, key=lambda w: (w.source != "arxiv", w.seq)):
        c = _cand(w, cache)
        best.setdefault(c.key, c)
    return list(best.values())


def query_text(v: RefView) -> str:
    """What a reference asks the text index: its words, without numbers and single letters."""
    ws = [w for w in v.p.words if len(w) > 1 and not w.isdigit()]
    return " ".join(ws[:MAX_WORDS])


def _guarded(n: int, out: list[Decision | None], step: Callable[[], _T]) -> _T | None:
    """`step()`, or None when it raises: reference `n`'s answer is then that failure (run.failure), and
    the rest of the batch goes on."""
    try:
        return step()
    except Exception as e:
        if run.systemic(e):
            raise
        out[n] = run.failure(e)
        return None


def resolve_many(inputs: Sequence[RefInput], catalogue: CatalogueTables) -> list[Decision]:
    """One decision per input, in order: a batch's identifiers, searches and (volume, page) lookups are
    each one call to the catalogue. A reference whose reading or deciding raises is answered with that
    failure; the others are decided as if it were not there."""
    max_text()  # a setting that cannot be read fails the batch here, not each reference
    out: list[Decision | None] = [None] * len(inputs)
    read_: list[_Ref | None] = [_guarded(n, out, partial(read, i)) for n, i in enumerate(inputs)]
    refs = {n: r for n, r in enumerate(read_) if r is not None}
    cache: dict[int, Cand] = {}
    keys = list(dict.fromkeys(k for r in refs.values() for i in r.idents for k in i.keys))
    by_key = dict(zip(keys, catalogue.catalogue_by_keys(keys), strict=True)) if keys else {}
    pending: list[int] = []
    for n, r in refs.items():
        d = _guarded(n, out, partial(_by_identifier, r, by_key, cache)) if r.idents else None
        if d is not None:
            out[n] = d
        elif out[n] is None:
            pending.append(n)
    queries = {n: q for n in pending if (q := query_text(refs[n].view))}
    searched = list(queries)
    found = catalogue.catalogue_search([queries[n] for n in searched], SEARCH_LIMIT) if searched else []
    cands: dict[int, list[CatalogueWork]] = {n: list(f) for n, f in zip(searched, found, strict=True)}
    asked = [(n, pair) for n in pending for pair in refs[n].view.p.pairs]
    if asked:
        for (n, _), f in zip(
            asked, catalogue.catalogue_by_volume_page([p for _, p in asked], PAIR_LIMIT), strict=True
        ):
            cands.setdefault(n, []).extend(f)
    for n in pending:
        d = _guarded(n, out, partial(_by_text_of, refs[n], cands.get(n, []), cache))
        if d is not None:
            out[n] = d
    return [d for d in out if d is not None]
