"""DOIs and arXiv ids as references print them: found in a reference's text and fields, read into the
keys the catalogue is looked up by, or named malformed when an identifier-shaped string cannot be read."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import NamedTuple

from ledger.model.doi import ARXIV_DOI_PREFIX, arxiv_key, doi_key


class Ident(NamedTuple):
    """One identifier read from a reference: its kind, its canonical value, and the catalogue keys it may
    name, the likeliest reading first (a DOI broken at a line end is read with and without the hyphen)."""

    kind: str  # "doi" or "arxiv"
    value: str
    keys: tuple[str, ...]


class Found(NamedTuple):
    """What a reference's identifiers are: those read, the identifier-shaped strings that could not be
    read, and the text with every identifier-shaped string removed (left for text matching)."""

    idents: list[Ident]
    malformed: list[str]
    rest: str


# Runs of spaces below are taken whole (possessive `*+`, `++`): what follows a run is never a space, so
# giving some back cannot make a match, and a pattern that may give them back to each of two runs in
# turn tries every split of them.
# a line break (and the spaces around it) inside an identifier, as a PDF's text extraction leaves it
_BREAK = r"[ \t]*+\r?\n[ \t]*+"
# the same, found in a string: from the start of its spaces only (a start inside them fails the same way)
_BREAK_IN = re.compile(r"(?<![ \t])" + _BREAK + r"|\r?\n[ \t]*+")
_DOI_PREFIX = re.compile(
    r"(?i)(?:\b(?:https?://)?(?:dx\.)?doi\.org/|\bdoi\s*+:|\bdoi\s++(?=10\.))[ \t]*+(?:\r?\n[ \t]*+)?"
)
_DOI_START = re.compile(r"(?<![\w.])10\.\d{4,9}/")
_DOI = re.compile(r"(?<![\w.])10\.\d{4,9}/\S+")
_TOKEN = re.compile(r"\S+")
# the lines a DOI broken at a line's end goes on with, read from where its first line ends
_CONTINUATION = re.compile(r"(?<![ \t])(?:" + _BREAK + r"\S+)+")
_SPACE = re.compile(r"\s")
_ARXIV_LABEL = re.compile(r"(?i)^\s*+arxiv\s*+:\s*+")
# identifiers read from one reference at most: a reference names one work, and each identifier read
# costs a look at the rest of its string
MAX_IDENTIFIERS = 16
_TRAIL = ".,;:'\"*>»”’"
# arXiv: a prefix that promises an id, an id of either scheme, the OCR confusions of its digits
_ARXIV_PREFIX = re.compile(
    r"(?i)(?:(?:\bhttps?://)?(?:www\.|export\.)?\barxiv\.org/(?:abs|pdf)/\s*+"
    r"|\barxiv\s*+(?:preprint\s*+)?[:.]?[ \t]*+(?:\r?\n[ \t]*+)?|\bcorr\s++abs/|(?<![\w/])abs/)"
    # what follows is id-shaped: digits, a dot, digits; an old archive's name and a slash; a long number.
    # A name of at most ARCHIVE_NAME letters: prefixes glued in a row ("arxiv-arxiv-...") would each
    # read a longer run to its end
    r"(?=[0-9OolIS]{4}\s?\.\s?[0-9OolIS](?:\s?[0-9OolIS]){2}|[a-z-]{1,64}+(?:\.[A-Za-z]{2})?/\d|\d{5})"
)
_ARCHIVES = (
    "astro-ph|cond-mat|gr-qc|hep-ex|hep-lat|hep-ph|hep-th|math-ph|nlin|nucl-ex|nucl-th|physics|quant-ph|"
    "math|cs|q-bio|q-fin|stat|chao-dyn|solv-int|patt-sol|adap-org|comp-gas|alg-geom|dg-ga|funct-an|q-alg|"
    "chem-ph|mtrl-th|supr-con|acc-phys|ao-sci|atom-ph|bayes-an|plasm-ph|cmp-lg"
)
_OLD = re.compile(r"(?i)(?<![\w-])(" + _ARCHIVES + r")(\.[A-Za-z]{2})?/[ \t]?(\d{7})(v\d+)?(?!\d)")
_NEW_RUN = re.compile(r"[0-9OolIS]{4}\s?[.,]\s?(?:[0-9OolIS]\s?){4,5}(?![0-9])(?:v\d+)?")
_NO_DOT = re.compile(r"[0-9OolIS]{8,9}(?![0-9])(?:v\d+)?")
_NEW = re.compile(r"(\d{2})(\d{2})\.(\d{4,5})(?:v\d+)?")
_OCR = str.maketrans({"O": "0", "o": "0", "l": "1", "I": "1", "S": "5"})
_URL = re.compile(r"(?i)\b(?:https?://|www\.)\S+")


def _strip(doi: str) -> str:
    """A DOI without the punctuation a sentence or a bracket put after it."""
    end = len(doi.rstrip(_TRAIL))
    for close, open_ in ((")", "("), ("]", "["), ("}", "{")):
        # counted once, then kept: cutting the string and counting again per bracket is quadratic
        closes, opens = doi.count(close, 0, end), doi.count(open_, 0, end)
        while end and doi[end - 1] == close and closes > opens:
            end -= 1
            closes -= 1
            while end and doi[end - 1] in _TRAIL:
                end -= 1
    return doi[:end]


def read_arxiv(text: str) -> str | None:
    """The canonical arXiv id `text` begins with (OCR digits and stray spaces mended, version dropped),
    or None when it begins with none."""
    old = _OLD.match(text.strip())
    if old:
        return f"{old.group(1).lower()}{old.group(2) or ''}/{old.group(3)}"
    run = _NEW_RUN.match(text.strip()) or _NO_DOT.match(text.strip())
    if run is None:
        return None
    digits = _SPACE.sub("", run.group()).replace(",", ".").translate(_OCR)
    if "." not in digits:
        digits = digits[:4] + "." + digits[4:]  # the dot lost: "arXiv:190905126"
    m = _NEW.match(digits)
    if m is None:
        return None
    yy, mm, num = int(m.group(1)), int(m.group(2)), m.group(3)
    # the scheme's own rule: four digits after the dot until 2014, five since 2015
    if not 1 <= mm <= 12 or len(num) != (5 if (yy, mm) >= (15, 1) else 4):
        return None
    return f"{m.group(1)}{m.group(2)}.{num}"


def _doi_readings(raw: str) -> list[str]:
    """The DOIs a string broken across lines may be: joined as printed, then without the break's hyphen."""
    parts = _BREAK_IN.split(raw)
    joined = _strip("".join(parts))
    out = [joined]
    if len(parts) > 1:
        last = len(parts) - 1
        out.append(
            _strip("".join(p[:-1] if p.endswith("-") and i < last else p for i, p in enumerate(parts)))
        )
        out.append(_strip(parts[0]))
    return list(dict.fromkeys(d for d in out if _DOI.fullmatch(d)))


