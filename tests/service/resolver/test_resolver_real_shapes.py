"""Wrong answers real catalogues invite, each in a small catalogue shaped like Crossref's records: a book
for its chapter, a proceedings volume for its paper, the same author's other paper in one journal and
year, one title printed again years later, the next part of a numbered series."""

from __future__ import annotations

import pytest

from ledger.model.resolving import Decision, RefInput
from ledger.model.works import CatalogueWork, Reference
from service.resolver.match import resolve_many
from service.resolver.parse import parse
from tests.service.resolver.catalogue_fake import FakeCatalogue, work

BOOK = work(1, "Designing Water Supply Networks for Small Towns", ["Hale"], year=2004, type="book")
CHAPTER = work(
    2,
    "Pumps and valves",
    ["Hale"],
    container=BOOK.title,
    year=2004,
    first_page="129-154",
    type="book-chapter",
)
VOLUME = work(
    3, "Proceedings of the Ninth International Workshop on Soil Acoustics", [], year=2015, type="proceedings"
)
PAPER = work(
    4, "Wave speed in saturated clay", ["Okafor", "Lind"], container=VOLUME.title, year=2015,
    type="proceedings-article",
)  # fmt: skip
SAME_AUTHOR = work(
    5, "Groundwater recharge under drip irrigation", ["Sharma", "Iyer"],
    container="Journal of Arid Hydrology", year=2017, volume="17", first_page="1-9",
)  # fmt: skip
NEWS = work(
    6, "News", [], container="Computer Music Journal", year=2006, volume="30", issue="1", first_page="7-9"
)
REPRINTED = work(
    7, "Classification and management of acute wounds", ["Kumar", "Leaper"], container="Surgery (Oxford)",
    year=2008, volume="26", issue="2", first_page="43-47",
)  # fmt: skip
PART_II = work(
    8, "Tidal mixing in shallow estuaries. Part II: Observations", ["Moreau"], container="Estuarine Physics",
    year=1998, volume="12", first_page="201-219",
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
        "Hale, R. (2004). Pumps and valves. Designing Water Supply Networks for Small Towns, 129–154.",
        "Hale, R. “Pumps and Valves.” Designing Water Supply Networks for Small Towns (2004): 129–154.",
        "(1) Hale, R. Designing Water Supply Networks for Small Towns 2004, 129–154.",
        "1 R. Hale, Designing Water Supply Networks for Small Towns 129 (2004).",
        "[1] R. Hale, Designing Water Supply Networks for Small Towns (2004) 129.",
    ],
)
def test_a_chapter_is_not_answered_with_its_book(text: str) -> None:
    assert _answer(text, BOOK) is None
    # with the chapter held too, the chapter is the answer
    assert _answer(text, BOOK, CHAPTER) == CHAPTER.seq


def test_the_book_cited_whole_is_still_the_book() -> None:
    text = "Hale, R. (2004). Designing Water Supply Networks for Small Towns. London: Water Press."
    assert _answer(text, BOOK, CHAPTER) == BOOK.seq


def test_a_page_range_of_the_books_own_title_is_no_chapter() -> None:
    book = work(9, "Field guide to the sedges of Zones 3-7", ["Abbot"], year=2011, type="book")
    assert _answer("Abbot, L. (2011). Field guide to the sedges of Zones 3-7. Green Press.", book) == book.seq


@pytest.mark.parametrize(
    "text",
    [
        "Okafor, N., & Lind, P. (2015). Wave speed in saturated clay. Proceedings of the Ninth "
        "International Workshop on Soil Acoustics, 45–52.",
        "(1) Okafor, N.; Lind, P. Proceedings of the Ninth International Workshop on Soil Acoustics "
        "2015, 45–52.",
    ],
)
def test_a_paper_is_not_answered_with_its_proceedings_volume(text: str) -> None:
    assert _answer(text, VOLUME) is None
    assert _answer(text, VOLUME, PAPER) in (PAPER.seq, None)


@pytest.mark.parametrize(
    "text",
    [
        "(1) Sharma, K.; Rao, M. Journal of Arid Hydrology 2017, 15, 105–113.",
        "1 K. Sharma and M. Rao, Journal of Arid Hydrology 15, 105 (2017).",
        "[1] K. Sharma, M. Rao, Journal of Arid Hydrology 15 (2017) 105.",
    ],
)
def test_the_list_number_is_not_a_first_page(text: str) -> None:
    # the same first author, journal and year; the entry's number "1" is not the work's first page 1
    assert _answer(text, SAME_AUTHOR) is None
    assert "1" not in parse(text).numbers


def test_the_end_of_a_page_range_is_not_a_first_page() -> None:
    # another item of the volume begins where the cited one ends
    assert _answer("(1) Computer Music Journal 2006, 30, 6–7.", NEWS) is None
    assert parse("Computer Music Journal 2006, 30, 6–7.").ends == frozenset({"7"})


@pytest.mark.parametrize(
    "text",
    [
        "Kumar, S., & Leaper, D. J. (2005). Classification and management of acute wounds. Surgery (Oxford),"
        " 23(2), 47–51.",
        "Kumar, Senthil. Classification and management of acute wounds. Surgery (Oxford). 2005. 23. 2. 47-51",
    ],
)
def test_the_same_title_years_apart_is_another_work(text: str) -> None:
    d = _decide(text, REPRINTED)
    assert d.work is None
    assert "year" in d.evidence.disagreed


def test_a_year_off_by_one_still_matches() -> None:
    text = (
        "Kumar, S., & Leaper, D. J. (2007). Classification and management of acute wounds. "
        "Surgery (Oxford), 26(2), 43–47."
    )
    assert _answer(text, REPRINTED) == REPRINTED.seq


