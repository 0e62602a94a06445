"""How much of a catalogue work's metadata a reference shows (SBMV's validation, field by field), with
the guards near-duplicate works need: notices, parts, preprints."""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache
from typing import NamedTuple

from rapidfuzz import fuzz, process

from ledger.model.doi import ARXIV_DOI_PREFIX, arxiv_key, doi_key
from ledger.model.works import CatalogueWork
from service.resolver.normalise import NOT_WORD, compact, fold, spaced, words
from service.resolver.parse import Parsed

# points a field earns when the reference shows it (tuned on the evaluation set's tune split)
TITLE = 45
TITLE_START = 34  # the beginning of a long title, where the reference is cut short inside it
LONG_TITLE = 12  # a long title found whole is rarely another work's
FIRST_AUTHOR = 15
AUTHORS = 6
YEAR = 10
YEAR_NEAR = 4  # a preprint's year and its journal version's often differ by one
VOLUME = 8
ISSUE = 3
PAGE = 12
CONTAINER = 6
# what a field costs when the reference shows a different value
WRONG_YEAR = 40  # two years or more apart: the title printed again is another work (an edition, a reprint)
WRONG_KIND = 100  # a notice for the work it corrects, Part I for Part II: never the same work
WRONG_VENUE = 15  # a preprint for its journal version, or the reverse
WRONG_PAGE = 8
WRONG_NUMBERS = 50  # a work whose volume and first page are neither among the numbers a reference prints
NAMED_PART = 1
WRONG_PART = 50  # pages of a work that has none: a part of it (a chapter, a paper), never the whole
WRONG_TITLE = 30  # the reference shows a title, and it is not this work's
UNEXPLAINED = 4  # words the work's authors and journal leave unexplained: the reference's own title
TITLE_WORDS = 36  # every word of a title of TITLE_BAG words or more, printed together in another order
TITLE_BAG = 4  # distinct words (of three letters or more) a title needs for its words alone to count
NEAR_WORD = 80  # how alike (0-100) a misprinted word must be to a word of the work's container or names
NAME_CLOSE = 75  # how alike a misprinted name must be to the work's author's
CONTAINER_CLOSE = 90  # how alike a container's name, misprinted or split at random, must be where printed

# a notice about another work: its title begins so ("Correction to: ...", "Retraction note: ...")
_NOTICE = re.compile(
    r"^\s*(?:(?:author|publisher|editorial|editor's)\s+)?(?:correction|erratum|errata|corrigendum|retraction|retracted|addendum|withdrawal|withdrawn|"
    r"(?:editorial\s+)?expression\s+of\s+concern|retraction\s+note)\b"
)
_NOTICE_IN = re.compile(
    r"(?:correction|erratum|corrigendum|retraction|addendum)\s*:|"  # glued to the word before it too
    r"\b(?:(?:correction|erratum|corrigendum|retraction|addendum|withdrawal)\s*(?:note\s*)?(?:to|for|on|:)|"
    r"retraction\s+note|retracted\s+article|expression\s+of\s+concern)"
)
# a word each notice pattern holds: text without any of them holds no notice
_NOTICE_WORDS = (
    "correction", "erratum", "errata", "corrigendum", "retract", "addendum", "withdraw", "expression",
)  # fmt: skip


def _notice_in(low: str) -> bool:
    """Whether folded reference text names a notice about another work (_NOTICE_IN or _NOTICE)."""
    if not any(w in low for w in _NOTICE_WORDS):
        return False
    return bool(_NOTICE_IN.search(low)) or bool(_NOTICE.match(low))


