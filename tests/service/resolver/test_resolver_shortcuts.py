"""The matcher's shortcuts answer what the long way answers: folding ASCII text, a pattern tried only on
text holding a word it needs, the precomputed tests of names, containers and unexplained words."""

from __future__ import annotations

import re
import unicodedata

from hypothesis import example, given, settings
from hypothesis import strategies as st
from rapidfuzz import fuzz

from ledger.model.works import CatalogueWork
from service.resolver import identifiers, score
from service.resolver.normalise import fold
from service.resolver.parse import parse

# the pieces references and their noise are made of, so random text often holds an identifier or a notice
PIECES = [
    "doi", "DOI:", "doi.org/", "10.1103/", "10.48550/arXiv.", "2101.01234", "hep-th/", "9901001", "arXiv",
    "ARXIV:", "abs/", "CoRR abs/", "https://", "http://", "www.", "Correction", "erratum", "retracted",
    "Retraction note", "withdrawal", "expression of concern", "to:", "Part II", "mod-", "\n", " ", "- ",
    "-", "\u00ad", "\u2010", "é", "ı", "İ", "ſ", "K", "Ø", "a", "Z", "9", ".", ",", ":", "(", ")", "/",
]  # fmt: skip
texts = st.lists(st.sampled_from(PIECES), max_size=14).map("".join)

_BROKEN_AS_WRITTEN = re.compile(r"(?<=[^\W\d_])[-\u00ad\u2010\u2011]\s+(?=[^\W\d_])")
_FOLD = str.maketrans({"ø": "o", "ł": "l", "đ": "d", "ð": "d", "þ": "th", "æ": "ae", "œ": "oe", "ı": "i"})


def fold_the_long_way(text: str) -> str:
    low = unicodedata.normalize("NFKD", text.casefold())
    return _BROKEN_AS_WRITTEN.sub("", re.sub(r"[\u0300-\u036f]", "", low)).translate(_FOLD)


@given(st.one_of(texts, st.text(max_size=40)))
def test_fold_answers_as_the_long_way(text: str) -> None:
    assert fold(text) == fold_the_long_way(text)


class EveryPattern(str):
    """Text `find` reads with every pattern: it skips none on text it does not take for ASCII."""

    def isascii(self) -> bool:
        return False


@example("CoRR abs/2101.01234, https://www.x.org doi:10.1103/a.b")
@example("Smith, J. (2020) hep-th/9901001v2 and DOI: 10.48550/arXiv.2101.01234")
@given(texts)
def test_find_answers_as_when_no_pattern_is_skipped(text: str) -> None:
    assert identifiers.find(text) == identifiers.find(EveryPattern(text))


@given(texts)
def test_notices_are_found_as_their_patterns_find_them(text: str) -> None:
    low = fold(text)
    assert score._notice_in(low) == bool(score._NOTICE_IN.search(low) or score._NOTICE.match(low))


NAME_WORDS = ["van", "der", "berg", "li", "mc", "donald", "ng", "garcia", "lopez"]
VENUE_WORDS = ["phys", "physical", "rev", "review", "j", "journal", "chem", "soc", "b", "lett", "x"]
# a reference's words: names and venues whole, glued or abbreviated, and title words, some twice
REF_WORDS = NAME_WORDS + VENUE_WORDS + ["vanderberg", "mcdonald", "garcialopez", "physi", "quantum",
                                        "widgets", "spins", "lattice", "spins", "quantum"]  # fmt: skip


@example(authors=["mc donald"], container="", ref="mcdonald quantum")  # glued
@example(authors=["li ng"], container="", ref="li ng")  # whole, short
@example(authors=[], container="journal chem", ref="j chem quantum widgets spins")  # J. for Journal
@example(authors=[], container="", ref="quantum quantum widgets spins")  # a word twice
@example(authors=[], container="", ref="quantum widgets spins")  # three: too few
@settings(max_examples=300)
@given(
    authors=st.lists(st.lists(st.sampled_from(NAME_WORDS), min_size=1, max_size=3).map(" ".join), max_size=4),
    container=st.lists(st.sampled_from(VENUE_WORDS), max_size=5).map(" ".join),
    ref=st.lists(st.sampled_from(REF_WORDS), max_size=12).map(" ".join),
)
def test_scoring_tests_answer_as_their_loops(authors: list[str], container: str, ref: str) -> None:
    c = score.prepare(CatalogueWork(seq=1, observed_at="t", source="crossref", type=None, doi="10.1/x",
                                    arxiv_id=None, title="A title", authors=tuple(authors),
                                    container=container or None, year=2000, volume=None, issue=None,
                                    first_page=None))  # fmt: skip
    r = score.view(parse(ref))
    for name in c.authors:
        sp = name.spaced
        last = sp.split()[-1]
        cp = sp.replace(" ", "")
        loop = (
            sp in r.p.spaced or (len(cp) >= 5 and cp in r.p.compact) or (len(last) >= 3 and last in r.wordset)
        )
        assert score.name_in(r, name) == loop
    explains = {x for a in authors for x in re.sub(r"[^0-9a-z]+", " ", fold(a)).split()}
    name_words = set(explains)
    for w in c.container:
        explains.update(w[:n] for n in range(2, len(w) + 1))
    assert c.explains == explains
    glued = "".join(c.container)
    names = [x for x in [*c.container, *name_words] if len(x) > 3]

    def misprinted(w: str) -> bool:
        return (len(w) >= 4 and w in glued) or any(fuzz.ratio(w, x) >= score.NEAR_WORD for x in names)

    unexplained = sum(w not in explains and not misprinted(w) for w in r.content)
    assert score._unexplained(r, c) == (unexplained >= score.UNEXPLAINED)
    found = sum(
        w in r.wordset
        or (w == "journal" and "j" in r.wordset)
        or any(w[:n] in r.wordset for n in range(2, len(w)))
        for w in c.container
    )
    if len(c.container) == 1:
        assert score._container_in(r, c) == (c.container[0] in r.wordset)
    else:
        expected = bool(c.container) and found >= 2 and found * 4 >= len(c.container) * 3
        # or the name misprinted or split at random, alike as a whole where printed
        expected = expected or (len(glued) >= 12 and fuzz.partial_ratio(glued, r.p.compact) >= 90)
        assert score._container_in(r, c) == expected