def test_the_next_part_of_a_series_is_another_work() -> None:
    text = (
        "Moreau, J. (1998). Tidal mixing in shallow estuaries. Part III: Models. "
        "Estuarine Physics, 12, 220–241."
    )
    assert _answer(text, PART_II) is None


@pytest.mark.parametrize(
    "text",
    [
        "Okafor, N. Wave speed in saturated clay. Proceedings of the Ninth International Workshop on Soil "
        "Acoustics. 2015. . . ",
        "1 N. Okafor and P. Lind, Proceedings of the Ninth International Workshop on Soil Acoustics (2015).",
    ],
)
def test_a_named_paper_without_pages_is_not_its_authorless_volume(text: str) -> None:
    d = _decide(text, VOLUME)
    assert d.work is None
    assert "first_author" in d.evidence.disagreed


@pytest.mark.parametrize(
    "text",
    [
        "Nebel, A., & Deuschl, G. (Eds.). (2015). Proceedings of the Ninth International Workshop on Soil "
        "Acoustics.",
        "Anon, 2015. Proceedings of the Ninth International Workshop on Soil Acoustics.",
    ],
)
def test_the_volume_cited_by_its_editors_or_as_anonymous_is_the_volume(text: str) -> None:
    assert _answer(text, VOLUME) == VOLUME.seq


CHEMISTRY = work(
    10, "Enantioselective oxidative dearomatization of naphthols using hydrogen peroxide", ["Uyama", "Sato"],
    container="Chemistry Letters", year=2015, volume="44", issue="2", first_page="179-181",
)  # fmt: skip


def test_a_work_whose_volume_and_first_page_are_neither_printed_disagrees() -> None:
    # the same title and authors, printed in another journal's volume 46, issue 33
    text = (
        "Uyama, M., & Sato, N. (2015). Enantioselective oxidative dearomatization of naphthols using "
        "hydrogen peroxide. Abstracts Weekly, 46(33), 12."
    )
    d = _decide(text, CHEMISTRY)
    assert d.work is None
    assert "volume" in d.evidence.disagreed
    right = text.replace("Abstracts Weekly, 46(33), 12.", "Chemistry Letters, 44(2), 179–181.")
    assert _answer(right, CHEMISTRY) == CHEMISTRY.seq


def test_a_work_whose_first_author_the_reference_lists_later_is_not_answered() -> None:
    # a work whose first author the reference lists third is another deposit of the paper (its
    # authors in another order) or another paper of the team: no answer, and the evidence says why
    survey = work(
        11, "Biological surveys of the Kahuzi uplands and their endemic birds",
        ["Omondi", "Hartley", "Bussy"], container="Oryx", year=1999, volume="33", issue="4",
        first_page="301-322",
    )  # fmt: skip
    text = (
        "Hartley, J. A., Bussy, T. M., & Omondi, I. (1999). Biological surveys of the Kahuzi uplands and "
        "their endemic birds. Oryx, 33(4), 301–322."
    )
    d = _decide(text, survey)
    assert d.work is None and d.status == "unresolved" and d.evidence.score > 100
    in_order = text.replace(
        "Hartley, J. A., Bussy, T. M., & Omondi, I.", "Omondi, I., Hartley, J. A., & Bussy, T. M."
    )
    assert _decide(in_order, survey).status == "verified_exact"


ENTRY = work(
    12, "Comparative Hydrology", ["Singh"], container="Encyclopedia of Comparative Hydrology", year=2010,
    first_page="294-298", type="reference-entry",
)  # fmt: skip


def test_an_entry_whose_title_is_its_encyclopedias_name_is_not_another_entry() -> None:
    # another entry of the same encyclopedia: its name holds this entry's title
    text = (
        "Wilkes, L. C., & Sim, E. R. (2010). Language proficiency. Encyclopedia of Comparative Hydrology, "
        "573–576."
    )
    d = _decide(text, ENTRY)
    assert d.work is None
    assert "title" not in d.evidence.agreed


def test_a_person_a_title_names_is_not_its_first_author() -> None:
    # two letters of one issue, the same title naming people, one by a person the title names
    by_pratt = work(
        13, "Wilson : Pratt : Symes", ["Pratt"], container="Notes and Queries", year=1921, volume="9",
        issue="185", first_page="358",
    )  # fmt: skip
    by_swanzy = by_pratt._replace(seq=14, doi="10.5555/w14", authors=("Swanzy",))
    text = "Swanzy, H. B. (1921). Wilson : Pratt : Symes. Notes and Queries, 9(185), 358–358."
    assert _answer(text, by_pratt, by_swanzy) == by_swanzy.seq
    assert "first_author" not in _decide(text, by_pratt).evidence.agreed


ARTICLE_NUMBER = work(
    15, "Stripe order in the doped lattice model", ["Zhang", "Chen"], container="Physical Review B",
    year=2016,
    volume="93",
)  # fmt: skip


def test_a_work_without_a_first_page_matches_on_everything_else() -> None:
    # an article number: the catalogue holds no first page, the title-less reference prints none
    assert _answer("(1) Zhang, B.-X.; Chen, G. K.-L. Physical Review B 2016, 93.", ARTICLE_NUMBER) == 15
    # one field short (the other author, or the volume) is too little
    assert _answer("(1) Zhang, B.-X. Physical Review B 2016, 93.", ARTICLE_NUMBER) is None
    assert _answer("(1) Zhang, B.-X.; Chen, G. K.-L. Physical Review B 2016.", ARTICLE_NUMBER) is None
