"""The SBMV baseline: Crossref's validation similarity, and one answer per reference."""

from __future__ import annotations

import pytest

from ledger.model.resolving import RefInput
from ledger.model.works import Reference
from service.resolver.sbmv import resolve_many, similarity
from tests.service.resolver import sample_works as s
from tests.service.resolver.catalogue_fake import FakeCatalogue


def test_the_candidate_whose_numbers_the_string_holds_is_more_similar() -> None:
    text = "Smith, J.; Doe, A. J. Am. Chem. Soc. 2019, 141, 1234–1240."
    assert similarity(text, s.WIDGETS) > similarity(text, s.WIDGETS_OTHER)


def test_numbers_no_field_explains_count_against() -> None:
    text = "Smith, J. Cooperative catalysis of widget formation. J. Am. Chem. Soc. 2019, 141, 1234."
    assert similarity(text, s.WIDGETS) > similarity(text + " 77 88 99", s.WIDGETS)


def test_an_abbreviated_page_range_is_completed() -> None:
    assert similarity("Smith J. Foo. J Am Chem Soc 2019;141:1234-40.", s.WIDGETS) > 0.5


@pytest.mark.parametrize(
    ("text", "seq"),
    [
        ("Smith, J.; Doe, A. J. Am. Chem. Soc. 2019, 141, 1234–1240.", s.WIDGETS.seq),
        ("K. He et al., Deep residual learning for image recognition, CVPR 2016, pp. 770-778.", s.RESNET.seq),
        ("Accessed: 2025-06", None),
        ("", None),
    ],
)
def test_decisions(text: str, seq: int | None) -> None:
    (d,) = resolve_many([RefInput("o", Reference(unstructured=text), None)], FakeCatalogue(s.CATALOGUE))
    assert (d.work.seq if d.work else None) == seq
    assert d.status == ("verified_fuzzy" if seq else "unresolved")
    assert d.evidence.method == "sbmv"
