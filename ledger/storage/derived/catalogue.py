"""The resolver's catalogue (resolver-v1.md): each DOI's latest `work.observed` and each arXiv paper's
latest `paper.observed`, one row each, derived from the events past a cursor as the title index is.
This module holds the rules (which row an event gives, the words a search looks for); the SQL is
ledger/storage/catalogue_store.py's."""

from __future__ import annotations

import heapq
import json
import math
import re
from collections.abc import Sequence
from typing import NamedTuple

import msgspec

from ledger.model.doi import arxiv_key, doi_key
from ledger.model.works import CatalogueWork, WorkData
from ledger.storage.sql import SqlRow

WORK = "work.observed"
PAPER = "paper.observed"
# events past the cursor read per transaction (SQLite holds its write lock for each)
CHUNK = 50_000
# the words of one searched text, at most: the rarest (longest) are kept
MAX_TOKENS = 24
# the words of one text a search looks for once their counts are known: the rarest
RAREST = 4
# a word held by more works than this is not looked for while two rarer words of the text remain
COMMON = 2_000
# works a search may rank for one text before it asks for two of the text's words instead of one
MATCH_BUDGET = 5_000
# a word held by more works than this is not looked for
POSTINGS = 50_000
# a text whose looked-for words are together held by at most this many works reads each word's works
# whole and is ranked from them in code (`tiers`): a read of the index a word, not one a set of words
WHOLE = 200
# what one work puts in the title index, at most: a work's words decide which searches it enters, so a
# title holding every word of the catalogue, or thousands of author names, would enter them all. Real
# titles are seldom past 50 words; the resolver reads an author list's first few names
TITLE_WORDS = 64
NAMES = 64
NAME_WORDS = 3  # of each name
CONTAINER_WORDS = 32
_WORD = re.compile(r"[^\W_]+")
# a word broken at a line's end: "mod- els", "mod-\nels" (a hyphen then space, between letters)
_BROKEN = re.compile(r"(?<=[^\W\d_])-\s+(?=[^\W\d_])")
_PAGE_SPLIT = re.compile(r"\s*[-\u2010-\u2015,]\s*")
# words so common in titles and references that they select nothing
_STOP = (
    "a al an and are arxiv as at be by com conference der die doi et for from http https in international "
    "into is it its journal no of on or org pages pp preprint proc proceedings the to und using via "
    "vol with www"
)
STOP_WORDS = frozenset(_STOP.split())


class Row(NamedTuple):
    """One catalogue row, as stored: the CatalogueWork's fields, its identity, keys and search text."""

    ident: str  # "doi:" + the normalised DOI, or "arxiv:" + the arXiv id
    seq: int
    observed_at: str
    observed_us: int
    source: str
    doi: str | None
    arxiv_id: str | None
    doi_key: str | None
    arxiv_key: str | None
    title: str | None
    authors: str  # a JSON array of names
    container: str | None
    year: int | None
    volume: str | None
    issue: str | None
    first_page: str | None
    type: str | None
    vol_key: str | None
    page_key: str | None
    search_text: str
    first_seq: int  # the seq of its identity's first event: which of two works the catalogue held first


COLUMNS = Row._fields
# what a read selects, in CatalogueWork's order
WORK_COLUMNS = ", ".join(CatalogueWork._fields)


class _Paper(msgspec.Struct):
    arxiv_id: str
    title: str
    submitted_at: str


_WORK_DATA = msgspec.json.Decoder(WorkData)
_PAPER_DATA = msgspec.json.Decoder(_Paper)


def first_page(pages: str | None) -> str | None:
    """The first page of a page range as published ("123-130" -> "123", "e1002" -> "e1002")."""
    if pages is None:
        return None
    first = _PAGE_SPLIT.split(pages.strip(), maxsplit=1)[0].strip()
    return first or None


def fold(value: str | None) -> str | None:
    """A volume or page as the (volume, first page) index holds it: trimmed, lower-cased."""
    if value is None:
        return None
    return value.strip().lower() or None


