"""arXiv ids as people paste them, read as the canonical id the ledger stores (events keep the strict
rule of ledger-v1.md: `check_arxiv`; only the doors normalise)."""

from __future__ import annotations

import re

from ledger.model.codec import ARXIV_RE
from ledger.model.errors import InvalidEvent

# the forms around an id that a reader copies from arxiv.org, doi.org or a reference list
_URL = re.compile(r"(?:https?://)?(?:www\.|export\.)?arxiv\.org/(?:abs|pdf)/", re.IGNORECASE)
_DOI = re.compile(r"(?:(?:https?://)?(?:dx\.)?doi\.org/|doi:)?10\.48550/arxiv\.", re.IGNORECASE)
_PREFIX = re.compile(r"arxiv:", re.IGNORECASE)
_VERSION = re.compile(r"v[1-9]\d*$")
_PDF = re.compile(r"\.pdf$", re.IGNORECASE)
FORMS = (
    "NNNN.NNNNN or archive/NNNNNNN (with or without an arXiv: prefix or a version suffix such as v1; "
    "an arxiv.org/abs/ URL or a 10.48550/arXiv. DOI are read as the id they name)"
)


def normalise_arxiv(value: str, where: str) -> str:
    """The canonical arXiv id `value` names (prefix, version, URL or DOI dropped), or InvalidEvent
    naming `where` when it names none."""
    text = value.strip()
    url = _URL.match(text)
    if url:
        text = _PDF.sub("", text[url.end() :].rstrip("/"))
    else:
        form = _DOI.match(text) or _PREFIX.match(text)
        text = text[form.end() :] if form else text
    text = _VERSION.sub("", text)
    if not ARXIV_RE.fullmatch(text):
        raise InvalidEvent(where, f"bad arXiv id {value!r}: expected {FORMS}")
    return text
