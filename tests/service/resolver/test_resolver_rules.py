"""Rules the matcher keeps for every reference: an unknown identifier never picks another work, and
decisions depend neither on the order candidates come in nor on the batch a reference is in."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.model.resolving import RefInput
from ledger.model.works import CatalogueWork, Reference
from service.resolver.match import resolve_many
from tests.service.resolver import sample_works as s
from tests.service.resolver.catalogue_fake import FakeCatalogue


def _render(w: CatalogueWork, style: int, drop: int) -> str:
    authors = list(w.authors)[: max(0, len(w.authors) - drop)]
    names = ", ".join(authors)
    title = w.title or ""
    year = str(w.year or "")
    nums = f"{w.volume or ''}, {w.first_page or ''}"
    return [
        f"{names} ({year}). {title}. {w.container or ''}, {nums}.",
        f'{names}, "{title}," {w.container or ""}, vol. {w.volume}, pp. {w.first_page}, {year}.',
        f"{names}. {w.container or ''} {year}, {nums}.",
        f"{title}",
        f"{names.upper()} {title.lower()} {year}",
    ][style]


references = st.builds(
    _render, st.sampled_from(s.CATALOGUE), st.integers(0, 4), st.integers(0, 3)
) | st.sampled_from(
    ["Accessed: 2025-06", "Brown, Mann, Ryder, Subbiah", "", "Proceedings of the 25th Conference"]
)


def _decide(texts: list[str], catalogue: FakeCatalogue) -> list[tuple[str, int | None]]:
    ds = resolve_many(
        [RefInput(str(n), Reference(unstructured=t), None) for n, t in enumerate(texts)], catalogue
    )
    return [(d.status, d.work.seq if d.work else None) for d in ds]


@settings(max_examples=150, deadline=None)
@given(references, st.text("abcdefghijklmnopqrstuvwxyz0123456789", min_size=3, max_size=12), st.booleans())
def test_an_unknown_doi_never_picks_another_work(text: str, suffix: str, in_front: bool) -> None:
    doi = f"doi:10.9999/{suffix}"
    with_doi = f"{doi} {text}" if in_front else f"{text} {doi}"
    (before,) = _decide([text], FakeCatalogue(s.CATALOGUE))
    (after,) = _decide([with_doi], FakeCatalogue(s.CATALOGUE))
    assert after[1] is None or after[1] == before[1]
    assert after[0] != "verified_exact"


@settings(max_examples=60, deadline=None)
@given(st.lists(references, min_size=1, max_size=6), st.permutations(s.CATALOGUE))
def test_decisions_depend_on_no_order(texts: list[str], works: list[CatalogueWork]) -> None:
    expected = _decide(texts, FakeCatalogue(s.CATALOGUE))
    assert _decide(texts, FakeCatalogue(works, reverse=True)) == expected
    # alone or in a batch, in any place in it
    assert [_decide([t], FakeCatalogue(s.CATALOGUE))[0] for t in texts] == expected
    assert _decide(texts[::-1], FakeCatalogue(works))[::-1] == expected


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(s.CATALOGUE), st.integers(0, 4), st.integers(0, 3))
def test_a_held_out_work_is_unresolved(held_out: CatalogueWork, style: int, drop: int) -> None:
    # the catalogue without the work a reference renders, nor any work of the same title (its other
    # version): nothing left is that work
    title = (held_out.title or "").lower()
    rest = [w for w in s.CATALOGUE if (w.title or "").lower() != title]
    (d,) = _decide([_render(held_out, style, drop)], FakeCatalogue(rest))
    assert d == ("unresolved", None)
