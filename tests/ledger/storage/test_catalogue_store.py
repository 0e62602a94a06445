"""The resolver's catalogue on either backend (LEDGER_TEST_BACKEND=postgresql runs it on PostgreSQL):
the latest work.observed per DOI and the latest paper.observed per arXiv paper, found by key, by words
and by (volume, first page), and kept up with appends."""

from __future__ import annotations

import pytest

from ledger.model import events as ev
from ledger.model.doi import arxiv_key, doi_key
from ledger.model.works import Author, CatalogueWork, WorkData
from ledger.storage.derived.catalogue import first_page, fts_query, rarest, search_tokens, ts_query
from service.ledger import Ledger
from tests.conftest import NewDb
from tests.factories import paper, run_threads, ts

ZERO = "10.1109/sc41405.2020.00024"
GPIPE = "10.5555/3454287.3454297"


def work(
    doi: str,
    at: str,
    *,
    title: str | None = "ZeRO: Memory Optimizations Toward Training Trillion Parameter Models",
    authors: tuple[str, ...] = ("Rajbhandari", "Rasley"),
    container: str | None = "SC20",
    volume: str | None = None,
    pages: str | None = "1-16",
    arxiv_id: str | None = None,
    source: str = "crossref",
) -> ev.WorkObserved:
    data = WorkData(
        doi,
        source,
        title,
        [Author(a, "X.") for a in authors],
        container,
        2020,
        volume,
        None,
        pages,
        "proceedings-article",
        arxiv_id,
    )
    return ev.WorkObserved(observed_at=at, data=data)


def dois(found: list[CatalogueWork]) -> list[str]:
    return [w.doi or w.arxiv_id or "" for w in found]


def key(k: str | None) -> str:
    """A key made of a valid DOI or arXiv id (never None)."""
    assert k is not None
    return k


def test_an_empty_catalogue_answers_empty_lists(fresh_ledger: Ledger) -> None:
    cat = fresh_ledger.catalogue
    assert cat.catalogue_by_keys([ZERO, "nothing"]) == [[], []]
    assert cat.catalogue_search(["memory optimizations", ""], 10) == [[], []]
    assert cat.catalogue_by_volume_page([("1", "1")], 10) == [[]]


def test_a_work_is_found_by_its_doi_key_with_its_fields(fresh_ledger: Ledger) -> None:
    fresh_ledger.append([work(ZERO, ts(1), arxiv_id="1910.02054")])
    (found,) = fresh_ledger.catalogue.catalogue_by_keys(
        [key(doi_key("https://doi.org/10.1109/SC41405.2020.00024"))]
    )
    (w,) = found
    assert w == CatalogueWork(
        seq=1,
        observed_at=ts(1),
        source="crossref",
        doi=ZERO,
        arxiv_id="1910.02054",
        title="ZeRO: Memory Optimizations Toward Training Trillion Parameter Models",
        authors=("Rajbhandari", "Rasley"),
        container="SC20",
        year=2020,
        volume=None,
        issue=None,
        first_page="1",
        type="proceedings-article",
        first_seq=1,
    )
    # the arXiv id the work names finds it too
    assert dois(fresh_ledger.catalogue.catalogue_by_keys([key(arxiv_key("1910.02054"))])[0]) == [ZERO]


@pytest.mark.parametrize(
    "order",
    [
        pytest.param((1, 2), id="later-observed-appended-last"),
        pytest.param((2, 1), id="later-observed-appended-first"),
    ],
)
def test_the_latest_observation_of_a_doi_wins(fresh_ledger: Ledger, order: tuple[int, int]) -> None:
    titles = {1: "Old title", 2: "New title"}
    for step in order:
        fresh_ledger.append([work(ZERO, ts(step), title=titles[step])])
        fresh_ledger.catalogue  # noqa: B018 - indexed between the appends too
    (found,) = fresh_ledger.catalogue.catalogue_by_keys([ZERO])
    assert [w.title for w in found] == ["New title"]
    assert [w.observed_at for w in found] == [ts(2)]


def test_a_tie_in_observed_at_goes_to_the_later_seq(fresh_ledger: Ledger) -> None:
    fresh_ledger.append([work(ZERO, ts(1), title="First")])
    fresh_ledger.append([work(ZERO, ts(1), title="Second")])
    (found,) = fresh_ledger.catalogue.catalogue_by_keys([ZERO])
    assert [(w.title, w.seq) for w in found] == [("Second", 2)]


