"""Reference text read for matching: folded, mended, its numbers found."""

from __future__ import annotations

import pytest

from service.resolver.normalise import fold, ocr_digits, words
from service.resolver.parse import parse


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Large lan- guage mod- els", ["large", "language", "models"]),
        ("mod-\nels of the world", ["models", "of", "the", "world"]),
        ("Schrödinger’s Équations", ["schrodinger", "s", "equations"]),
        ("Øresund Łódź", ["oresund", "lodz"]),
        (
            "ZeRO-Offload: Democratizing{billion-scale}",
            ["zero", "offload", "democratizing", "billion", "scale"],
        ),
    ],
)
def test_words(text: str, expected: list[str]) -> None:
    assert words(text) == expected


def test_a_hyphen_between_words_on_one_line_is_kept_as_a_separator() -> None:
    assert words("state-of-the-art") == ["state", "of", "the", "art"]
    assert fold("É") == "e"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2O19", "2019"),
        ("l23", "123"),
        ("S5", "55"),
        ("vol. l2, 2O2O", "vol. 12, 2020"),
        ("Oslo 2020", "Oslo 2020"),
    ],
)
def test_ocr_digits(text: str, expected: str) -> None:
    assert ocr_digits(text) == expected


@pytest.mark.parametrize(
    ("text", "pair", "years"),
    [
        ("Smith, J.; Doe, A. J. Am. Chem. Soc. 2019, 141, 1234–1240.", ("141", "1234"), {2019}),
        ("A. Smith, Phys. Rev. B 95, 123 (2017).", ("95", "123"), {2017}),
        ("Smith J, Doe A. Title. J Name. 2010;12(3):123–30.", ("12", "123"), {2010}),
        ('J. Smith, "T," IEEE Trans. X, vol. 12, no. 3, pp. 123–130, 2O1O.', ("12", "123"), {2010}),
        ("J. Name 12 (2010) 123–130.", ("12", "123"), {2010}),
        ("Phys. Rev. Lett. 95, e1002 (2005)", ("95", "e1002"), {2005}),
    ],
)
def test_volume_page_pairs_of_title_less_styles(text: str, pair: tuple[str, str], years: set[int]) -> None:
    p = parse(text)
    assert p.pairs[0] == pair
    assert p.years == years


def test_abbreviated_page_ends_are_expanded() -> None:
    assert "1437" in parse("Foo 12, 1425-37 (2001)").numbers


@pytest.mark.parametrize("text", ["Accessed: 2025-06", "Retrieved May 3, 2024", "last visited 2023-01-02"])
def test_access_dates_are_not_the_work_s(text: str) -> None:
    p = parse(f"Some page. {text}")
    assert p.years == set()
