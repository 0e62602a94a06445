"""With the budgets scaled to a slice of 3,000 works as a million works meet them (most texts need two
words, searches stop a tier early), SQLite and PostgreSQL still give the same candidates in the same order."""

from __future__ import annotations

import pytest

from ledger.model.resolving import RefInput
from ledger.storage.derived import catalogue
from service.ledger import Ledger
from service.resolver.match import SEARCH_LIMIT, query_text, read
from tests.ledger.storage.test_catalogue_same_candidates import both, inputs

__all__ = ["both", "inputs"]  # the fixtures: two ledgers with the same slice, and its references


@pytest.mark.process  # a PostgreSQL server beside SQLite
@pytest.mark.parametrize("limit", [1, SEARCH_LIMIT, 200])
def test_scaled_budgets_give_both_backends_the_same_candidates(
    both: list[Ledger], inputs: list[RefInput], limit: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    texts = [t for t in (query_text(read(i).view) for i in inputs) if t]
    monkeypatch.setattr(catalogue, "MATCH_BUDGET", 100)
    monkeypatch.setattr(catalogue, "COMMON", 20)
    needs: list[tuple[int, str | None]] = []
    real = catalogue.needed

    def spy(words: list[str], docs: dict[str, int]) -> tuple[int, str | None]:
        needs.append(real(words, docs))
        return needs[-1]

    monkeypatch.setattr(catalogue, "needed", spy)
    lite, pg = (
        [[(w.seq, w.doi) for w in f] for f in led.catalogue.catalogue_search(texts, limit)] for led in both
    )
    assert lite == pg
    # the budgets bit: two words were needed, with and without one rare word among them
    assert sum(1 for n in needs if n == (2, None)) > len(texts) / 10
    assert any(n[0] == 2 and n[1] is not None for n in needs)
    assert sum(1 for x in lite if x) > len(texts) / 2
    assert limit > SEARCH_LIMIT or any(len(x) == limit for x in lite)  # a cut reached the limit