def _ident_of_doi(dois: list[str]) -> Ident:
    keys = tuple(dict.fromkeys(k for d in dois if (k := doi_key(d)) is not None))
    first = keys[0]
    if first.startswith(ARXIV_DOI_PREFIX):
        arxiv = read_arxiv(first[len(ARXIV_DOI_PREFIX) :])
        if arxiv is not None:
            return Ident("arxiv", arxiv, (arxiv_key(arxiv) or first,))
    return Ident("doi", first, keys)


def _continued_at(text: str, at: int) -> int | None:
    """Where a DOI broken across lines that begins at `at` ends, or None when none begins there: its
    first line ends in a hyphen, a slash, a dot or an underscore, and more follows on the next."""
    head = _DOI_START.match(text, at)
    if head is None:
        return None
    line = _TOKEN.match(text, at)
    end = line.end() if line is not None else at
    if end <= head.end() or text[end - 1] not in "-/._":
        return None
    more = _CONTINUATION.match(text, end)
    return None if more is None else more.end()


def _continued(text: str) -> Iterator[tuple[int, int]]:
    """Every DOI broken across lines in `text`, in order, none inside another. Only the first place
    a DOI may begin in a word is tried: a later one ends with the same word and goes on the same way,
    so it is broken across lines when the first is, and reading the word again from each is quadratic."""
    after = 0
    for word in _TOKEN.finditer(text):
        if word.start() < after:
            continue
        head = _DOI_START.search(text, word.start(), word.end())
        end = None if head is None else _continued_at(text, head.start())
        if head is not None and end is not None:
            yield head.start(), end
            after = end