_PART = re.compile(
    r"\bpart\s+([ivx]{1,4}|[0-9]{1,2}|one|two|three|four|[a-d])\b"
    # a series' number printed alone between a title and its subtitle: "Foo. II. Bar", "Foo: III"
    r"|[.:]\s+(i{1,3}|iv|vi{0,3}|ix)\s*(?:[.:]|$)"
)
_PART_NUM = {
    "one": "1",
    "two": "2",
    "three": "3",
    "four": "4",
    "i": "1",
    "ii": "2",
    "iii": "3",
    "iv": "4",
    "v": "5",
    "vi": "6",
    "vii": "7",
    "viii": "8",
    "ix": "9",
    "x": "10",
    "a": "1",
    "b": "2",
    "c": "3",
    "d": "4",
}
_PREPRINT_WORDS = frozenset(
    {"arxiv", "preprint", "biorxiv", "medrxiv", "ssrn", "corr", "chemrxiv", "preprints"}
)
_PREPRINT_VENUE = re.compile(r"arxiv|biorxiv|medrxiv|ssrn|preprint|chemrxiv|research square")
_STOP = frozenset(
    {
        "of",
        "the",
        "and",
        "for",
        "on",
        "in",
        "de",
        "der",
        "und",
        "la",
        "le",
        "et",
        "a",
        "an",
        "des",
        "du",
        "di",
        "to",
        "&",
    }
)


def identity(w: CatalogueWork) -> str:
    """The key a work is one work by: an arXiv paper (or its arXiv DOI) by its id, others by their DOI."""
    if w.doi and not w.doi.lower().startswith(ARXIV_DOI_PREFIX):
        return doi_key(w.doi) or f"seq:{w.seq}"
    return arxiv_key(w.arxiv_id) or doi_key(w.doi) or f"seq:{w.seq}"


def _part(text: str) -> str | None:
    m = _PART.search(text)
    if m is None:
        return None
    n = m.group(1) or m.group(2)
    return _PART_NUM.get(n, n)


class Name(NamedTuple):
    """An author's name as a reference may print it."""

    spaced: str  # its words, spaced
    compact: str | None  # glued, when long enough (5 letters) to be told apart inside other words
    last: str | None  # its last word, when long enough (3 letters) to be a word of its own


@lru_cache(maxsize=1 << 16)
def _author(name: str) -> tuple[list[str], Name | None]:
    """A name's words, and the name as scoring looks for it (None: no word). Cached: names recur
    across works, as a catalogue's authors write many."""
    ws = NOT_WORD.sub(" ", fold(name)).split()
    if not ws:
        return ws, None
    cp = compact(ws)
    return ws, Name(spaced(ws), cp if len(cp) >= 5 else None, ws[-1] if len(ws[-1]) >= 3 else None)


class Cand(NamedTuple):
    """A catalogue work normalised once per batch."""

    work: CatalogueWork
    key: str
    title_spaced: str
    title_compact: str
    notice: bool
    part: str | None
    authors: list[Name]  # per author, in order
    container: list[str]  # the container's significant words
    abbreviations: list[frozenset[str]]  # per container word, its beginnings an ISO 4 abbreviation keeps
    preprint: bool
    volume: str | None
    issue: str | None
    page: str | None
    explains: frozenset[str]  # the words its authors and container account for in a reference
    own_numbers: frozenset[str]  # the numbers of its title and container ("Domains 19-20", "Vol. 3")
    in_container: bool  # its title is a proper piece of its container's name (an encyclopedia's entry)
    title_bag: frozenset[str]  # its title's distinct words of three letters or more, not stop words
    container_words: frozenset[str]
    title_length: int  # how many words its title has
    container_compact: str  # its container's words glued (for a name misprinted or split at random)
    names: tuple[str, ...]  # its container's words and its authors' name words, for a misprinted word


def _num(v: str | None) -> str | None:
    if not v:
        return None
    v = v.strip().lower()
    return (v.lstrip("0") or "0") if v.isdigit() else v or None


class _Venue(NamedTuple):
    words: list[str]  # its significant words
    abbreviations: list[frozenset[str]]
    explains: frozenset[str]  # every beginning of two letters or more of each word
    preprint: bool


