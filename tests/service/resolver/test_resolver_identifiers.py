"""Identifiers as references print them: each form read, broken ones named malformed."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from service.resolver.identifiers import find, from_fields, read_arxiv


@pytest.mark.parametrize(
    ("text", "kind", "value"),
    [
        ("doi:10.1000/abc.def", "doi", "10.1000/abc.def"),
        ("DOI: 10.1000/ABC.def.", "doi", "10.1000/abc.def"),
        ("https://doi.org/10.1145/3458817.3476205).", "doi", "10.1145/3458817.3476205"),
        ("http://dx.doi.org/10.1016/j.cell.2020.01.001", "doi", "10.1016/j.cell.2020.01.001"),
        ("Nature 521, 436 (2015). 10.1038/nature14539", "doi", "10.1038/nature14539"),
        (
            "(doi:10.1002/(SICI)1097-0258(19980815)17:15<1661::AID-SIM968>3.0.CO;2-2)",
            "doi",
            "10.1002/(sici)1097-0258(19980815)17:15<1661::aid-sim968>3.0.co;2-2",
        ),
        ("doi:10.1000/abc-\ndef", "doi", "10.1000/abc-def"),
        ("https://doi.org/\n10.1000/xyz", "doi", "10.1000/xyz"),
        ("arXiv:2101.00001", "arxiv", "2101.00001"),
        ("arXiv:2101.00001v3", "arxiv", "2101.00001"),
        ("arXiv preprint arXiv:1810.04805, 2018", "arxiv", "1810.04805"),
        ("arXiv: 2101.0 0001", "arxiv", "2101.00001"),
        ("arXiv:\n2101.00001", "arxiv", "2101.00001"),
        ("arXiv:21O1.OOOO1", "arxiv", "2101.00001"),
        ("arXiv:0704.0001", "arxiv", "0704.0001"),
        ("https://arxiv.org/abs/2210.02414 [cs.CL]", "arxiv", "2210.02414"),
        ("arxiv.org/pdf/2210.02414v2", "arxiv", "2210.02414"),
        ("CoRR abs/1810.04805", "arxiv", "1810.04805"),
        ("hep-th/9901001", "arxiv", "hep-th/9901001"),
        ("arXiv:hep-th/9901001v2", "arxiv", "hep-th/9901001"),
        ("math.AG/0309136", "arxiv", "math.AG/0309136"),
        ("https://doi.org/10.48550/arXiv.2307.09288", "arxiv", "2307.09288"),
    ],
)
def test_each_form_is_read(text: str, kind: str, value: str) -> None:
    found = find(text)
    assert [(i.kind, i.value) for i in found.idents] == [(kind, value)]
    assert found.malformed == []


def test_a_doi_broken_at_its_hyphen_is_also_read_without_it() -> None:
    (ident,) = find("doi:10.1000/abc-\n def").idents
    assert ident.keys[:2] == ("10.1000/abc-def", "10.1000/abcdef")


@pytest.mark.parametrize(
    ("text", "malformed"),
    [
        # shaped like an identifier but unreadable: reported as malformed
        ("doi: 10.1000", True),
        ("https://doi.org/abc", True),
        ("arXiv:2101.0001", True),
        ("arXiv:1513.00001", True),
        ("arXiv:2101.000001", True),
        ("arXiv:21010001", True),
        ("arXiv:0612.12345", True),
        # no identifier at all, whatever the words
        ("Doi, T. and Sato, K. Fast things. 2020", False),
        ("arXiv: Some title", False),
        ("Accessed: 2025-06", False),
        ("pp. 10.5-11", False),
        ("Proc. 10th Conf.", False),
    ],
)
def test_no_identifier_is_read_where_none_is_readable(text: str, malformed: bool) -> None:
    found = find(text)
    assert found.idents == []
    assert bool(found.malformed) is malformed, found.malformed


def test_the_rest_keeps_the_text_without_the_identifiers() -> None:
    found = find("Devlin J. BERT. arXiv:1810.04805 [cs.CL] https://arxiv.org/abs/1810.04805 doi:10.1/x")
    assert "1810" not in found.rest and "10.1/x" not in found.rest
    assert "BERT" in found.rest


def test_fields_are_read_like_text() -> None:
    idents = from_fields("https://doi.org/10.1000/ABC", ["arXiv:2101.00001v2", None])
    assert [(i.kind, i.value) for i in idents] == [("doi", "10.1000/abc"), ("arxiv", "2101.00001")]


@given(st.integers(7, 30), st.integers(1, 12), st.integers(1, 9999))
def test_new_style_ids_round_trip(yy: int, mm: int, n: int) -> None:
    digits = 5 if yy >= 15 else 4
    if (yy, mm) < (7, 4):
        return
    aid = f"{yy:02d}{mm:02d}.{n:0{digits}d}"
    assert read_arxiv(aid) == aid
    assert read_arxiv(aid + "v2") == aid
    (ident,) = find(f"Some Author. Title. arXiv:{aid}. 2020").idents
    assert ident.value == aid