def find(text: str) -> Found:
    """Every identifier in `text`, the malformed ones, and the text without them."""
    idents: list[Ident] = []
    malformed: list[str] = []
    spans: list[tuple[int, int]] = []

    def taken(at: int) -> bool:
        return any(a <= at < b for a, b in spans)

    # a pattern is tried only on text holding a word it needs (most references hold none): on ASCII
    # text, where its case-blind letters are the lower-cased ones
    low = text.lower() if text.isascii() else None

    def may(*needed: str) -> bool:
        return low is None or any(n in low for n in needed)

    for m in _DOI_PREFIX.finditer(text) if may("doi") else ():
        if len(spans) >= MAX_IDENTIFIERS:
            break
        at = m.end()
        end = _continued_at(text, at)
        if end is None:
            doi = _DOI.match(text, at)
            end = None if doi is None else doi.end()
        readings = _doi_readings(text[at:end]) if end is not None else []
        if readings:
            idents.append(_ident_of_doi(readings))
            spans.append((m.start(), end))  # type: ignore[arg-type]
        else:
            # a DOI was promised and what follows is not one: "doi: 10.1000" or "doi.org/abc"
            bad = _TOKEN.match(text, at)
            malformed.append((m.group() + (bad.group() if bad else "")).strip())
            spans.append((m.start(), bad.end() if bad else at))
    # a DOI broken across a line first, so its first line is not read as a DOI of its own
    found = (_continued(text), ((m.start(), m.end()) for m in _DOI.finditer(text))) if "10." in text else ()
    for matches in found:
        for a, b in matches:
            if len(spans) >= MAX_IDENTIFIERS:
                break
            if not taken(a):
                readings = _doi_readings(text[a:b])
                if readings:
                    idents.append(_ident_of_doi(readings))
                    spans.append((a, b))
    for m in _ARXIV_PREFIX.finditer(text) if may("arxiv", "abs/") else ():
        if len(spans) >= MAX_IDENTIFIERS:
            break
        if taken(m.start()):
            continue
        rest = text[m.end() : m.end() + 40]
        arxiv = read_arxiv(rest)
        if arxiv is not None:
            lead = len(rest) - len(rest.lstrip())
            shape = _OLD.match(rest.strip()) or _NEW_RUN.match(rest.strip()) or _NO_DOT.match(rest.strip())
            end = m.end() + lead + (shape.end() if shape else 0)
            idents.append(Ident("arxiv", arxiv, (arxiv_key(arxiv) or arxiv,)))
        else:
            bad = _TOKEN.match(rest, len(rest) - len(rest.lstrip()))
            end = m.end() + (bad.end() if bad else 0)
            malformed.append(text[m.start() : end].strip())
        spans.append((m.start(), end))
    for m in _OLD.finditer(text) if "/" in text else ():
        if len(spans) >= MAX_IDENTIFIERS:
            break
        if not taken(m.start()):
            arxiv = read_arxiv(m.group())
            if arxiv is not None:
                idents.append(Ident("arxiv", arxiv, (arxiv_key(arxiv) or arxiv,)))
                spans.append(m.span())
    rest = text
    for a, b in sorted(spans, reverse=True):
        rest = rest[:a] + " " + rest[b:]
    return Found(_dedupe(idents), malformed, _URL.sub(" ", rest) if may("http", "www.") else rest)


def _dedupe(idents: list[Ident]) -> list[Ident]:
    seen: set[str] = set()
    out = []
    for i in idents:
        if i.keys[0] not in seen:
            seen.add(i.keys[0])
            out.append(i)
    return out


def from_fields(doi: str | None, arxiv_ids: list[str | None]) -> list[Ident]:
    """The identifiers a reference's own fields carry (its DOI, the cited work's DOI and arXiv ids)."""
    out: list[Ident] = []
    if doi and doi.strip():
        found = find(doi if "10." in doi else "doi:" + doi)
        out.extend(found.idents)
    for a in arxiv_ids:
        if a and a.strip():
            arxiv = read_arxiv(_ARXIV_LABEL.sub("", a))
            if arxiv is not None:
                out.append(Ident("arxiv", arxiv, (arxiv_key(arxiv) or arxiv,)))
    return out