@lru_cache(maxsize=1 << 12)
def _venue(container: str) -> _Venue:
    """A container's words as scoring reads them. Cached: a catalogue has few, each named by many works."""
    ws = [c for c in words(container) if c not in _STOP]
    return _Venue(
        ws,
        [frozenset(c[:n] for n in range(2, len(c))) for c in ws],
        frozenset(c[:n] for c in ws for n in range(2, len(c) + 1)),
        bool(_PREPRINT_VENUE.search(container.lower())),
    )


_NO_VENUE = _Venue([], [], frozenset(), False)
_DIGITS = re.compile(r"[0-9]+")
_YEARISH = re.compile(r"1[6-9][0-9]{2}|20[0-9]{2}")


@lru_cache(maxsize=1 << 16)
def prepare(w: CatalogueWork) -> Cand:
    """`w` normalised for scoring (kept: a catalogue event's seq names the same data for good, so a
    process reuses the work across batches)."""
    low = fold(w.title or "")
    tw = NOT_WORD.sub(" ", low).split()
    named = [_author(a) for a in w.authors]
    authors = [n for _, n in named[:8] if n is not None]
    venue = _venue(w.container) if w.container else _NO_VENUE
    preprint = (
        w.source == "arxiv"
        or w.type == "posted-content"
        or bool(w.doi and w.doi.lower().startswith(ARXIV_DOI_PREFIX))
        or venue.preprint
    )
    page = w.first_page.split("-")[0] if w.first_page else None
    explains = venue.explains.union(*(ws for ws, _ in named))
    own = frozenset(n.lstrip("0") or "0" for n in _DIGITS.findall(f"{w.title or ''} {w.container or ''}"))
    title_cp = compact(tw)
    container_cp = compact(words(w.container)) if w.container else ""
    # a proper piece: a title that is the container's whole name (a journal's masthead) is its own
    in_container = bool(title_cp) and title_cp in container_cp and title_cp != container_cp
    bag = frozenset(t for t in tw if len(t) > 2 and not t.isdigit() and t not in _STOP)
    names = tuple(dict.fromkeys(x for x in [*venue.words, *(x for ws, _ in named for x in ws)] if len(x) > 3))
    return Cand(
        w, identity(w), spaced(tw) if tw else "", compact(tw), bool(_NOTICE.match(low)), _part(low), authors,
        venue.words, venue.abbreviations, preprint, _num(w.volume), _num(w.issue), _num(page), explains,
        own, in_container, bag, frozenset(venue.words), len(tw), container_cp, names,
    )  # fmt: skip


class RefView(NamedTuple):
    """A reference read for matching, with what the guards ask of it."""

    p: Parsed
    wordset: frozenset[str]
    numbers: frozenset[str]
    notice: bool
    part: str | None
    preprint: bool
    substance: int  # words of three letters or more beyond boilerplate: could it show a title?
    content: tuple[str, ...]  # those words
    content_counts: dict[str, int]  # each of them, how many times
    # those after the first "et al" (all when there is none): the names before it are no title's words,
    # though a work whose catalogue entry names no authors cannot explain them
    unnamed_counts: dict[str, int]
    volume: str | None  # the volume and first page a structured reference states
    first_page: str | None
    cut: bool  # it ends without an ending's punctuation: truncated, perhaps inside its title


_BOILER = _PREPRINT_WORDS | {
    "doi",
    "https",
    "http",
    "org",
    "abs",
    "pdf",
    "available",
    "online",
    "url",
    "www",
    "accessed",
    "retrieved",
    "vol",
    "pp",
    "cs",
    "cl",
    "lg",
    "cv",
    "stat",
    "eprint",
    "and",
    "et",
    "al",
    "eds",
    "editor",
    "editors",
    "press",
    "university",
    "publisher",
    "elsevier",
    "springer",
    "wiley",
    "handbook",
    "textbook",
    "proc",
    "proceedings",
    "conf",
    "conference",
    "pages",
    "page",
    "issue",
    "volume",
    "edn",
    "edition",
    "chapter",
    "pub",
    "ed",
    "nd",
    "rev",
    "lett",
    "phys",
    "chem",
    "soc",
    "am",
    "ann",
    "int",
    "inf",
}


