"""References damaged the way real ones are (a title's words scrambled, letters printed for digits,
words split or glued, a journal's name misprinted) matched as the intact ones are; and the works such
tolerance must not admit: a chapter whose words are its book's, another paper at a misread place."""

from __future__ import annotations

import pytest

from ledger.model.resolving import Decision, RefInput
from ledger.model.works import CatalogueWork, Reference
from service.resolver.match import resolve_many
from service.resolver.parse import parse
from service.resolver.score import misprinted_number, prepare, title_words, view
from tests.service.resolver.catalogue_fake import FakeCatalogue, work

ARTICLE = work(
    1, "Seasonal grazing alters nitrogen cycling in alpine meadow soils", ["Okonkwo", "Brandt", "Selvik"],
    container="Journal of Mountain Ecology", year=2013, volume="17", issue="3", first_page="585-592",
)  # fmt: skip
CHAPTER = work(
    2, "Trends in the Price of Tin", [], container="Secular Movements in the Production and Price of Tin",
    year=1935, type="book-chapter",
)  # fmt: skip
PAPER = work(
    3, "Wave speed in saturated clay beds", ["Lindqvist"], container="Journal of Geotechnical Acoustics",
    year=2000, volume="62", issue="4", first_page="4976-4981",
)  # fmt: skip


def _decide(text: str, *works: CatalogueWork) -> Decision:
    (d,) = resolve_many([RefInput("r", Reference(unstructured=text), None)], FakeCatalogue(works))
    return d


def _answer(text: str, *works: CatalogueWork) -> int | None:
    d = _decide(text, *works)
    return d.work.seq if d.work is not None else None


@pytest.mark.parametrize(
    "text",
    [
        # every word of the title, in another order
        "Okonkwo, Ada, Brandt, Lena, Selvik, Tor. meadow grazing in Seasonal alters soils nitrogen alpine "
        "cycling. Journal of Mountain Ecology. 2013. 17. 3. 585-592",
        # one word in five lost to damage
        "Okonkwo, Ada, Brandt, Lena. grazing Seasonal alters alpine in nitr ogen meadow soils cycling. "
        "Journal of Mountain Ecology. 2013. 17. 3. 585-592",
    ],
)
def test_a_title_scrambled_is_its_words_together(text: str) -> None:
    d = _decide(text, ARTICLE)
    assert d.work == ARTICLE and d.status == "verified_fuzzy"
    assert "title_words" in d.evidence.agreed and "title" not in d.evidence.disagreed


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("meadow grazing in Seasonal alters soils nitrogen alpine cycling", True),
        # the words far apart in a long text are no title printed
        (
            "meadow grazing in Seasonal alters Journal of Mountain Ecology 2013 17 3 and then soils nitrogen "
            "from the alpine survey of many years, cycling",
            False,
        ),  # fmt: skip
        ("meadow grazing Seasonal alters", False),  # too many words lost
    ],
)
def test_title_words_need_the_words_together(text: str, expected: bool) -> None:
    assert title_words(view(parse(text)), prepare(ARTICLE)) is expected


def test_a_chapter_whose_words_are_its_books_is_not_named_by_the_book() -> None:
    # the book's name printed holds every word of the chapter's title but one: the reference names the
    # book (or another part of it), not this chapter
    text = "Contents. (1935). Secular Movements in the Production and Price of Tin."
    d = _decide(text, CHAPTER)
    assert d.work is None and "title_words" not in d.evidence.agreed


@pytest.mark.parametrize(
    "text",
    [
        "1 K. Lindqvist, Journal of Geotechnical Acoustics 62, 49R6 (2000).",  # a digit printed as R
        "1 K. Lindqvist, Journal of Geotechnical Acoustics 62, 4 976 (2000).",  # a space inside
        "1 K. Lindqvist, Journal of Geotechnical Acoustics 62, 4976D(2000).",  # a letter glued to it
    ],
)
def test_a_title_less_reference_with_a_number_misprinted_still_matches(text: str) -> None:
    assert _answer(text, PAPER) == PAPER.seq


@pytest.mark.parametrize(
    "text",
    [
        "1Journal of Geotechnical Acoustics 62, 4990 (20R0).",  # a digit of the year printed as R
        "1Journal of Geotechnical Acoustics 62, 4990 (2 000).",  # the year split
    ],
)
def test_a_year_misprinted_still_agrees(text: str) -> None:
    # without an author, the year is one of the three fields beside the page that must agree
    d = _decide(text, NOTE)
    assert d.work == NOTE and "year" in d.evidence.agreed


