"""DOI and arXiv-id keys for matching source rows to works and papers (sources-v1.md).

They sit on the ground floor: the works index (ledger/storage/derived/keys.py) stores them with each event."""

from __future__ import annotations

import re

ARXIV_DOI_PREFIX = "10.48550/arxiv."
_PREFIXES = ("https://doi.org/", "http://doi.org/", "https://dx.doi.org/", "http://dx.doi.org/", "doi:")
_VERSION = re.compile(r"v\d+$")
# a DOI as the ledger keeps one: "10.", a registrant code of ASCII digits and dots, "/", then a suffix of
# printable ASCII without spaces. Unicode digits, controls, bidi and zero-width marks are not DOIs here:
# they make two DOIs that print the same, or one that prints as another
_REGISTRANT = r"10\.[0-9]+(?:\.[0-9]+)*"
_SYNTAX = re.compile(_REGISTRANT + r"/[!-~]+", re.ASCII)


def normalize_doi(value: str) -> str:
    """Spaces and a doi.org / dx.doi.org / doi: prefix removed (any case), lowercased."""
    low = value.strip().lower()
    if not low.startswith(_PREFIXES):
        return low  # the usual case, tested once (a file may hold millions of DOIs)
    for prefix in _PREFIXES:
        if low.startswith(prefix):
            # "doi: 10.1/x" is seen in hand-edited files: the space after the prefix is not part of it
            return low[len(prefix) :].strip()
    return low


def doi_syntax_error(doi: str) -> str | None:
    """Why a normalised DOI is not one (its prefix, registrant code, slash or characters), or None."""
    if _SYNTAX.fullmatch(doi):
        return None
    if not doi.startswith("10."):
        return "does not begin with 10."
    registrant, slash, suffix = doi.partition("/")
    if not slash or not suffix:
        return "has no / and suffix after its registrant code"
    if not re.fullmatch(_REGISTRANT, registrant, re.ASCII):
        return "has a registrant code that is not ASCII digits and dots"
    bad = next(c for c in suffix if not "!" <= c <= "~")
    return f"holds U+{ord(bad):04X}, not printable ASCII"


def match_key(normalized: str) -> str:
    """The key a normalized DOI matches on: an arXiv DOI loses its version suffix, others are as is."""
    if normalized.startswith(ARXIV_DOI_PREFIX):
        return _VERSION.sub("", normalized)
    return normalized


def doi_key(value: str | None) -> str | None:
    """A DOI as read from a file or a work -> its matching key; None when empty."""
    if value is None:
        return None
    key = match_key(normalize_doi(value))
    return key or None


def arxiv_key(arxiv_id: str | None) -> str | None:
    """An arXiv id -> the key of its DOI `10.48550/arxiv.X` (lowercased); None when empty."""
    if arxiv_id is None or not arxiv_id.strip():
        return None
    return match_key(ARXIV_DOI_PREFIX + arxiv_id.strip().lower())


def work_keys(doi: str | None, arxiv_id: str | None, pith_arxiv_id: str | None) -> set[str]:
    """The keys a cited work matches on: its DOI's, and the arXiv DOI of each arXiv id it names."""
    return {k for k in (doi_key(doi), arxiv_key(arxiv_id), arxiv_key(pith_arxiv_id)) if k is not None}