def view(p: Parsed, volume: str | None = None, first_page: str | None = None) -> RefView:
    """`p` with the sets and flags scoring reads; a structured reference's own volume and first page."""
    low = p.folded
    ws = frozenset(p.words)
    content = _content(p.words)
    counts = Counter(content)
    et_al = _ET_AL.search(low) if "et" in ws else None
    unnamed = counts if et_al is None else Counter(_content(NOT_WORD.sub(" ", low[et_al.end() :]).split()))
    return RefView(
        p, ws, frozenset(p.numbers), _notice_in(low), _part(low),
        bool(ws & _PREPRINT_WORDS), len(content), content, counts, unnamed, _num(volume), _num(first_page),
        p.text.rstrip()[-1:] not in ".)]\u201d\"'",
    )  # fmt: skip


_ET_AL = re.compile(r"\bet\s*al\b")


def _content(words_: list[str]) -> tuple[str, ...]:
    return tuple(w for w in words_ if len(w) > 2 and w.isalpha() and w not in _BOILER and w not in _STOP)


class Scored(NamedTuple):
    """One candidate's score against one reference, and why."""

    total: int
    title: float  # the title's points
    title_exact: bool  # the title found whole, word for word
    agreed: tuple[str, ...]
    disagreed: tuple[str, ...]
    cand: Cand


def name_in(r: RefView, name: Name) -> bool:
    """Whether the reference prints `name` (its last word, or whole, or glued)."""
    # the last word alone first: the cheapest test, and true whenever the whole name is
    if name.last is not None and name.last in r.wordset:
        return True
    if name.spaced in r.p.spaced:
        return True
    # glued or split at random ("vander Berg", "Mc Donald"): long names only, short ones are in every word
    return name.compact is not None and name.compact in r.p.compact


def name_near(r: RefView, name: Name) -> bool:
    """Whether the reference prints `name` misprinted: a word NAME_CLOSE alike to its last word, or the
    whole name glued or split at random alike where printed."""
    last = name.last
    if last is None or len(last) < 4:
        return False
    if process.extractOne(last, r.p.words, scorer=fuzz.ratio, score_cutoff=NAME_CLOSE) is not None:
        return True
    return len(last) >= 5 and fuzz.partial_ratio(last, r.p.compact, score_cutoff=NAME_CLOSE + 5) > 0


def _container_in(r: RefView, c: Cand) -> bool:
    words_ = c.container
    if not words_:
        return False
    if len(words_) == 1:
        return words_[0] in r.wordset
    found = 0
    ws = r.wordset
    for w, beginnings in zip(words_, c.abbreviations, strict=True):
        # an ISO 4 abbreviation keeps a word's beginning: "chem" for chemical, "soc" for society
        if w in ws or (w == "journal" and "j" in ws) or not beginnings.isdisjoint(ws):
            found += 1
    if found >= 2 and found * 4 >= len(words_) * 3:
        return True
    # a long name misprinted or split at random ("Journalof Paleontology", "Jeurnal of ..."): alike as
    # a whole where the reference prints it
    return len(c.container_compact) >= 12 and _close_in(c.container_compact, r.p.compact)


def _close_in(needle: str, text: str) -> bool:
    return fuzz.partial_ratio(needle, text, score_cutoff=CONTAINER_CLOSE) > 0


