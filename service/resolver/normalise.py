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
_NUMBERISH = re.compile(r"(?<![A-Za-z0-9])[0-9OoDlIi|SB]*[0-9][0-9OoDlIi|SB]*(?![A-Za-z0-9])")


def ocr_digits(text: str) -> str:
    """`text` with letters read as digits inside number-like tokens (`2O19` -> 2019, `l23` -> 123)."""
    return _NUMBERISH.sub(lambda m: m.group().translate(_DIGITISH), text)