def test_a_re_observed_work_replaces_its_row_in_search_too(fresh_ledger: Ledger) -> None:
    fresh_ledger.append([work(ZERO, ts(1), title="Pipeline parallelism for giants")])
    assert dois(fresh_ledger.catalogue.catalogue_search(["pipeline giants"], 5)[0]) == [ZERO]
    fresh_ledger.append([work(ZERO, ts(2), title="Memory optimizations")])
    cat = fresh_ledger.catalogue
    assert cat.catalogue_search(["pipeline giants"], 5) == [[]]
    assert dois(cat.catalogue_search(["memory optimizations"], 5)[0]) == [ZERO]
    assert len(cat.catalogue_by_keys([ZERO])[0]) == 1


def test_papers_appear_by_either_key_form_with_year_and_no_authors(fresh_ledger: Ledger) -> None:
    fresh_ledger.append([paper("2509.02480", ts(1), title="MLP-Offload: Multi-Level Offloading")])
    fresh_ledger.append(
        [paper("2509.02480", ts(2), title="MLP-Offload: Breaking the GPU Memory Wall", version=2)]
    )
    cat = fresh_ledger.catalogue
    by_id, by_doi, bare = cat.catalogue_by_keys(
        [key(arxiv_key("2509.02480")), "10.48550/arXiv.2509.02480v2", "2509.02480"]
    )
    assert by_id == by_doi == bare
    (w,) = by_id
    assert (w.source, w.doi, w.arxiv_id, w.year, w.authors) == ("arxiv", None, "2509.02480", 2025, ())
    assert w.title == "MLP-Offload: Breaking the GPU Memory Wall"
    assert dois(cat.catalogue_search(["Breaking the GPU memory wall"], 3)[0]) == ["2509.02480"]


def test_keys_answer_each_in_order_with_repeats(fresh_ledger: Ledger) -> None:
    fresh_ledger.append([work(ZERO, ts(1)), work(GPIPE, ts(1), title="GPipe")])
    got = fresh_ledger.catalogue.catalogue_by_keys([GPIPE, "10.1/none", ZERO, GPIPE])
    assert [dois(x) for x in got] == [[GPIPE], [], [ZERO], [GPIPE]]


@pytest.mark.parametrize(
    "text",
    [
        "S. Rajbhandari, J. Rasley, ZeRO: memory optimizations toward training trillion parameter "
        "models, in: SC20, 2020, pp. 1-16.",
        "Rajbhandari S. ZeRO: Memory opti- mizations toward training trillion parameter mod- els. SC20",
        "ZeRO:Memoryoptimizations toward training trillionparameter models",
        "Rajbhandari, Rasley (2020) SC20",  # no title: authors and container
    ],
)
def test_search_finds_a_title_through_noise(fresh_ledger: Ledger, text: str) -> None:
    fresh_ledger.append(
        [
            work(ZERO, ts(1)),
            work(
                GPIPE, ts(1), title="GPipe: Efficient Training of Giant Neural Networks", authors=("Huang",)
            ),
            work(
                "10.1/other", ts(1), title="Attention is all you need", authors=("Vaswani",), container=None
            ),
        ]
    )
    (found,) = fresh_ledger.catalogue.catalogue_search([text], 2)
    assert dois(found)[0] == ZERO


def test_search_answers_per_text_at_most_limit(fresh_ledger: Ledger) -> None:
    fresh_ledger.append([work(f"10.1/w{i}", ts(1), title=f"Training models part {i}") for i in range(8)])
    got = fresh_ledger.catalogue.catalogue_search(["training models", "the of and", "nothing matches"], 3)
    assert [len(x) for x in got] == [3, 0, 0]
    # a generous limit gives every work that shares a word, on either backend
    (every,) = fresh_ledger.catalogue.catalogue_search(["models"], 50)
    assert sorted(dois(every)) == sorted(f"10.1/w{i}" for i in range(8))


