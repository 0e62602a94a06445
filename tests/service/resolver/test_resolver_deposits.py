"""Works a real catalogue holds beside the cited one: the same paper deposited twice (its authors in
another order), a book's front matter, another paper at the same volume and page of another year, a
notice signed by a body, and a team's paper at a conference held with neither volume nor pages."""

from __future__ import annotations

import msgspec
import pytest

from ledger.model.resolving import Decision, RefInput
from ledger.model.works import CatalogueWork, Reference
from service.resolver.match import resolve_many
from tests.service.resolver.catalogue_fake import FakeCatalogue, work

# one survey deposited twice: the second deposit lists its authors in another order
KEPT = work(
    1, "A census of cliff-nesting seabirds on the northern fjords", ["Halvorsen", "Mbeki", "Tanaka"],
    container="Polar Fauna", year=2004, volume="33", issue="4", first_page="301-322",
)  # fmt: skip
REORDERED = KEPT._replace(seq=2, doi="10.5555/w2", authors=("Mbeki", "Halvorsen", "Tanaka"))
BOOK = work(3, "A Local Reform in the Salt Districts", ["Aubert"], year=1973, type="book")
OLDER = work(
    4, "On the theory of ionic drift", ["Okabe"], container="Reports of Theoretical Physics", year=1948,
    volume="3", issue="4", first_page="338-348",
)  # fmt: skip
NOTICE = work(
    5, "Board announces a recovery service for coolant gases", ["Coolant Board"],
    container="Journal of Refrigeration Practice", year=1989, volume="12", issue="4", first_page="237",
)  # fmt: skip
TEAM = work(
    6, "Gated imaging of retinal flow", ["Brennan", "Finlay", "Spence"],
    container="2017 Computing in Ophthalmology Conference", year=2017, type="proceedings-article",
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
        "Halvorsen, R., Mbeki, T., & Tanaka, Y. (2004). A census of cliff-nesting seabirds on the northern "
        "fjords. Polar Fauna, 33(4), 301–322.",
        "(1) Halvorsen, R.; Mbeki, T.; Tanaka, Y. Polar Fauna 2004, 33, 301–322.",
        "1 R. Halvorsen, T. Mbeki, and Y. Tanaka, Polar Fauna 33, 301 (2004).",
    ],
)
def test_of_two_deposits_the_one_whose_first_author_leads_is_answered(text: str) -> None:
    # alike in every field but the order of their authors: whichever was held first, the deposit whose
    # first author the reference prints first is the answer, and the other alone is none
    assert _answer(text, REORDERED, KEPT) == KEPT.seq
    assert _answer(text, KEPT, REORDERED) == KEPT.seq
    assert _answer(text, REORDERED) is None


def test_a_first_authors_name_holding_another_authors_is_still_first() -> None:
    # "Ban-Leong Ooi" holds "Leong", the name of the third author: the first author still leads
    paper = work(
        7, "A drain current model for field-effect transistors", ["Ban-Leong Ooi", "Ma", "Leong"],
        container="Transactions on Microwave Devices", year=2002, volume="50", issue="4",
        first_page="1188-1192",
    )  # fmt: skip
    text = "1 Ban-Leong Ooi, J.Y. Ma, and M.S. Leong, Transactions on Microwave Devices 50, 1188 (2002)."
    assert _answer(text, paper) == paper.seq


@pytest.mark.parametrize(
    "text",
    [
        "Frontmatter. (1973). A Local Reform in the Salt Districts.",
        "“Contents.” A Local Reform in the Salt Districts (1973): n. pag.",
        ". Index. A Local Reform in the Salt Districts. 1973. . . ",
    ],
)
def test_a_books_front_matter_is_not_the_book(text: str) -> None:
    d = _decide(text, BOOK)
    assert d.work is None and "title" in d.evidence.disagreed
    # the book cited whole is still the book
    assert _answer("Aubert, J. (1973). A Local Reform in the Salt Districts.", BOOK) == BOOK.seq


def test_a_book_titled_with_a_matter_word_is_itself() -> None:
    index = work(8, "An Index of Salt District Charters", ["Aubert"], year=1975, type="book")
    assert _answer("Aubert, J. (1975). An Index of Salt District Charters.", index) == index.seq


@pytest.mark.parametrize(
    "text",
    [
        "Okabe, T. (1950). On the theory of ionic drift. Reports of Theoretical Physics, 3(4), 338–348.",
        "Okabe, T. “On the Theory of Ionic Drift.” Reports of Theoretical Physics 3.4 (1950): 338–348.",
    ],
)
def test_a_reference_of_another_year_is_another_work_however_its_numbers_agree(text: str) -> None:
    # title, volume, first page, author and journal agree; the year is two apart: another printing
    d = _decide(text, OLDER)
    assert d.work is None and "year" in d.evidence.disagreed
    assert _answer(text.replace("1950", "1948"), OLDER) == OLDER.seq


