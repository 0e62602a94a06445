"""A reference that is a work's whole title and nothing else (a list's line whose other parts were lost):
matched when the title has three words or more, and only then."""

from __future__ import annotations

import pytest

from ledger.model.resolving import RefInput
from ledger.model.works import Reference
from service.resolver.match import resolve_many
from tests.service.resolver.catalogue_fake import FakeCatalogue, work

CATALOGUE = [
    work(
        1,
        "Mixed Precision Training",
        ["Micikevicius", "Narang"],
        arxiv_id="1710.03740",
        source="arxiv",
        year=2017,
        type=None,
    ),
    work(2, "Rethinking dropout", ["Okafor"], doi="10.1000/drop", container="Neural Computation", year=2020),
    work(3, "Mixed precision training of sparse networks", ["Ueda"], doi="10.1000/sparse", year=2021),
]


def decide(text: str) -> tuple[str, int | None]:
    (d,) = resolve_many([RefInput("o1", Reference(unstructured=text), None)], FakeCatalogue(CATALOGUE))
    return d.status, None if d.work is None else d.work.seq


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Mixed Precision Training.", ("verified_fuzzy", 1)),
        ("mixed precision  training", ("verified_fuzzy", 1)),
        # two words: too often another work's whole title too
        ("Rethinking dropout.", ("unresolved", None)),
        # more than the title, agreeing with nothing else: perhaps the start of another work's title
        ("Mixed Precision Training of Graph Networks.", ("unresolved", None)),
        ("Mixed Precision Training. Someone, 1999.", ("unresolved", None)),
        # a longer title that a shorter work's title begins: the shorter a close runner-up, neither preferred
        ("Mixed precision training of sparse networks.", ("unresolved", None)),
    ],
)
def test_a_bare_title_of_three_words_or_more_is_matched(text: str, expected: tuple[str, int | None]) -> None:
    assert decide(text) == expected
