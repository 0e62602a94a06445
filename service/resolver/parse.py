"""Enough of an unstructured reference to validate candidates by: its words, its numbers (years,
volumes, issues, pages; OCR digits mended), the (volume, first page) pairs a title-less style prints."""

from __future__ import annotations

import re
from typing import NamedTuple

from service.resolver.normalise import NOT_WORD, compact, fold, ocr_digits, spaced, words

_NUMBER = re.compile(r"(?<![0-9])[0-9]+(?![0-9])")
# Every run of spaces or digits below is taken whole (possessive `*+`, `++`): what follows a run never
# begins with its own kind of character, so giving some back cannot make a match, and a pattern that
# could give some back to each of several runs in turn tries every split of them (cubic in a long run).
_RANGE = re.compile(r"(?<![0-9])([0-9]++)\s*+(?:[-\u2010-\u2015\u2212]|--)\s*+([0-9]++)(?![0-9])")
_YEAR = re.compile(r"(?<![0-9])(1[6-9][0-9]{2}|20[0-9]{2})(?![0-9])")
# "Accessed: 2025-06", "Retrieved May 3, 2024", "last visited ...": when a web page was read, not the work
_ACCESSED = re.compile(
    r"(?i)\b(?:accessed|retrieved|last\s++(?:accessed|visited)|viewed|visited|consulted)\b(?:\s++on)?[:\s]*+"
    r"[\w ,./-]{0,30}"
)
# a volume then its first page, the way title-less styles print them: "141, 1234", "95, 123 (2017)",
# "12 (3):123", "vol. 12, no. 3, pp. 123", "12(3), 123-130"
_VOL_PAGE = re.compile(
    r"(?i)(?<![0-9])([0-9]{1,5})\s*+(?:\(\s*+[0-9A-Za-z/-]{1,9}\s*+\))?\s*+(?:[,:]\s*+|(?<=\s))"
    r"(?:(?:no\.|issue)\s*+[0-9]{1,5}\s*+,\s*+)?(?:pp?\.\s*+)?([A-Za-z]?[0-9]{1,7})(?![0-9])"
)


# the number a list gives its entries, before the reference: "(1) ", "[12]", "3 A. Name", "1Title"
_MARKER = re.compile(r"^\s*+(?:\(\s*+[0-9]{1,3}\s*+\)|\[\s*+[0-9]{1,3}\s*+\]|[0-9]{1,3}(?=\s|[A-Z]))")


class Parsed(NamedTuple):
    """A reference read for matching."""

    text: str  # the text searched with: identifiers, URLs and access dates removed
    folded: str  # that text folded (normalise.fold)
    words: list[str]
    spaced: str  # " w1 w2 ... " for whole-word tests
    compact: str  # words glued, for titles broken or glued at random
    numbers: list[str]  # every number, OCR digits mended, abbreviated page ends expanded
    years: set[int]
    pairs: list[tuple[str, str]]  # (volume, first page) guesses, most likely first
    ends: frozenset[str]  # numbers printed only as the end of a range ("123-130": 130), never a first page
    ranges: list[tuple[str, str]]  # page ranges printed (first, last), first below last, not two years


def parse(text: str) -> Parsed:
    """`text` read for matching."""
    text = _ACCESSED.sub(" ", text)
    # a list's entry number is none of the work's numbers (not its first page)
    marker = _MARKER.match(text)
    if marker is not None:
        # nor a piece of its first word ("1Nature 129, 331", the number glued to the journal's name)
        text = text[marker.end() :]
    digits = ocr_digits(text)
    found = list(_NUMBER.finditer(digits))
    numbers = [m.group().lstrip("0") or "0" for m in found]
    end_at: set[int] = set()
    ranges: list[tuple[str, str]] = []
    for r in _RANGE.finditer(digits):
        first, last = r.group(1).lstrip("0"), r.group(2).lstrip("0")
        end_at.add(r.start(2))
        # "1425-37" is 1425-1437: the end printed short
        if len(last) < len(first):
            full = first[: len(first) - len(last)] + last
            # digit strings of one length compare as their numbers do: no int(), which refuses one of
            # more than 4,300 digits
            if full > first:
                numbers.append(full.lstrip("0"))
                last = full.lstrip("0")
        below = (len(first), first) < (len(last), last)
        if first and below and not (_YEAR.fullmatch(first) and _YEAR.fullmatch(last)):
            ranges.append((first, last))
    starts = {m.group().lstrip("0") or "0" for m in found if m.start() not in end_at}
    ends = frozenset(n for n in numbers if n not in starts)
    years = {int(y) for y in _YEAR.findall(digits)}
    pairs: list[tuple[str, str]] = []
    late: list[tuple[str, str]] = []
    for n in _NUMBER.finditer(digits):
        m = _VOL_PAGE.match(digits, n.start())
        if m is None:
            continue
        vol, page = m.group(1).lstrip("0"), m.group(2).lstrip("0").lower()
        # a volume that is a year is tried last (pages from 1600 to 2099 are as common as any)
        if vol and page:
            (late if _YEAR.fullmatch(vol) else pairs).append((vol, page))
    folded = fold(text)
    ws = NOT_WORD.sub(" ", folded).split()  # words(text), its text folded once
    return Parsed(
        text, folded, ws, spaced(ws), compact(ws), numbers, years, list(dict.fromkeys(pairs + late))[:4],
        ends, ranges,
    )  # fmt: skip


MIN_TEXT_CAP = 256  # a cap below this would cut ordinary references


class SettingError(ValueError):
    """A setting of the resolver's that cannot be read: the run's failure, never a reference's."""


def text_cap(raw: str | None, name: str, default: int) -> int:
    """The cap a setting gives (its default when unset), or SettingError naming the setting."""
    if raw is None or not raw.strip():
        return default
    try:
        value = int(raw.strip()) if len(raw.strip()) <= 12 else -1
    except ValueError:
        value = -1
    if value < MIN_TEXT_CAP:
        expected = f"a whole number of characters, at least {MIN_TEXT_CAP}"
        raise SettingError(f"{name} must be {expected}, got {raw!r}")
    return value


def fold_words(text: str | None) -> list[str]:
    """The words of a catalogue field (an empty list for none)."""
    return words(text) if text else []


__all__ = ["Parsed", "fold", "fold_words", "parse"]