@pytest.mark.parametrize(
    "text",
    [
        "(1) Lindgren, C. Journal of Refrigeration Practice 1989, 12, 237.",
        "[1] C. Lindgren, Journal of Refrigeration Practice 12 (1989) 237.",
    ],
)
def test_a_title_less_reference_naming_another_author_is_another_work(text: str) -> None:
    # the journal, volume, first page and year agree, but the name printed is none of the work's
    assert _answer(text, NOTICE) is None
    # printed without a name (a structured reference's fields), or with the body's name, it matches
    assert _answer("(1) Journal of Refrigeration Practice 1989, 12, 237.", NOTICE) == NOTICE.seq
    assert _answer(text.replace("Lindgren", "Board"), NOTICE) == NOTICE.seq


@pytest.mark.parametrize(
    "text",
    [
        "(1) Brennan, P.; Finlay, D.; Spence, M. 2017 Computing in Ophthalmology Conference 2017.",
        "1 P. Brennan, D. Finlay, and M. Spence, 2017 Computing in Ophthalmology Conference (2017).",
    ],
)
def test_a_teams_conference_paper_without_pages_is_found_by_its_whole_team(text: str) -> None:
    assert _answer(text, TEAM) == TEAM.seq
    # a team of which the reference names part is not enough: two papers of one team are common
    partial = text.replace("Finlay, D.; ", "").replace("D. Finlay, ", "")
    assert _answer(partial, TEAM) is None
    # nor one author alone
    alone = work(9, "Gated imaging", ["Brennan"], container=TEAM.container, year=2017)
    assert _answer(text, alone) is None


EDITORIAL = work(
    10, "Editorial board", [], container="Bulletin of Powder Metallurgy", year=2002, volume="9", issue="2",
    first_page="73-82",
)  # fmt: skip
CHAPTER = work(
    11, "Innovation in broadcast audiences", [], container="After Television", year=2015,
    first_page="145-173", type="book-chapter",
)  # fmt: skip
UNDATED = work(
    12, "Field codes", ["Finkl"], container="General Geology", first_page="240-243", type="book-chapter"
)


@pytest.mark.parametrize(
    ("text", "held"),
    [
        ("(1) Bulletin of Powder Metallurgy 2002, 9, 73–82.", EDITORIAL),  # a one-digit volume
        ("[1] Bulletin of Powder Metallurgy 9 (2002) 73.", EDITORIAL),
        ("(1) After Television 2015, 145–173.", CHAPTER),  # a chapter held without authors or volume
        ("(1) Finkl, C. W. General Geology 240–243.", UNDATED),  # a chapter held without a year
    ],
)
def test_a_title_less_reference_agreeing_with_every_field_the_work_holds_is_answered(
    text: str, held: CatalogueWork
) -> None:
    assert _answer(text, held) == held.seq
    # another first page is another item of the issue or book
    assert _answer(text.replace("73", "75").replace("145", "147").replace("240", "244"), held) is None


def test_every_held_field_means_two_of_them_at_least() -> None:
    # a work holding only its container beside its page: the page and the journal alone are too little
    bare = work(13, "Notes", [], container="After Television", first_page="145-173")
    assert _answer("(1) After Television 145–173.", bare) is None


@pytest.mark.parametrize(
    "fields",
    [
        {"journal-title": "Opto. Lett.", "volume": "19", "issue": "3", "first-page": "225", "year": "2013"},
        {"journal-title": "Optoelectron. Lett.", "volume": "019", "first-page": "225", "year": "2013"},
    ],
)
def test_a_structured_references_volume_and_first_page_find_the_work(fields: dict[str, str]) -> None:
    # its abbreviated journal shares no word with the work's: the catalogue is asked for its stated
    # volume and first page, and the work is found and validated field by field
    held = work(
        14, "A label-free biosensor in porous silicon", ["Liu", "Chen"], container="Optoelectronics Letters",
        year=2013, volume="19", issue="3", first_page="225",
    )  # fmt: skip
    ref = msgspec.convert(fields, Reference)
    (d,) = resolve_many([RefInput("r", ref, None)], FakeCatalogue([held]))
    assert d.work == held and d.status == "verified_fuzzy"
    wrong_page = msgspec.convert({**fields, "first-page": "226"}, Reference)
    (d,) = resolve_many([RefInput("r", wrong_page, None)], FakeCatalogue([held]))
    assert d.work is None
