"""A search's ranking found a tier at a time (ledger/storage/derived/catalogue.py `subsets`, `Ranking`):
the index is asked for the works of least seq holding all of a set of words, and the cut is the one
whole postings give (`tiers`, `cut`)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.storage.derived.catalogue import (
    COMMON,
    MATCH_BUDGET,
    POSTINGS,
    Ranking,
    cut,
    looked_for,
    subsets,
    tiers,
)
from tests.ledger.storage.test_catalogue_rank import WORDS, brute

TOTAL = 1_000_000


def index(
    held: dict[int, set[str]], limit: int, asks: list[tuple[str, ...]]
) -> dict[tuple[str, ...], frozenset[int]]:
    """What a backend answers: for each set, the `limit` works of least seq holding all its words."""
    return {a: frozenset(sorted(s for s, ws in held.items() if set(a) <= ws)[:limit]) for a in asks}


def rank(
    words: list[str], docs: dict[str, int], held: dict[int, set[str]], limit: int
) -> tuple[list[int], int]:
    """The cut a search gives, and how many sets it asked the index for."""
    r = Ranking(words, docs, TOTAL, limit)
    asked = 0
    while asks := r.asks():
        asked += len(asks)
        r.take(index(held, limit, asks))
    return cut(r.tiers, limit, {s: s for s in held}), asked


@given(
    held=st.dictionaries(st.integers(1, 400), st.sets(st.sampled_from(WORDS)), max_size=80),
    docs=st.fixed_dictionaries({w: st.integers(1, 60_000) for w in WORDS}),
    words=st.lists(st.sampled_from(WORDS), min_size=0, max_size=4, unique=True),
    limit=st.integers(1, 30),
)
def test_asked_a_tier_at_a_time_the_cut_is_that_of_whole_postings(
    held: dict[int, set[str]], docs: dict[str, int], words: list[str], limit: int
) -> None:
    got, _ = rank(words, docs, held, limit)
    postings = {w: frozenset(s for s, ws in held.items() if w in ws) for w in words}
    assert got == cut(tiers(words, docs, TOTAL, postings), limit, {s: s for s in held})
    assert got == brute(words, docs, TOTAL, held, limit)


def test_a_search_stops_once_it_holds_the_limit() -> None:
    docs = {w: 30_000 for w in WORDS}
    # 25 works hold all four words: the first tier fills a limit of 20, no other set is asked
    held = {s: set(WORDS) for s in range(1, 26)} | {s: {"alpha", "beta"} for s in range(26, 500)}
    got, asked = rank(WORDS, docs, held, 20)
    assert got == list(range(1, 21))
    assert asked == 1


@pytest.mark.parametrize(
    "docs,first,count",
    [
        # few works in all: any one word selects, so every non-empty set is a tier
        ({"alpha": 10, "beta": 20, "gamma": 5, "delta": 1}, ("alpha", "beta", "delta", "gamma"), 15),
        # past the budget: two words at least
        ({w: MATCH_BUDGET for w in WORDS}, ("alpha", "beta", "delta", "gamma"), 11),
        # one rare word among common ones: it and at least one other
        (
            {"alpha": 10, "beta": COMMON + 1, "gamma": 9_000, "delta": 9_000},
            ("alpha", "beta", "delta", "gamma"),
            7,
        ),
    ],
)
def test_the_sets_asked_are_those_needed_allows_heaviest_first(
    docs: dict[str, int], first: tuple[str, ...], count: int
) -> None:
    sets = subsets(WORDS, docs, TOTAL)
    assert len(sets) == count
    assert sets[0][1] == first
    assert [p for p, _ in sets] == sorted((p for p, _ in sets), reverse=True)


@pytest.mark.parametrize(
    "docs,chosen",
    [
        ({"alpha": COMMON}, ["alpha"]),  # one word, rare enough to name a work
        ({"alpha": COMMON + 1}, []),  # one common word names none
        ({"alpha": COMMON + 1, "beta": 5}, ["alpha", "beta"]),  # with another, it ranks
        ({"alpha": COMMON + 1, "beta": POSTINGS + 1}, []),  # the other too common to look for
        ({"alpha": 7, "beta": POSTINGS + 1}, ["alpha"]),
        ({}, []),  # no work holds any
    ],
)
def test_looked_for(docs: dict[str, int], chosen: list[str]) -> None:
    assert looked_for(["alpha", "beta"], docs) == chosen