def event_row(seq: int, type_: str, observed_at: str, observed_us: int, data: bytes | str) -> Row | None:
    """The catalogue row a stored event gives, or None for any other event type."""
    if type_ == WORK:
        w = _WORK_DATA.decode(data)
        names = [a.family or a.given or "" for a in w.authors]
        page = first_page(w.pages)
        return Row(
            "doi:" + w.doi,
            seq,
            observed_at,
            observed_us,
            w.source,
            w.doi,
            w.arxiv_id,
            doi_key(w.doi),
            arxiv_key(w.arxiv_id),
            w.title,
            json.dumps([n for n in names if n], ensure_ascii=False),
            w.container_title,
            w.year,
            w.volume,
            w.issue,
            page,
            w.type,
            fold(w.volume),
            fold(page),
            _search_text(w.title, names, w.container_title),
            seq,
        )
    if type_ == PAPER:
        p = _PAPER_DATA.decode(data)
        year = int(p.submitted_at[:4]) if p.submitted_at[:4].isdigit() else None
        return Row(
            "arxiv:" + p.arxiv_id,
            seq,
            observed_at,
            observed_us,
            "arxiv",
            None,
            p.arxiv_id,
            None,
            arxiv_key(p.arxiv_id),
            p.title,
            "[]",
            None,
            year,
            None,
            None,
            None,
            None,
            None,
            None,
            _search_text(p.title, [], None),
            seq,
        )
    return None


def latest_rows(rows: Sequence[Row]) -> list[Row]:
    """Of rows in seq order, the latest per identity (greatest observed instant, ties to the later seq),
    each with the least first_seq of its identity's rows."""
    best: dict[str, Row] = {}
    for r in rows:
        cur = best.get(r.ident)
        if cur is None:
            best[r.ident] = r
        elif (r.observed_us, r.seq) > (cur.observed_us, cur.seq):
            best[r.ident] = r._replace(first_seq=cur.first_seq)
    return list(best.values())


def _search_text(title: str | None, names: Sequence[str], container: str | None) -> str:
    # its words alone, lower-cased, a space apart: FTS5's tokenizer and PostgreSQL's parser then read
    # the same words (the parser keeps "IEEE/CVF" or "node.js" whole, as a path or a host name); each
    # part cut to its share, so no one work holds more than a few hundred words of the index
    words = _words(title, TITLE_WORDS)
    for name in names[:NAMES]:
        words += _words(name, NAME_WORDS)
    words += _words(container, CONTAINER_WORDS)
    return " ".join(words)


def _words(text: str | None, most: int) -> list[str]:
    """The first `most` words of a text, lower-cased (read no further than they reach)."""
    if not text:
        return []
    found = []
    for m in _WORD.finditer(text.lower()):
        found.append(m.group())
        if len(found) == most:
            break
    return found


def search_tokens(text: str) -> list[str]:
    """The words a catalogue search looks for in `text` (any of them): lower-cased letters and digits,
    a word broken by a hyphen at a line's end joined again, stop words, single letters and bare numbers
    dropped, each once, at most MAX_TOKENS of them (the longest, in the text's order)."""
    words = _WORD.findall(_BROKEN.sub("", text.lower()))
    seen = list(dict.fromkeys(w for w in words if len(w) > 1 and not w.isdigit() and w not in STOP_WORDS))
    if len(seen) <= MAX_TOKENS:
        return seen
    keep = set(sorted(seen, key=lambda w: -len(w))[:MAX_TOKENS])
    return [w for w in seen if w in keep]


def rarest(words: Sequence[str], docs: dict[str, int], keep: int = RAREST) -> list[str]:
    """Of a text's words, the `keep` held by the fewest works (and by at least one), in the text's
    order: a rare word (a name, a technical term) selects the work, a common one only costs time (a
    search ranks every work it selects), and one no work holds (noise, a word glued to the next)
    selects nothing. Words held by more than COMMON works are left out too while two rarer remain."""
    held = [w for w in words if docs.get(w, 0) > 0]
    chosen = set(sorted(held, key=lambda w: (docs[w], -len(w), w))[:keep])
    rare = {w for w in chosen if docs[w] <= COMMON}
    if len(rare) >= 2:
        chosen = rare
    return [w for w in held if w in chosen]