def _unexplained(r: RefView, c: Cand) -> bool:
    """Whether UNEXPLAINED or more of the reference's content words (counted as often as printed) are
    words `c`'s authors and container do not explain. Of a work that names no authors, the names of an
    author list ending "et al" are not asked: it cannot explain them, and they are no title's words."""
    if len(r.content) < UNEXPLAINED:
        return False
    counts = r.content_counts if c.authors else r.unnamed_counts
    missing = counts.keys() - c.explains
    if sum(counts[w] for w in missing) < UNEXPLAINED:
        return False
    # a word misprinted ("Jeurnal") or a piece of one split at random ("Sympos iumon") is the work's own
    # container or names printed with damage, not a title of the reference's own
    found = 0
    for w in missing:
        if not _misprinted(w, c):
            found += counts[w]
            if found >= UNEXPLAINED:
                return True
    return False


def unexplained_words(r: RefView, c: Cand) -> list[str]:
    """The reference's content words that `c`'s authors and container do not explain, even misprinted."""
    return [w for w in r.content_counts.keys() - c.explains if not _misprinted(w, c)]


def _misprinted(w: str, c: Cand) -> bool:
    """Whether `w` is a piece of `c`'s container glued, or close to one of its container or name words."""
    if len(w) >= 4 and w in c.container_compact:
        return True
    return process.extractOne(w, c.names, scorer=fuzz.ratio, score_cutoff=NEAR_WORD) is not None


def title_words(r: RefView, c: Cand) -> bool:
    """Whether the reference prints every word of `c`'s title (TITLE_BAG distinct words or more) together,
    in whatever order: a title scrambled or reordered. A damaged reference may lose a word in five."""
    bag = c.title_bag
    if len(bag) < TITLE_BAG:
        return False
    lost = len(bag) // 5
    found = bag & r.wordset
    if len(bag) - len(found) > lost or len(found - c.container_words) < 2:
        # too many lost; or what is found is the work's container's name (a book's), which every chapter
        # of it shares, not this title
        return False
    # the words printed together: a window no longer than the title (and what was lost) holds them all
    at = sorted((i, w) for i, w in enumerate(r.p.words) if w in found)
    span = c.title_length + lost + 2
    need = len(found)
    seen: Counter[str] = Counter()
    lo = 0
    for i, w in at:
        seen[w] += 1
        while at[lo][0] <= i - span:
            left = at[lo][1]
            seen[left] -= 1
            if not seen[left]:
                del seen[left]
            lo += 1
        if len(seen) == need:
            return True
    return False


def title_similarity(r: RefView, c: Cand) -> tuple[float, bool]:
    """How well `c`'s title is found in the reference (0-100), and whether it is found word for word."""
    if not c.title_compact:
        return 0.0, False
    if c.title_spaced in r.p.spaced:
        return 100.0, True
    if c.title_compact in r.p.compact:
        return 99.0, False
    if len(r.p.compact) < len(c.title_compact):
        # the reference holds less than the title: at best a fragment of it
        return fuzz.ratio(c.title_compact, r.p.compact, score_cutoff=80), False
    return fuzz.partial_ratio(c.title_compact, r.p.compact, score_cutoff=80), False


def _title_start(r: RefView, c: Cand) -> bool:
    """Whether the reference, cut short, ends with the beginning of `c`'s title (35 letters or more)."""
    head = fuzz.partial_ratio_alignment(c.title_compact[:24], r.p.compact, score_cutoff=88)
    if head is None:
        return False
    tail = r.p.compact[head.dest_start :]
    return 35 <= len(tail) < len(c.title_compact) and fuzz.ratio(c.title_compact[: len(tail)], tail) >= 92


_WORD_AT = re.compile(r"[0-9a-z]+")