def test_volume_and_first_page_find_works_without_titles(fresh_ledger: Ledger) -> None:
    fresh_ledger.append(
        [
            work("10.1/a", ts(1), title=None, volume="12", pages="345-350"),
            work("10.1/b", ts(1), title="B", volume="12", pages="345\u2013360"),
            work("10.1/c", ts(1), title="C", volume="12", pages="346"),
            work("10.1/d", ts(1), title="D", volume="XII", pages="e1002"),
        ]
    )
    got = fresh_ledger.catalogue.catalogue_by_volume_page(
        [(" 12", "345"), ("xii", "E1002"), ("12", "1"), ("12", "345")], 1
    )
    assert [dois(x) for x in got] == [["10.1/a"], ["10.1/d"], [], ["10.1/a"]]
    (both,) = fresh_ledger.catalogue.catalogue_by_volume_page([("12", "345")], 10)
    assert dois(both) == ["10.1/a", "10.1/b"]


def test_the_catalogue_follows_appends_made_after_a_read(fresh_ledger: Ledger) -> None:
    assert fresh_ledger.catalogue.catalogue_by_keys([ZERO]) == [[]]
    fresh_ledger.append([work(ZERO, ts(1))])
    assert dois(fresh_ledger.catalogue.catalogue_by_keys([ZERO])[0]) == [ZERO]
    assert fresh_ledger.store.catalogue.catalogue_indexed() == fresh_ledger.head().seq


def test_a_work_observed_streams_by_its_doi(fresh_ledger: Ledger) -> None:
    fresh_ledger.append([work(ZERO, ts(1)), work(ZERO, ts(2), title="Again")])
    streams = [(e.stream, e.stream_version) for e in fresh_ledger.store.read_log()]
    assert streams == [(f"work:{ZERO}", 1), (f"work:{ZERO}", 2)]


@pytest.mark.parametrize(
    "pages,first",
    [("123-130", "123"), ("e1002", "e1002"), (" 5 \u2013 9", "5"), ("", None), (None, None), ("1,3", "1")],
)
def test_first_page(pages: str | None, first: str | None) -> None:
    assert first_page(pages) == first


@pytest.mark.parametrize(
    "text,tokens",
    [
        ("Language mod- els are few-shot learners", ["language", "models", "few", "shot", "learners"]),
        ("The of and in 2020 12 a", []),
        ("ZeRO ZERO zero", ["zero"]),
    ],
)
def test_search_tokens(text: str, tokens: list[str]) -> None:
    assert search_tokens(text) == tokens


def test_search_tokens_are_bounded_keeping_the_longest() -> None:
    words = [f"w{'x' * i}" for i in range(40)]
    kept = search_tokens(" ".join(words))
    assert len(kept) == 24
    assert kept == words[16:]


def terms(ledger: Ledger) -> dict[str, int]:
    rows = ledger.store.catalogue._q("SELECT term, docs FROM catalogue_terms WHERE docs <> 0")  # type: ignore[attr-defined]
    return {t: int(n) for t, n in rows.fetchall()}


def test_term_counts_follow_replacements_and_ignore_stale_observations(fresh_ledger: Ledger) -> None:
    fresh_ledger.append([work(ZERO, ts(2), title="Pipeline giants", authors=("Huang",), container=None)])
    fresh_ledger.append([work(GPIPE, ts(2), title="Pipeline", authors=(), container=None)])
    fresh_ledger.catalogue  # noqa: B018
    assert terms(fresh_ledger) == {"pipeline": 2, "giants": 1, "huang": 1}
    fresh_ledger.append([work(ZERO, ts(3), title="Memory", authors=("Huang",), container=None)])
    fresh_ledger.append(
        [work(ZERO, ts(1), title="Stale giants", authors=(), container=None)]
    )  # older: ignored
    fresh_ledger.catalogue  # noqa: B018
    assert terms(fresh_ledger) == {"pipeline": 1, "memory": 1, "huang": 1}


def test_search_looks_for_the_rarest_words_held_by_some_work(fresh_ledger: Ledger) -> None:
    common = [
        work(f"10.1/c{i}", ts(1), title="Deep learning networks", authors=(), container=None)
        for i in range(6)
    ]
    fresh_ledger.append(
        [*common, work(ZERO, ts(1), title="Deep learning zebra quagga", authors=(), container=None)]
    )
    # the rare words decide; a word no work holds (noise) and the common ones are not looked for
    (found,) = fresh_ledger.catalogue.catalogue_search(["deep learning networks zebra quagga xyzzy"], 1)
    assert dois(found) == [ZERO]


