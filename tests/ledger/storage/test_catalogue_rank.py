"""The ranking a catalogue search cuts by (ledger/storage/derived/catalogue.py `tiers`, `cut`): the
summed rarity of the distinct words a work holds, then seq, whatever ids the backend keeps."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.storage.derived import catalogue
from ledger.storage.derived.catalogue import cut, needed, tiers, weight

WORDS = ["alpha", "beta", "gamma", "delta"]


def brute(
    words: list[str], docs: dict[str, int], total: int, held: dict[int, set[str]], limit: int
) -> list[int]:
    """The same ranking, spelled out: every work that holds what `needed` asks, by points then seq."""
    least, must = needed(words, docs)
    points = {}
    for seq, ws in held.items():
        mine = ws & set(words)
        if len(mine) >= least and (must is None or must in mine) and mine:
            points[seq] = sum(weight(docs[w], total) for w in mine)
    return sorted(points, key=lambda s: (-points[s], s))[:limit]


@given(
    held=st.dictionaries(st.integers(1, 400), st.sets(st.sampled_from(WORDS)), max_size=60),
    docs=st.fixed_dictionaries({w: st.integers(1, 5_000) for w in WORDS}),
    limit=st.integers(1, 30),
    offset=st.integers(0, 10_000),
)
def test_tiers_and_cut_rank_by_points_then_seq(
    held: dict[int, set[str]], docs: dict[str, int], limit: int, offset: int
) -> None:
    total = 10_000
    # the backend's own ids (SQLite's rowids) are unrelated to seq: the order is by seq all the same
    local = {seq: (seq * 7919 + offset) % 1_000_003 for seq in held}
    seq_of = {i: s for s, i in local.items()}
    postings = {w: frozenset(local[s] for s, ws in held.items() if w in ws) for w in WORDS}
    got = [seq_of[i] for i in cut(tiers(WORDS, docs, total, postings), limit, seq_of)]
    assert got == brute(WORDS, docs, total, held, limit)


@pytest.mark.parametrize(
    "docs,need",
    [
        ({"alpha": 10, "beta": 20, "gamma": 5, "delta": 1}, (1, None)),
        ({"alpha": 10, "beta": 9_000, "gamma": 9_000, "delta": 9_000}, (2, "alpha")),
        ({"alpha": 3_000, "beta": 3_000, "gamma": 3_000, "delta": 3_000}, (2, None)),
    ],
)
def test_past_the_budget_a_work_needs_two_words(docs: dict[str, int], need: tuple[int, str | None]) -> None:
    assert needed(WORDS, docs) == need


def test_a_rarer_word_outweighs_a_commoner_one() -> None:
    assert weight(1, 10_000) > weight(100, 10_000) > weight(10_000, 10_000) >= 1
    # a work holding the rare word ranks before one holding the common word, though its seq is later
    postings = {"alpha": frozenset({2}), "beta": frozenset({1})}
    docs = {"alpha": 1, "beta": 100}
    assert cut(tiers(["alpha", "beta"], docs, 10_000, postings), 2, {1: 1, 2: 2}) == [2, 1]
    assert sum(docs.values()) < catalogue.MATCH_BUDGET