def title_continues(r: RefView, c: Cand) -> bool:
    """Whether the reference's title goes on where `c`'s ends, with no punctuation between: a longer
    title that begins with this one (the work's series sibling, or a longer work of the same words)."""
    if not c.title_compact:
        return False
    at = r.p.compact.find(c.title_compact)
    if at >= 0:
        end = at + len(c.title_compact)
    else:
        aligned = fuzz.partial_ratio_alignment(c.title_compact, r.p.compact)
        end = aligned.dest_end if aligned is not None else len(r.p.compact)
    folded = r.p.folded
    spans = [m.span() for m in _WORD_AT.finditer(folded)]
    n = 0
    for a, b in spans:
        n += b - a
        if n >= end:
            if n - end >= 3:
                return True  # the title ends inside a word: the next title word is glued to it
            rest = folded[b:].lstrip()
            following = _WORD_AT.match(rest)
            # a word straight after, not a year, a volume or a lone letter ("n.d.")
            return following is not None and following.group().isalpha() and len(following.group()) > 1
    return False


def _part_pages(r: RefView, c: Cand) -> bool:
    """Whether the reference prints pages: a range, or a lone number that is no year, not numbers of
    `c`'s own title or container."""
    if any(a not in c.own_numbers for a, _ in r.p.ranges):
        return True
    # a first page alone, as the title-less styles print it ("Title 129 (2002)")
    return any(n not in c.own_numbers and not _YEARISH.fullmatch(n) for n in r.p.numbers)


_NO_AUTHOR = frozenset({"anon", "anonymous"})  # what a style prints for a work without authors
_EDITED = frozenset({"ed", "eds", "editor", "editors", "edited", "hrsg", "herausgegeben", "dir"})


# the parts of a book deposited as works of their own, as a reference names them
_MATTER = re.compile(
    r"\b(?:front\s*matter|back\s*matter|(?:table\s+of\s+)?contents|index|copyright(?:\s+page)?|title\s+pages?|"
    r"preface|foreword|acknowledge?ments|list\s+of\s+(?:figures|tables|contributors|abbreviations)|"
    r"editorial\s+board|bibliography)\b"
)


_TOKEN = re.compile(r"[0-9A-Za-z|]+")
_SPLIT = re.compile(r"(?<![0-9A-Za-z|])(?=([0-9]+) ([0-9]+)(?![0-9A-Za-z|]))")


class _Damaged(NamedTuple):
    split: frozenset[str]  # digits printed with a space inside ("4 35": 435)
    glued: frozenset[str]  # digits with a letter glued to their end ("435D": 435)
    lettered: tuple[str, ...]  # tokens of digits and one letter (or "|") among them ("4D5")


@lru_cache(maxsize=1 << 12)
def _damaged(text: str) -> _Damaged:
    """The number-like tokens of a reference's text that may be a number damaged by one character
    (read once per reference: each of its candidates asks)."""
    split = frozenset(a + b for a, b in _SPLIT.findall(text))
    glued: set[str] = set()
    lettered: list[str] = []
    for t in _TOKEN.findall(text):
        digits = sum(ch.isdigit() for ch in t)
        if digits == len(t) - 1 and digits >= 2:
            if t[-1].isalpha():
                glued.add(t[:-1])
            lettered.append(t)
    return _Damaged(split, frozenset(glued), tuple(lettered))


def misprinted_number(text: str, number: str) -> bool:
    """Whether `text` prints `number` (two digits or more) damaged by one character: a space inside it
    ("4 35"), a letter glued to its end ("435D"), or, three digits or more, one digit printed as a
    letter (or "|", "4D5")."""
    if len(number) < 2 or not number.isdigit():
        return False
    d = _damaged(text)
    if number in d.split or number in d.glued:
        return True
    return len(number) >= 3 and any(
        len(t) == len(number) and sum(a != b for a, b in zip(t, number, strict=True)) == 1 for t in d.lettered
    )


def _book_matter(r: RefView, c: Cand) -> bool:
    """Whether the reference names one of a book's own parts its title does not."""
    found = _MATTER.search(r.p.spaced)
    return found is not None and found.group() not in c.title_spaced


