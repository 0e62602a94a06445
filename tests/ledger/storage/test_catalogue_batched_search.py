"""A batch's catalogue search (ledger/storage/catalogue_store.py `catalogue_search`) gives each text the
candidates it gets searched alone, one set of words per statement, a tier at a time; and it costs a
bounded number of statements however many texts the batch holds: one for the works of the rare words,
which are read whole, and one per round for the others, every text's sets in it. Run on the backend
under test (LEDGER_TEST_BACKEND), over a real-shaped slice of the evaluation catalogue and its
references."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest

from ledger.model.works import CatalogueWork
from ledger.storage import catalogue_store
from ledger.storage.catalogue_store import SqlCatalogue
from ledger.storage.derived import catalogue as rules
from ledger.storage.sql_store import SqlStore
from service.ledger import Ledger
from service.resolver.match import SEARCH_LIMIT, query_text, read
from service.sources import SourceFile
from service.sources.works import NAME, ingest_works
from tests.conftest import NewDb
from tests.eval_slice import AT, ref_inputs, tune_references, works_slice

WORKS = 2_000  # the first works of the catalogue file
REFS = 200  # references of the tune split
ROUNDS = 2**rules.RAREST - 1  # the sets of a text's words a search may ask: one round each, at most


@pytest.fixture(scope="module")
def texts() -> list[str]:
    _, dois = works_slice(WORKS)
    found = (query_text(read(i).view) for i in ref_inputs(tune_references(dois, REFS)))
    return [t for t in found if t]


@pytest.fixture
def ledger(new_db: NewDb) -> Iterator[Ledger]:
    works, _ = works_slice(WORKS)
    led = Ledger(new_db())
    ingest_works(led, SourceFile(NAME, io.BytesIO(works), AT))
    led.catalogue  # noqa: B018 - indexed up to the head before anything is counted
    yield led
    led.close()


def _store(led: Ledger) -> SqlStore:
    store = led.store
    assert isinstance(store, SqlStore)
    return store


def one_at_a_time(cat: SqlCatalogue, text: str, limit: int) -> list[CatalogueWork]:
    """A text's candidates searched alone: its tiers asked in order, each set of words in a statement
    of its own (what the index answers for one set, as `_holding` asks it)."""
    store = cat.store
    words = rules.search_tokens(text)
    with store.reading() as conn:
        docs = {
            w: int(n)
            for w in words
            for (n,) in store.query(conn, "SELECT docs FROM catalogue_terms WHERE term = ?", (w,)).fetchall()
        }
        total = int(store.query(conn, "SELECT COUNT(*) FROM catalogue_works").fetchone()[0])
        ranking = rules.Ranking(rules.looked_for(words, docs), docs, total, limit)
        while asks := ranking.asks():
            found: dict[tuple[str, ...], frozenset[int]] = {}
            for a in asks:
                found.update(cat._holding(conn, [a], limit))
            ranking.take(found)
        picked = rules.cut(ranking.tiers, limit)
        works = cat._by_seqs(conn, picked)
    return [works[s] for s in picked]


def _whole(monkeypatch: pytest.MonkeyPatch, n: int) -> None:
    """Texts whose words are held by at most n works read them whole (the rule and the read's limit)."""
    monkeypatch.setattr(rules, "WHOLE", n, raising=False)
    monkeypatch.setattr(catalogue_store, "WHOLE", n, raising=False)


def _seqs(lists: list[list[CatalogueWork]]) -> list[list[int]]:
    return [[w.seq for w in found] for found in lists]


@pytest.mark.parametrize(
    "whole,budget",
    [
        (rules.WHOLE, rules.MATCH_BUDGET),  # as it is: most texts of real references read words whole
        (10**9, rules.MATCH_BUDGET),  # every text reads its words whole
        (0, rules.MATCH_BUDGET),  # none does: each searches a tier a round
        (0, 40),  # and needs two words of a set, as texts of common words do
    ],
)
@pytest.mark.parametrize("limit", [1, SEARCH_LIMIT])
def test_a_batch_gives_each_text_the_candidates_it_gets_alone(
    ledger: Ledger,
    texts: list[str],
    limit: int,
    whole: int,
    budget: int,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _whole(monkeypatch, whole)
    monkeypatch.setattr(rules, "MATCH_BUDGET", budget)
    cat = _store(ledger).catalogue
    batched = _seqs(cat.catalogue_search(texts, limit))
    alone = _seqs([one_at_a_time(cat, t, limit) for t in texts])
    assert batched == alone
    # not trivially equal: most texts find works, and some fill the limit
    assert sum(1 for x in batched if x) > len(texts) * 0.9
    assert any(len(x) == limit for x in batched)


def _statements(ledger: Ledger, texts: list[str]) -> list[str]:
    store = _store(ledger)
    store.trace = []
    try:
        store.catalogue.catalogue_search(texts, SEARCH_LIMIT)
        return store.trace
    finally:
        store.trace = None


def test_a_batch_of_rare_words_is_one_read_whatever_its_size(
    ledger: Ledger, texts: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # every text reads its words whole: the read's own BEGIN and COMMIT, the words' counts, the works
    # of the words, the works picked; no round
    _whole(monkeypatch, 10**9)
    for batch in (texts[:5], texts):
        assert len(_statements(ledger, batch)) == 5


@pytest.mark.parametrize("budget", [40, 0])
def test_a_batch_searched_a_tier_a_round_costs_a_round_a_tier_at_most(
    ledger: Ledger, texts: list[str], budget: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    _whole(monkeypatch, 0)
    monkeypatch.setattr(rules, "MATCH_BUDGET", budget)
    counts = [len(_statements(ledger, batch)) for batch in (texts[:10], texts)]
    assert all(n <= 5 + ROUNDS for n in counts)
    assert counts[-1] > 6  # some texts took more than one round
