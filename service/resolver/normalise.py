"""Reference and catalogue text in one comparable form: accents, case, punctuation, hyphenation."""

from __future__ import annotations

import re
import unicodedata

# letters NFKD does not decompose into a base letter and a mark
_FOLD = str.maketrans({"ø": "o", "ł": "l", "đ": "d", "ð": "d", "þ": "th", "æ": "ae", "œ": "oe", "ı": "i"})
# a word broken at a line end ("mod-\nels") or by a PDF's soft hyphen kept as "mod- els"
# (the hyphen first and the letter before it looked behind at: a search then skips to each hyphen)
_BROKEN = re.compile(r"[-\u00ad\u2010\u2011](?<=[^\W\d_].)\s+(?=[^\W\d_])")
NOT_WORD = re.compile(r"[^0-9a-z]+")
_MARKS = re.compile(r"[\u0300-\u036f]")


def fold(text: str) -> str:
    """`text` lowercased, accents dropped, broken words joined; punctuation kept."""
    if text.isascii():
        # most text: casefold is lower, and NFKD, the marks and _FOLD change nothing
        return _BROKEN.sub("", text.lower())
    low = unicodedata.normalize("NFKD", text.casefold())
    return _BROKEN.sub("", _MARKS.sub("", low)).translate(_FOLD)


def words(text: str) -> list[str]:
    """The words of `text` after `fold`, punctuation as separators."""
    return NOT_WORD.sub(" ", fold(text)).split()


def spaced(ws: list[str]) -> str:
    """Words joined with a space and one on each side, so `in` tests whole words."""
    return " " + " ".join(ws) + " "


def compact(ws: list[str]) -> str:
    """Words joined with nothing: what is left when words are glued or split at random."""
    return "".join(ws)


# OCR's usual confusions inside numbers: letters that look like digits
_DIGITISH = str.maketrans(
    {"O": "0", "o": "0", "D": "0", "l": "1", "I": "1", "i": "1", "|": "1", "S": "5", "B": "8"}
)
# the characters of a number-like token, and those of them that are letters or digits (`|` is not)
_NUMBERISH_RUN = re.compile(r"[0-9OoDlIi|SB]++")
_ALNUM = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
_ASCII_DIGIT = re.compile(r"[0-9]")


def numberish_spans(text: str) -> list[tuple[int, int]]:
    """The number-like tokens of `text`: runs of digits and the letters OCR reads for them, holding a
    digit, with no letter or digit on either side (a `|` is neither, so a token may end before one).

    A scan of each run, not one pattern: a pattern that takes a run and then looks for a digit in it
    gives the run back one character at a time from every place it may start, quadratic in a long run
    of `|` or `O`."""
    out: list[tuple[int, int]] = []
    n = len(text)
    for run in _NUMBERISH_RUN.finditer(text):
        start, end = run.span()
        # where a token may start: the run's first character when no letter or digit is before it,
        # else just after a `|` of the run
        at = start if start == 0 or text[start - 1] not in _ALNUM else text.find("|", start, end) + 1
        # a token ends at the run's end when no letter or digit follows it, else before its last `|`
        closed = end == n or text[end] not in _ALNUM
        last_bar = text.rfind("|", start, end)
        while 0 < at < end or at == start:
            digit = _ASCII_DIGIT.search(text, at, end)
            if digit is None:
                break  # no later start in the run holds a digit either
            stop = end if closed else last_bar
            if stop <= digit.start():
                break  # nor can a later start end after its digit
            out.append((at, stop))
            if stop == end:
                break
            # the next start: at the `|` the token ended before, if a `|` is before it, else after it
            at = stop if text[stop - 1] == "|" else stop + 1
    return out


def ocr_digits(text: str) -> str:
    """`text` with letters read as digits inside number-like tokens (`2O19` -> 2019, `l23` -> 123)."""
    parts: list[str] = []
    last = 0
    for a, b in numberish_spans(text):
        parts.append(text[last:a])
        parts.append(text[a:b].translate(_DIGITISH))
        last = b
    parts.append(text[last:])
    return "".join(parts)