def looked_for(words: Sequence[str], docs: dict[str, int]) -> list[str]:
    """The words a search looks for in a text: its `rarest`, less any held by more than POSTINGS works
    (it selects nothing worth reading); none when one is left and more than COMMON works hold it (a
    common word alone names no work, and ranking its many works by seq alone is costly and arbitrary)."""
    chosen = [w for w in rarest(words, docs) if docs[w] <= POSTINGS]
    if len(chosen) == 1 and docs[chosen[0]] > COMMON:
        return []
    return chosen


def reads_whole(words: Sequence[str], docs: dict[str, int]) -> bool:
    """Whether a search for these words reads each one's works whole (WHOLE)."""
    return sum(docs.get(w, 0) for w in words) <= WHOLE


def needed(words: Sequence[str], docs: dict[str, int]) -> tuple[int, str | None]:
    """What a work must hold of a text's rarest words to be a candidate: how many of them, and which
    one in any case (None: any). Any one when together they are held by at most MATCH_BUDGET works;
    else the one rare word with any other, or any two, so common words never select most of the
    catalogue."""
    if len(words) < 2 or sum(docs.get(w, 0) for w in words) <= MATCH_BUDGET:
        return 1, None
    rare = [w for w in words if docs.get(w, 0) <= COMMON]
    return 2, rare[0] if len(rare) == 1 else None


def _query(words: Sequence[str], docs: dict[str, int], quoted: list[str], either: str, both: str) -> str:
    least, must = needed(words, docs)
    if least == 1:
        return either.join(quoted)
    if must is not None:  # the one rare word, with any of the common ones
        rare = quoted[list(words).index(must)]
        return f"{rare}{both}({either.join(q for q in quoted if q != rare)})"
    return either.join(f"({a}{both}{b})" for i, a in enumerate(quoted) for b in quoted[i + 1 :])


def weight(docs: int, total: int) -> int:
    """How much a word says of a work that holds it (an integer, so sums are exact): its rarity,
    1000 times ln((total + 1) / docs)."""
    return max(1, round(1000 * math.log((total + 1) / max(docs, 1))))


def fts_query(words: Sequence[str], docs: dict[str, int]) -> str:
    """What `needed` asks, as an FTS5 query (`sqlite-utils search`, a person reading a ledger)."""
    return _query(words, docs, [f'"{w}"' for w in words], " OR ", " AND ")


def ts_query(words: Sequence[str], docs: dict[str, int]) -> str:
    """The same query for PostgreSQL's to_tsquery('simple', ...)."""
    return _query(words, docs, [f"'{w}'" for w in words], " | ", " & ")


def tiers(
    words: Sequence[str], docs: dict[str, int], total: int, postings: dict[str, frozenset[int]]
) -> list[set[int]]:
    """The works that hold what `needed` asks of a text's rarest words, in tiers of equal weight (the
    summed weight of the distinct words a work holds), heaviest first. `postings` gives the works
    (by any id the backend keeps) holding each word. The ranking's definition, from every word's works
    at once: the tests hold `Ranking`, which asks the index a tier at a time, to it."""
    least, must = needed(words, docs)
    ws = list(dict.fromkeys(w for w in words if w in postings))
    by_points: dict[int, set[int]] = {}
    # the works holding exactly each set of the words: at most 2**RAREST sets, each a few set operations
    for n in range(1, 1 << len(ws)):
        subset = [w for i, w in enumerate(ws) if n >> i & 1]
        if len(subset) < least or (must is not None and must not in subset):
            continue
        exact = set(postings[subset[0]]).intersection(*(postings[w] for w in subset[1:]))
        for i, w in enumerate(ws):
            if exact and not n >> i & 1:
                exact -= postings[w]
        if exact:
            points = sum(weight(docs.get(w, 0), total) for w in subset)
            by_points.setdefault(points, set()).update(exact)
    return [by_points[p] for p in sorted(by_points, reverse=True)]