def test_common_words_alone_still_find_their_works(
    fresh_ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ledger.storage.derived import catalogue

    monkeypatch.setattr(catalogue, "MATCH_BUDGET", 3)
    fresh_ledger.append(
        [
            work("10.1/a", ts(1), title="Alpha beta gamma", authors=(), container=None),
            work("10.1/b", ts(1), title="Alpha beta", authors=(), container=None),
            work("10.1/c", ts(1), title="Alpha delta", authors=(), container=None),
            work("10.1/d", ts(1), title="Beta gamma", authors=(), container=None),
        ]
    )
    # over the budget: works holding two of the words are looked for
    (found,) = fresh_ledger.catalogue.catalogue_search(["alpha beta gamma"], 10)
    assert sorted(dois(found)) == ["10.1/a", "10.1/b", "10.1/d"]


def test_two_extenders_at_once_count_each_work_once(new_db: NewDb) -> None:
    db = new_db()
    first = Ledger(db)
    first.append(
        [work(f"10.1/w{i}", ts(1), title=f"Alpha {i}", authors=(), container=None) for i in range(200)]
    )
    results: list[int] = []
    ledgers = [Ledger(db), Ledger(db)]
    run_threads(
        *(lambda led=led: results.append(led.store.catalogue.index_catalogue(200)) for led in ledgers)
    )
    assert results == [200, 200]
    assert terms(first)["alpha"] == 200
    assert len(first.catalogue.catalogue_search(["alpha"], 500)[0]) == 200


def test_the_catalogue_is_extended_a_chunk_at_a_time(
    fresh_ledger: Ledger, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("ledger.storage.catalogue_store.CHUNK", 3)
    fresh_ledger.append([work(ZERO, ts(i), title=f"Title {i}") for i in range(1, 8)])
    assert fresh_ledger.store.catalogue.index_catalogue(7) == 7
    assert [w.title for w in fresh_ledger.catalogue.catalogue_by_keys([ZERO])[0]] == ["Title 7"]
    assert terms(fresh_ledger)["title"] == 1


def test_a_reader_sees_the_catalogue_as_of_one_extension(fresh_ledger: Ledger) -> None:
    fresh_ledger.append([work(ZERO, ts(1), title="Before")])
    cat = fresh_ledger.catalogue
    # an append after the extension is not seen until the catalogue is extended again
    fresh_ledger.append([work(ZERO, ts(2), title="After")])
    assert [w.title for w in cat.catalogue_by_keys([ZERO])[0]] == ["Before"]
    assert [w.title for w in fresh_ledger.catalogue.catalogue_by_keys([ZERO])[0]] == ["After"]


@pytest.mark.parametrize(
    "words,docs,chosen",
    [
        (["a", "b", "c", "d", "e"], {"a": 5, "b": 1, "c": 9, "d": 2, "e": 3}, ["a", "b", "d", "e"]),
        (["noise", "a", "b"], {"a": 1, "b": 2}, ["a", "b"]),  # a word no work holds is not looked for
        (["the1", "rare", "x"], {"the1": 50_000, "rare": 3, "x": 10}, ["rare", "x"]),  # common left out
        (["common", "rare"], {"common": 50_000, "rare": 3}, ["common", "rare"]),  # kept: one rare alone
        ([], {}, []),
    ],
)
def test_rarest(words: list[str], docs: dict[str, int], chosen: list[str]) -> None:
    assert rarest(words, docs) == chosen


@pytest.mark.parametrize(
    "words,docs,query",
    [
        (["a", "b"], {"a": 10, "b": 20}, '"a" OR "b"'),
        (["r", "c1", "c2"], {"r": 10, "c1": 9_000, "c2": 9_000}, '"r" AND ("c1" OR "c2")'),
        (
            ["c1", "c2", "c3"],
            {"c1": 3_000, "c2": 3_000, "c3": 3_000},
            '("c1" AND "c2") OR ("c1" AND "c3") OR ("c2" AND "c3")',
        ),
        (["c1"], {"c1": 90_000}, '"c1"'),
    ],
)
def test_fts_query_asks_for_two_words_past_the_budget(
    words: list[str], docs: dict[str, int], query: str
) -> None:
    assert fts_query(words, docs) == query
    assert ts_query(words, docs) == query.replace('"', "'").replace(" OR ", " | ").replace(" AND ", " & ")
