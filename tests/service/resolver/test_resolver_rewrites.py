"""The patterns rewritten to run in linear time find exactly what the backtracking ones found: each is
checked against the earlier pattern (kept here as the oracle) on short random strings made of the pieces
each one reads, where the earlier pattern's cost does not matter."""

from __future__ import annotations

import re
from collections.abc import Callable

from hypothesis import given, settings
from hypothesis import strategies as st

from service.resolver import identifiers, normalise, parse, sbmv

PIECES = [
    " ", "  ", "\t", "\n", "\r\n", "1", "12", "2019", "0", "-", "\u2013", "--", ".", "_", "/", ",", ":", ";",
    "(", ")", "[", "]", "}", "'", "|", "a", "x", "O", "l", "S", "B", "D", "i", "I", "v2", "pp.", "p.", "no.",
    "issue", "doi", "doi:", "DOI ", "https://doi.org/", "10.", "10.1234/", "1234", "arxiv", "arXiv:",
    "preprint", "abs/", "corr ", "hep-th/9901001", "math", "1905.01234", "accessed", "Last visited",
    "on", "\u0663",
]  # fmt: skip
texts = st.lists(st.sampled_from(PIECES), max_size=12).map("".join)
RUNS = settings(max_examples=1500, deadline=None)

# the patterns as they were, before their runs were made possessive or their scans explicit
OLD_VOL_PAGE = re.compile(
    r"(?i)(?<![0-9])([0-9]{1,5})\s*(?:\(\s*[0-9A-Za-z/-]{1,9}\s*\))?\s*(?:[,:]|\s)\s*"
    r"(?:(?:no\.|issue)\s*[0-9]{1,5}\s*,\s*)?(?:pp?\.\s*)?([A-Za-z]?[0-9]{1,7})(?![0-9])"
)
OLD_RANGE = re.compile(r"(?<![0-9])([0-9]+)\s*(?:[-\u2010-\u2015\u2212]|--)\s*([0-9]+)(?![0-9])")
OLD_ACCESSED = re.compile(
    r"(?i)\b(?:accessed|retrieved|last\s+(?:accessed|visited)|viewed|visited|consulted)\b(?:\s+on)?[:\s]*"
    r"[\w ,./-]{0,30}"
)
OLD_NUMBERISH = re.compile(r"(?<![A-Za-z0-9])[0-9OoDlIi|SB]*[0-9][0-9OoDlIi|SB]*(?![A-Za-z0-9])")
OLD_BREAK = r"[ \t]*\r?\n[ \t]*"
OLD_DOI_PREFIX = re.compile(
    r"(?i)(?:\b(?:https?://)?(?:dx\.)?doi\.org/|\bdoi\s*:|\bdoi\s+(?=10\.))[ \t]*(?:\r?\n[ \t]*)?"
)
OLD_DOI_CONTINUED = re.compile(r"(?<![\w.])10\.\d{4,9}/\S*[-/._](?:" + OLD_BREAK + r"\S+)+")
OLD_ARXIV_PREFIX = re.compile(
    r"(?i)(?:(?:\bhttps?://)?(?:www\.|export\.)?\barxiv\.org/(?:abs|pdf)/\s*"
    r"|\barxiv\s*(?:preprint\s*)?[:.]?[ \t]*(?:\r?\n[ \t]*)?|\bcorr\s+abs/|(?<![\w/])abs/)"
    r"(?=[0-9OolIS]{4}\s?\.\s?[0-9OolIS](?:\s?[0-9OolIS]){2}|[a-z-]+(?:\.[A-Za-z]{2})?/\d|\d{5})"
)
OLD_SBMV_RANGE = re.compile(r"(\d+)[\u002d\u00ad\u2010-\u2015\u207b\u208b\u2212](\d+)")
_TRAIL = ".,;:'\"*>»”’"


def _old_strip(doi: str) -> str:
    doi = doi.rstrip(_TRAIL)
    for close, open_ in ((")", "("), ("]", "["), ("}", "{")):
        while doi.endswith(close) and doi.count(close) > doi.count(open_):
            doi = doi[:-1].rstrip(_TRAIL)
    return doi


def _spans(p: re.Pattern[str], text: str) -> list[tuple[int, int]]:
    return [m.span() for m in p.finditer(text)]


def _groups(p: re.Pattern[str]) -> Callable[[str], list[tuple[str | None, ...]]]:
    return lambda text: [(m.group(), *m.groups()) for m in p.finditer(text)]


def _pairs(p: re.Pattern[str], text: str) -> list[tuple[str, ...] | None]:
    # as parse reads it: matched at each number
    out: list[tuple[str, ...] | None] = []
    for n in re.finditer(r"(?<![0-9])[0-9]+(?![0-9])", text):
        m = p.match(text, n.start())
        out.append(None if m is None else (m.group(1), m.group(2)))
    return out


@RUNS
@given(texts)
def test_volume_and_page_pairs_are_the_same(text: str) -> None:
    assert _pairs(parse._VOL_PAGE, text) == _pairs(OLD_VOL_PAGE, text)


@RUNS
@given(texts)
def test_ranges_and_access_dates_are_the_same(text: str) -> None:
    assert _groups(parse._RANGE)(text) == _groups(OLD_RANGE)(text)
    assert _spans(parse._ACCESSED, text) == _spans(OLD_ACCESSED, text)


@RUNS
@given(texts)
def test_number_like_tokens_are_the_same(text: str) -> None:
    assert normalise.numberish_spans(text) == _spans(OLD_NUMBERISH, text)


@RUNS
@given(texts)
def test_identifier_patterns_find_the_same(text: str) -> None:
    assert _spans(identifiers._DOI_PREFIX, text) == _spans(OLD_DOI_PREFIX, text)
    assert _spans(identifiers._ARXIV_PREFIX, text) == _spans(OLD_ARXIV_PREFIX, text)
    assert list(identifiers._continued(text)) == _spans(OLD_DOI_CONTINUED, text)
    assert identifiers._BREAK_IN.split(text) == re.split(OLD_BREAK, text)
    assert identifiers._strip(text) == _old_strip(text)


@RUNS
@given(texts)
def test_a_doi_broken_across_lines_is_read_where_the_prefix_ends(text: str) -> None:
    # where a DOI prefix ends: after a colon, a slash or a space, never after a letter, digit or dot
    for at in range(len(text) + 1):
        if at and re.match(r"[\w.]", text[at - 1]):
            continue
        old = OLD_DOI_CONTINUED.match(text[at:])
        assert identifiers._continued_at(text, at) == (None if old is None else at + old.end())


@RUNS
@given(texts)
def test_the_baselines_page_ranges_are_the_same(text: str) -> None:
    assert _groups(sbmv._RANGE)(text) == _groups(OLD_SBMV_RANGE)(text)
