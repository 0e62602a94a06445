"""Content negotiation by the Accept header (RFC 9110 §12.5.1): a page for a browser, JSON for the rest.

python-mimeparse was the library to hand, but it compares media types case-sensitively, reads an invalid
weight as 1, and raises on one malformed range (losing the whole header); this reads each range on its
own, skips the malformed ones, and is small enough to test by every rule of the section.
"""

from __future__ import annotations

import re

HTML = "text/html"
JSON = "application/json"
VARY = {"Vary": "Accept"}

_TOKEN = r"[!#$%&'*+.^_`|~0-9A-Za-z-]+"
_RANGE = re.compile(rf"({_TOKEN})/({_TOKEN})")
# qvalue = ( "0" [ "." 0*3DIGIT ] ) / ( "1" [ "." 0*3("0") ] )
_QVALUE = re.compile(r"0(\.[0-9]{0,3})?|1(\.0{0,3})?")
# a list element or a parameter: anything but the separator, a quoted string taken whole
_ELEMENTS = re.compile(r'(?:[^,"]|"(?:\\.|[^"\\])*"?)+')
_PARAMS = re.compile(r'(?:[^;"]|"(?:\\.|[^"\\])*"?)+')


def _ranges(accept: str) -> list[tuple[str, str, float]]:
    """(type, subtype, weight) of each well-formed media range, lower case; malformed ones left out."""
    out = []
    for element in _ELEMENTS.findall(accept):
        parts = [p.strip() for p in _PARAMS.findall(element)]
        if not parts or not parts[0]:
            continue
        found = _RANGE.fullmatch(parts[0])
        if found is None:
            continue
        weight, readable = 1.0, True
        for param in parts[1:]:
            name, _, value = param.partition("=")
            if name.strip().lower() == "q":
                readable = _QVALUE.fullmatch(value.strip()) is not None  # else the range is malformed
                weight = float(value) if readable else 0.0
                break  # what follows the weight is not the media type's
        if readable:
            out.append((found[1].lower(), found[2].lower(), weight))
    return out


def quality(accept: str | None, media_type: str) -> float:
    """The weight `accept` gives `media_type`: that of the most specific range matching it (0: none).

    No Accept header at all accepts everything (weight 1)."""
    if accept is None:
        return 1.0
    kind, sub = media_type.lower().split("/")
    best, weight = -1, 0.0
    for t, s, q in _ranges(accept):
        if (t, s) == (kind, sub):
            rank = 2
        elif (t, s) == (kind, "*"):
            rank = 1
        elif (t, s) == ("*", "*"):
            rank = 0
        else:
            continue
        if rank > best:  # of equally specific ranges, the first stands
            best, weight = rank, q
    return weight


def prefers_html(accept: str | None) -> bool:
    """Whether text/html ranks above application/json in `accept`: a tie, or no Accept, is JSON."""
    html = quality(accept, HTML)
    return html > 0 and html > quality(accept, JSON)


def prefers_json(accept: str | None) -> bool:
    """Whether application/json ranks above text/html in `accept` (for a URL whose default is a page)."""
    json = quality(accept, JSON)
    return json > 0 and json > quality(accept, HTML)