def _named_part(r: RefView, c: Cand) -> bool:
    """Whether the reference names people (or a title of its own) a work without authors leaves
    unexplained, and no editors: a paper of this proceedings volume, a chapter of this edited book."""
    if c.authors or not r.wordset.isdisjoint(_EDITED):
        return False
    at = r.p.compact.find(c.title_compact) if c.title_compact else -1
    if at < 0 and c.title_compact:
        # the title misprinted: where it is printed alike
        aligned = fuzz.partial_ratio_alignment(c.title_compact, r.p.compact, score_cutoff=85)
        at = aligned.dest_start if aligned is not None else -1
    if at <= 0:
        return False
    # the words printed before the work's title: where a part's authors and its own title stand
    before: list[str] = []
    n = 0
    for w in r.p.words:
        n += len(w)
        if n > at:
            break
        before.append(w)
    own = set(c.title_spaced.split()) | c.explains | _NO_AUTHOR
    return len([w for w in _content(before) if w not in own]) >= NAMED_PART


def _name_only_in_title(r: RefView, c: Cand) -> bool:
    """Whether `c`'s first author's last name is a word of `c`'s title, printed no more often than the
    title prints it: the reference names a person its title is about, not its author."""
    last = c.authors[0].last
    if last is None or f" {last} " not in c.title_spaced:
        return False
    return r.p.words.count(last) <= c.title_spaced.split().count(last)


def first_author_leads(r: RefView, c: Cand) -> bool:
    """Whether `c`'s first author is printed before its other authors the reference names: a work whose
    first author the reference lists third is another deposit (two deposits of one paper, their authors
    in another order), or another paper of the team."""
    lead = c.authors[0] if c.authors else None
    if lead is None or lead.last is None:
        return True
    last = lead.last
    sp = r.p.spaced
    first = sp.find(f" {last} ")
    if first < 0:
        return True
    whole = sp.find(lead.spaced)  # the whole name: another author's name may be a word of it
    # the name glued or split at random ("S chiopu"), where a misprint hides its first printing
    key = lead.compact or (last if len(last) >= 4 else None)
    glued = r.p.compact.find(key) if key else -1
    for a in c.authors[1:6]:
        if not a.last or a.last == last:
            continue
        at = sp.find(f" {a.last} ")
        if at < 0 or at > first:
            continue
        if 0 <= whole <= at < whole + len(lead.spaced) - 1:
            continue  # a word of the first author's own name ("Ban-Leong Ooi" and Leong)
        if 0 <= glued <= at - sp.count(" ", 0, at + 1):
            continue
        return False
    return True


