"""An identifier naming a work whose catalogue entry has no authors (an arXiv paper the ledger holds):
the names of an author list ending "et al" are not held against it, the reference's other words are."""

from __future__ import annotations

import pytest

from ledger.model.resolving import RefInput
from ledger.model.works import Reference
from service.resolver.match import resolve_many
from tests.service.resolver.catalogue_fake import FakeCatalogue, work

GOPHER = "Scaling Language Models: Methods, Analysis & Insights from Training Gopher"
CATALOGUE = [
    work(1, GOPHER, [], arxiv_id="2112.11446", source="arxiv", year=2021, type=None),
    work(2, "Deep widgets", ["Smith"], doi="10.1000/widgets", container="Widget Letters", year=2021),
]
NAMES = "Rae, Sebastian Borgeaud, Trevor Cai, Katie Millican"


def decide(text: str) -> tuple[str, int | None]:
    (d,) = resolve_many([RefInput("o1", Reference(unstructured=text), None)], FakeCatalogue(CATALOGUE))
    return d.status, None if d.work is None else d.work.seq


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"{NAMES}, et al. 2022. arXiv:2112.11446", ("verified_exact", 1)),
        (f"{NAMES} et al 2022 arXiv:2112.11446", ("verified_exact", 1)),
        # the same names not marked as a list: words the work cannot explain, as before
        (f"{NAMES}. 2022. arXiv:2112.11446", ("metadata_mismatch", None)),
        # words after the list are the reference's own title, and not this work's
        (
            "Rae et al. Quantum widgets for sorting every lattice. 2022. arXiv:2112.11446",
            ("metadata_mismatch", None),
        ),
        # a work that names its authors explains its own: other names still count against it
        ("Jones, Brown, Taylor, Wilson, et al. 2021. doi:10.1000/widgets", ("metadata_mismatch", None)),
    ],
)
def test_names_before_et_al_are_not_held_against_a_work_without_authors(
    text: str, expected: tuple[str, int | None]
) -> None:
    assert decide(text) == expected