def subsets(words: Sequence[str], docs: dict[str, int], total: int) -> list[tuple[int, tuple[str, ...]]]:
    """The sets of a text's words a work may hold that `needed` allows, each with its points (the summed
    weight of its words), heaviest first (ties by the words)."""
    least, must = needed(words, docs)
    ws = sorted(set(words))
    points = [weight(docs.get(w, 0), total) for w in ws]
    out = []
    for n in range(1, 1 << len(ws)):
        held = [i for i in range(len(ws)) if n >> i & 1]
        s = tuple(ws[i] for i in held)
        if len(s) >= least and (must is None or must in s):
            out.append((sum(points[i] for i in held), s))
    return sorted(out, key=lambda x: (-x[0], x[1]))


class Ranking:
    """The tiers of one text (those `tiers` gives) as far as a cut to `limit` reaches, found heaviest
    first: the index is asked, a tier at a time, for the `limit` works of least seq holding all the
    words of each set of the tier, so it intersects common words itself, no word's works are read
    whole, and a search stops once it holds `limit` works. A work holding a larger set was met in it
    first (a larger set weighs more), so a tier is what its sets' asks give less the works met; an ask
    cut at `limit` brings the search to its limit, and holds the least seqs the cut takes from it."""

    def __init__(self, words: Sequence[str], docs: dict[str, int], total: int, limit: int) -> None:
        self._groups: list[list[tuple[str, ...]]] = []
        last = None
        for points, s in subsets(words, docs, total):
            if points != last:
                self._groups.append([])
                last = points
            self._groups[-1].append(s)
        self._groups.reverse()  # popped from the end: heaviest first
        self._limit = limit
        self._seen: set[int] = set()
        self.tiers: list[set[int]] = []

    def asks(self) -> list[tuple[str, ...]]:
        """The word sets of the next tier, or none when the tiers so far reach the limit."""
        if len(self._seen) >= self._limit or not self._groups:
            return []
        return self._groups[-1]

    def take(self, found: dict[tuple[str, ...], frozenset[int]]) -> None:
        """The next tier, from the works the index found holding each of `asks()`."""
        tier = set().union(*(found[s] for s in self._groups.pop())) - self._seen
        if tier:
            self.tiers.append(tier)
            self._seen |= tier


def reached(ranked: list[set[int]], limit: int) -> list[set[int]]:
    """The tiers the first `limit` works come from (the last of them perhaps in part)."""
    out: list[set[int]] = []
    n = 0
    for tier in ranked:
        if n >= limit:
            break
        out.append(tier)
        n += len(tier)
    return out


def cut(ranked: list[set[int]], limit: int, seq: dict[int, int] | None = None) -> list[int]:
    """The first `limit` works of the tiers, each tier by seq (`seq` maps a work's id to its seq; none:
    the ids are the seqs): the order both backends give."""
    out: list[int] = []
    for tier in reached(ranked, limit):
        out += heapq.nsmallest(limit - len(out), tier, key=None if seq is None else seq.__getitem__)
    return out


def index_terms(search_text: str) -> set[str]:
    """The words of a row's search text that catalogue_terms counts: those a search may look for."""
    return {
        w
        for w in _WORD.findall(search_text.lower())
        if len(w) > 1 and not w.isdigit() and w not in STOP_WORDS
    }


class _WorkColumns(NamedTuple):
    """The columns WORK_COLUMNS selects, as stored: the authors a JSON list."""

    seq: int
    observed_at: str
    source: str
    type: str | None
    doi: str | None
    arxiv_id: str | None
    title: str | None
    authors: str
    container: str | None
    year: int | None
    volume: str | None
    issue: str | None
    first_page: str | None
    first_seq: int | None


def to_work(row: SqlRow) -> CatalogueWork:
    """A CatalogueWork from the columns WORK_COLUMNS selects."""
    c = _WorkColumns._make(row)
    return CatalogueWork(
        int(c.seq),
        c.observed_at,
        c.source,
        c.type,
        c.doi,
        c.arxiv_id,
        c.title,
        tuple(json.loads(c.authors)),
        c.container,
        None if c.year is None else int(c.year),
        c.volume,
        c.issue,
        c.first_page,
        None if c.first_seq is None else int(c.first_seq),
    )