def score(r: RefView, c: Cand) -> Scored:
    """`c` scored against `r`: points for each field of `c` the reference shows, less the costs of the
    fields it shows otherwise."""
    agreed: list[str] = []
    disagreed: list[str] = []
    total = 0.0
    sim, exact = title_similarity(r, c)
    title = 0.0
    if sim >= 85 and c.in_container and r.p.compact.count(c.title_compact) < 2:
        # the title is a piece of the work's own container's name ("Cross-Cultural School Psychology" in
        # "Encyclopedia of Cross-Cultural School Psychology"), printed once: the reference shows the
        # container, which any entry of it shares, not this entry's title
        sim = 0.0
    if sim >= 85:
        length = min(1.0, len(c.title_compact) / 25)
        title = TITLE * length * (1.0 if sim >= 97 else 0.3 + 0.7 * (sim - 85) / 12)
        if sim >= 97 and len(c.title_compact) >= 40:
            title += LONG_TITLE
        agreed.append("title")
    if not title and r.cut and len(c.title_compact) >= 40 and _title_start(r, c):
        title = TITLE_START
        agreed.append("title_start")
    if not title and title_words(r, c):
        title = TITLE_WORDS * min(1.0, len(c.title_compact) / 25)
        agreed.append("title_words")
    total += title
    if not title and c.title_compact and _unexplained(r, c):
        total -= WRONG_TITLE
        disagreed.append("title")
    if c.notice != r.notice or (c.part is not None and r.part is not None and c.part != r.part):
        total -= WRONG_KIND
        disagreed.append("title")
    elif r.part is not None and c.part is None and title:
        # the reference names a part the work's title does not: another part of a series
        total -= WRONG_KIND / 2
        disagreed.append("title")
    if c.authors:
        if name_in(r, c.authors[0]) and not _name_only_in_title(r, c):
            total += FIRST_AUTHOR
            agreed.append("first_author")
        others = c.authors[1:6]
        if others:
            found = sum(1 for a in others if name_in(r, a))
            if found:
                total += AUTHORS * found / len(others)
                agreed.append("authors")
    year = c.work.year
    if year is not None and not r.p.years and misprinted_number(r.p.text, str(year)):
        total += YEAR
        agreed.append("year")
    elif year is not None and r.p.years:
        if year in r.p.years:
            total += YEAR
            agreed.append("year")
        elif year - 1 in r.p.years or year + 1 in r.p.years:
            total += YEAR_NEAR
            agreed.append("year_near")
        else:
            # years apart: another edition, another printing of the title, another item of a series
            total -= WRONG_YEAR
            disagreed.append("year")
    # a structured reference states its volume and first page: another value is another work
    for name, mine, theirs in (("volume", r.volume, c.volume), ("first_page", r.first_page, c.page)):
        if mine is not None and theirs is not None and mine != theirs:
            total -= WRONG_PAGE
            disagreed.append(name)
    if c.page is None and c.volume is None:
        if r.first_page is not None or _part_pages(r, c):
            # the reference prints pages of a work that has none: a chapter of this book, a paper of
            # this proceedings volume, not the whole
            total -= WRONG_PART
            disagreed.append("first_page")
        elif title and _book_matter(r, c):
            # it names a book's own matter ("Frontmatter", "Contents", "Index"): that part, not the book
            total -= WRONG_PART
            disagreed.append("title")
        elif title and _named_part(r, c):
            # it names authors a work without any lacks, before that work's title: the same part
            total -= WRONG_PART
            disagreed.append("first_author")
    vol_ok = c.volume is not None and c.volume in r.numbers
    if (
        not vol_ok
        and c.volume is not None
        and c.page is not None
        and c.page not in r.numbers
        and c.page not in r.wordset
        and r.volume is None
        and r.first_page is None
        and any(n not in c.own_numbers and not _YEARISH.fullmatch(n) for n in r.p.numbers)
    ):
        # the reference prints its numbers, and neither this work's volume nor its first page is among
        # them: another paper of the author, in another volume (or another venue's)
        total -= WRONG_NUMBERS
        disagreed.append("volume")
    if vol_ok:
        total += VOLUME if len(c.volume or "") > 1 else VOLUME / 2
        agreed.append("volume")
        if c.issue is not None and c.issue in r.numbers:
            total += ISSUE
            agreed.append("issue")
    if c.page is not None:
        # a number printed only as a range's end is another work's last page, not this one's first
        if (
            (c.page in r.numbers and c.page not in r.p.ends)
            or (not c.page.isdigit() and c.page in r.wordset)
            or misprinted_number(r.p.text, c.page)
        ):
            total += PAGE
            agreed.append("first_page")
        elif (r.p.pairs or r.p.ranges) and r.first_page is None:
            total -= WRONG_PAGE
            disagreed.append("first_page")
    if _container_in(r, c):
        total += CONTAINER
        agreed.append("container")
    if c.preprint and r.preprint:
        total += CONTAINER
        agreed.append("preprint")
    elif c.preprint != r.preprint and (
        r.preprint or r.p.pairs or r.volume or r.first_page or "container" in agreed
    ):
        total -= WRONG_VENUE
        disagreed.append("venue")
    return Scored(max(0, round(total)), title, exact, tuple(agreed), tuple(disagreed), c)