EDITORIAL = work(
    4, "Editorial board", [], container="Journal of Geotechnical Acoustics", year=2000, volume="62",
    issue="4", first_page="iii",
)  # fmt: skip
NOTE = work(
    5, "A note on clay", [], container="Journal of Geotechnical Acoustics", year=2000, volume="62",
    issue="4", first_page="4990-4991",
)  # fmt: skip


@pytest.mark.parametrize(
    "text",
    [
        "1Journalof Geotechnical Acoustics 62, 4990 (2000).",  # words glued
        "1Journal of Geotechnica l Acoustic s 62, 4990 (2000).",  # words split
        "1Journal of Geotechncal Acoustcs 62, 4990 (2000).",  # letters lost
    ],
)
def test_a_journals_name_damaged_still_agrees(text: str) -> None:
    # without an author, the journal is one of the three fields beside the page that must agree
    d = _decide(text, NOTE, EDITORIAL)
    assert d.work == NOTE and "container" in d.evidence.agreed


def test_misprinted_names_are_no_title_of_the_references_own() -> None:
    # five words misprinted: each close to a word of the work's names or journal, none a title's
    text = "1 K. Lindqvsit, B. Okafro, Jeurnal of Geotechnicl Acoustcs 62, 4976 (2000)."
    paper = PAPER._replace(authors=("Lindqvist", "Okafor"))
    d = _decide(text, paper)
    assert d.work == paper and "title" not in d.evidence.disagreed


@pytest.mark.parametrize(
    ("text", "number", "expected"),
    [
        ("Acoustics 62, 49R6 (2000)", "4976", True),
        ("Acoustics 62, 4 976 (2000)", "4976", True),
        ("Acoustics 62, 4977 (2000)", "4976", False),  # another digit is another page
        ("Acoustics 62. 497. 963", "630", False),  # punctuation after a number is not a misprint in it
        ("Acoustics 6R, 49 (2000)", "62", False),  # two digits: a letter for one is too much
        ("Acoustics 65 , 4 0 (2012)", "40", True),  # two digits split
        ("Acoustics 93, 68D(2015)", "68", True),  # a letter glued to its end
        ("Acoustics 93, 68Da (2015)", "68", False),  # two letters: a word, not a misprint
        ("Acoustics A4976 (2000)", "4976", False),  # glued to a letter: another token
    ],
)
def test_misprinted_number(text: str, number: str, expected: bool) -> None:
    assert misprinted_number(text, number) is expected


def test_another_digit_is_still_another_page() -> None:
    text = "1 K. Lindqvist, Journal of Geotechnical Acoustics 62, 4977 (2000)."
    assert _answer(text, PAPER) is None


VOLUME = work(
    6, "Proceedings of the Ninth International Workshop on Soil Acoustics", [], year=2015, type="proceedings"
)


@pytest.mark.parametrize(
    "text",
    [
        "1 J. Okafor and P. Lind, Proceedings of the Ninth International Workshop on Soil Acoustics (2015).",
        "1 J. Okafor and P. Lind, ProcPedings of the Ninth Internati onal Workshop on Soil Acoustics (2015).",
    ],
)
def test_authors_before_a_misprinted_volume_title_name_a_paper_of_it(text: str) -> None:
    # the volume holds no authors: people named before its title, even misprinted, wrote a paper of it
    d = _decide(text, VOLUME)
    assert d.work is None and "first_author" in d.evidence.disagreed


@pytest.mark.parametrize(
    ("text", "first"),
    [
        ("1Tectonica 74, 862 (1999).", "tectonica"),
        ("[12]Tectonica 74 (1999) 862.", "tectonica"),
        ("(3) Tectonica 1999, 74, 862.", "tectonica"),
    ],
)
def test_a_list_number_glued_to_the_first_word_is_no_part_of_it(text: str, first: str) -> None:
    assert parse(text).words[0] == first
    held = work(7, "Review of regional faults", [], container="Tectonica", year=1999, volume="74",
                first_page="862-863")  # fmt: skip
    assert _answer(text, held) == held.seq
