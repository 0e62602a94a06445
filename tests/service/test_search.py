"""Title search (ledger/search.py, service/search.py): the query's words, the index derived from the events
past its cursor when a search reads it (no append writes it), GET /search, the index page's search box and
pages, `ledger search`; on the backend under test."""

from __future__ import annotations

import json
import sqlite3
import warnings
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from api.app import create_app
from api.settings import Settings
from cli.main import main
from ledger.model.codec import canonical
from ledger.model.errors import InvalidEvent
from ledger.storage.derived.search import MAX_QUERY, MAX_WORDS, query_words
from service.ledger import Ledger
from service.search import PER_PAGE, Answer, search
from tests.conftest import FIXTURE_PATH, NewDb
from tests.factories import citation, oid_of, paper, resolution, ts, work
from tests.old_layout import build_old_ledger, version_before

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # starlette's notice about httpx in its TestClient
    from fastapi.testclient import TestClient

MLP = "MLP-Offload: Multi-Level, Multi-Path Offloading for LLM Pre-training to Break the GPU Memory Wall"
NEO = "NEO: Saving GPU Memory Crisis with CPU Offloading for Online LLM Inference"

# -- the words of a query --------------------------------------------------------------------


@pytest.mark.parametrize(
    ("q", "words"),
    [
        ("memory wall", ["memory", "wall"]),
        ("  Memory   WALL ", ["memory", "wall"]),
        ("MLP-Offload", ["mlp", "offload"]),
        ('"memory" OR wall*', ["memory", "or", "wall"]),
        ("memory memory", ["memory"]),
        ("a_b", ["a", "b"]),
        ("Schrödinger 2509", ["schrödinger", "2509"]),
    ],
)
def test_a_query_is_its_words(q: str, words: list[str]):
    assert query_words(q) == words


@pytest.mark.parametrize(
    ("q", "why"),
    [
        (None, r"^q: required"),
        ("", r"^q: required"),
        ("   ", r"^q: required"),
        ("%%% -- '", r"^q: no word in"),
        ("x" * (MAX_QUERY + 1), rf"^q: {MAX_QUERY + 1} characters; a query has at most {MAX_QUERY}"),
        (" ".join(f"w{i}" for i in range(MAX_WORDS + 1)), rf"^q: {MAX_WORDS + 1} words; a query has at most"),
    ],
)
def test_a_query_that_names_no_word_is_refused(q: str | None, why: str):
    with pytest.raises(InvalidEvent, match=why):
        query_words(q)


@given(st.text(max_size=MAX_QUERY))
def test_the_words_of_any_text_are_letters_and_digits(q: str):
    try:
        words = query_words(q)
    except InvalidEvent:
        return
    assert words and all(w.isalnum() for w in words) and len(words) <= MAX_WORDS


# -- the index, on the backend under test ------------------------------------------------------


@pytest.fixture
def imported(fresh_ledger: Ledger) -> Ledger:
    fresh_ledger.import_bytes(FIXTURE_PATH.read_bytes())
    return fresh_ledger


def served(answer: Answer) -> Any:
    """The answer as a client decodes it from GET /search."""
    return json.loads(canonical(answer.to_dict()))


def _found(ledger: Ledger, q: str) -> list[tuple[str, str, int | None, str]]:
    return [(h.kind, h.arxiv_id, h.reference_index, h.title) for h in search(ledger, q).hits]


def test_titles_of_papers_and_references_are_found_papers_first(imported: Ledger):
    assert _found(imported, "memory offload") == [
        ("paper", "2411.01142", None, NEO),
        ("paper", "2509.02480", None, MLP),
    ]
    found = _found(imported, "offload")
    assert found[:2] == [("paper", "2411.01142", None, NEO), ("paper", "2509.02480", None, MLP)]
    assert found[2][:3] == ("reference", "2509.02480", 35)


def test_a_title_only_a_resolution_carries_is_found_with_its_citations_reference_index(imported: Ledger):
    # reference 34's cited work has its title in its resolution only (the resolver bound it)
    found = _found(imported, "DeepSpeed4Science")
    assert [(kind, ref) for kind, _, ref, _ in found] == [("paper", None), ("reference", 34)]


@pytest.mark.parametrize(("q", "count"), [("memo", 2), ("memory wall", 1), ("wall memory", 1), ("wallz", 0)])
def test_each_word_matches_the_start_of_a_word_and_all_must_match(imported: Ledger, q: str, count: int):
    assert search(imported, q).total == count


def test_each_hit_links_to_the_record_that_shows_it(imported: Ledger):
    hits = served(search(imported, "offload"))["hits"]
    assert hits[0]["href"] == "/paper/2411.01142/citation-record"
    ref = hits[2]
    assert ref["href"] == f"/paper/2509.02480/citation-record#{ref['observation_id']}"
    outbound = imported.record("2509.02480")[0].outbound
    assert ref["observation_id"] in {o.observation_id for o in outbound}


def test_no_append_writes_the_index_and_a_search_extends_it_to_the_head(fresh_ledger: Ledger):
    fresh_ledger.append([paper("2101.00001", ts(0), title="Alpha beta")])
    assert fresh_ledger.store.search.titles_indexed() == 0 and search(fresh_ledger, "alpha").total == 1
    assert fresh_ledger.store.search.titles_indexed() == 1
    fresh_ledger.append([paper("2101.00002", ts(1), title="Alpha gamma")])
    fresh_ledger.append([citation(oid_of(1), "2101.00002", ts(2), 3, work("w-1", ts(2), title="Alphabet"))])
    assert fresh_ledger.store.search.titles_indexed() == 1  # the appends left it
    answer = search(fresh_ledger, "alpha")
    assert answer.total == 3 and answer.indexed_through == answer.head_seq == 3
    assert answer.to_dict()["index"] == {"through_seq": 3, "head_seq": 3, "complete": True}


def test_a_title_is_kept_once_per_paper_or_observation_with_its_first_seq(fresh_ledger: Ledger):
    fresh_ledger.append([paper("2101.00001", ts(0), title="Alpha")])
    fresh_ledger.append([paper("2101.00001", ts(1), title="Alpha", version=2)])
    fresh_ledger.append([paper("2101.00001", ts(2), title="Alpha, revised", version=3)])
    fresh_ledger.append([citation(oid_of(1), "2101.00002", ts(3), 1, work("w-1", ts(3), title="Alpha"))])
    fresh_ledger.append([resolution(oid_of(1), ts(4), cited=work("w-1", ts(4), title="Alpha"))])
    hits = search(fresh_ledger, "alpha").hits
    assert [(h.kind, h.title, h.seq) for h in hits] == [
        ("paper", "Alpha", 1),
        ("paper", "Alpha, revised", 3),
        ("reference", "Alpha", 4),
    ]


@pytest.mark.parametrize("title", [None, "", "   "])
def test_a_work_without_a_title_is_not_indexed(fresh_ledger: Ledger, title: str | None):
    fresh_ledger.append([citation(oid_of(1), "2101.00001", ts(0), 1, work("w-1", ts(0), title=title))])
    fresh_ledger.append([citation(oid_of(2), "2101.00001", ts(1), 2, None)])
    assert search(fresh_ledger, "a").total == 0


def test_the_index_is_built_a_chunk_at_a_time(fresh_ledger: Ledger, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr("ledger.storage.tables.search.INDEX_CHUNK", 2)
    fresh_ledger.append([paper(f"2101.0000{i}", ts(i), title=f"Alpha {i}") for i in range(1, 8)])
    assert fresh_ledger.store.search.index_titles(7) == 7
    assert search(fresh_ledger, "alpha").total == 7


def test_two_indexers_at_once_index_each_title_once(new_db: NewDb):
    db = new_db()
    first = Ledger(db)
    first.append([paper(f"2101.{i:05d}", ts(i), title=f"Alpha {i}") for i in range(200)])
    from tests.factories import run_threads

    results: list[int] = []
    ledgers = [Ledger(db), Ledger(db)]
    run_threads(*(lambda led=led: results.append(led.store.search.index_titles(200)) for led in ledgers))
    assert results == [200, 200]
    assert search(first, "alpha").total == 200


def test_search_pages(fresh_ledger: Ledger):
    fresh_ledger.append([paper(f"2101.{i:05d}", ts(i), title=f"Alpha {i}") for i in range(PER_PAGE + 5)])
    one, two = search(fresh_ledger, "alpha"), search(fresh_ledger, "alpha", 2)
    assert (one.total, len(one.hits), len(two.hits), one.pages) == (PER_PAGE + 5, PER_PAGE, 5, 2)
    assert {h.arxiv_id for h in one.hits}.isdisjoint(h.arxiv_id for h in two.hits)
    assert served(one)["page"]["next"] == "/search?q=alpha&page=2"
    assert served(two)["page"] == {"number": 2, "per_page": PER_PAGE, "total_hits": PER_PAGE + 5,
                                     "pages": 2, "next": None, "prev": "/search?q=alpha&page=1"}  # fmt: skip
    assert search(fresh_ledger, "alpha", 9).hits == []
    with pytest.raises(InvalidEvent, match="^page: 0: a page is 1"):
        search(fresh_ledger, "alpha", 0)


def test_a_ledger_of_the_layout_before_search_is_searchable_once_opened(new_db: NewDb):
    source = Ledger(new_db("source.db"))
    source.import_bytes(FIXTURE_PATH.read_bytes())
    old = new_db("old.db")
    build_old_ledger(old, version_before(old, "search"), source)
    upgraded = Ledger(old)
    assert upgraded.verify().ok
    assert _found(upgraded, "memory offload") == _found(source, "memory offload") != []


@pytest.mark.sqlite_only("the FTS5 table sqlite-utils and Datasette recognise")
def test_sqlite_utils_recognises_the_index_and_finds_the_same_titles(imported: Ledger):
    import sqlite_utils

    search(imported, "offload")
    db = sqlite_utils.Database(sqlite3.connect(imported.url))
    table = db.table("search_titles")
    assert table.detect_fts() == "search_titles_fts"
    theirs = {row["title"] for row in table.search('"offload"*', columns=["title"])}
    assert theirs == {h.title for h in search(imported, "offload").hits}


# -- the doors ---------------------------------------------------------------------------------


@pytest.fixture
def client(imported: Ledger) -> TestClient:
    return TestClient(create_app(Settings(db=imported.url)))


JSON = {"accept": "application/json"}


def test_get_search_answers_json(client: TestClient, imported: Ledger):
    r = client.get("/search", params={"q": "memory offload"}, headers=JSON)
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    body = r.json()
    assert body["q"] == "memory offload" and body["words"] == ["memory", "offload"]
    assert [h["title"] for h in body["hits"]] == [NEO, MLP]
    assert body["hits"][1] == {"kind": "paper", "arxiv_id": "2509.02480", "title": MLP, "seq": 1,
                               "href": "/paper/2509.02480/citation-record"}  # fmt: skip
    head = imported.head()
    assert r.headers["Ledger-Head"] == f"{head.seq} {head.hash}"


def test_get_search_answers_a_page_linking_each_hit(client: TestClient):
    r = client.get("/search", params={"q": "offload"})
    assert r.status_code == 200 and "text/html" in r.headers["content-type"]
    assert '<a href="/paper/2509.02480/citation-record">' + MLP in r.text
    assert 'href="/paper/2509.02480/citation-record#' in r.text
    assert "3 titles found." in r.text and 'value="offload"' in r.text


BAD_SEARCHES = [({}, "q"), ({"q": ""}, "q"), ({"q": "%%"}, "q"), ({"q": "x" * 201}, "q"),
                ({"q": "a", "page": "0"}, "page"), ({"q": "a", "page": "x"}, "page")]  # fmt: skip


@pytest.mark.parametrize(("params", "where"), BAD_SEARCHES)
def test_a_bad_search_is_422_naming_it(client: TestClient, imported: Ledger, params: Any, where: str):
    before = imported.head()
    r = client.get("/search", params=params, headers=JSON)
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert error["code"] == "invalid" and error["details"]["where"].endswith(where)
    html = client.get("/search", params=params)
    assert html.status_code == 422
    assert imported.head() == before


@pytest.mark.parametrize("q", ['"', "*", "NEAR(a b)", "a OR b", "-a", "a:b", "!a & (b | c)", "'a':*", "a\\"])
def test_query_syntax_of_either_engine_is_only_words(client: TestClient, q: str):
    r = client.get("/search", params={"q": q}, headers=JSON)
    assert r.status_code in (200, 422), r.text


def test_a_read_only_server_searches_what_is_indexed_and_says_so(imported: Ledger):
    search(imported, "offload")
    imported.append([paper("2101.00001", ts(0), title="Offloading anew")])
    client = TestClient(create_app(Settings(db=imported.url, read_only=True)))
    body = client.get("/search", params={"q": "offload"}, headers=JSON).json()
    assert body["index"] == {"through_seq": 132, "head_seq": 133, "complete": False}
    assert "Offloading anew" not in {h["title"] for h in body["hits"]}
    assert imported.store.search.titles_indexed() == 132
    page = client.get("/search", params={"q": "offload"}).text
    assert "covers events 1..132 of 133" in page


def test_the_index_page_has_a_search_box(client: TestClient):
    r = client.get("/")
    assert '<form method="get" action="/search" role="search">' in r.text and 'name="q"' in r.text


def test_the_index_page_is_paged(fresh_ledger: Ledger):
    fresh_ledger.append([paper(f"2101.{i:05d}", ts(i), title=f"Paper {i}") for i in range(105)])
    client = TestClient(create_app(Settings(db=fresh_ledger.url)))
    first, second = client.get("/").text, client.get("/?page=2").text
    assert first.count("snapshots</a>") == 100 and second.count("snapshots</a>") == 5
    assert 'href="/?page=2" rel="next"' in first and 'rel="prev"' not in first
    assert 'href="/?page=1" rel="prev"' in second and 'rel="next"' not in second
    assert "Papers 101–105, most events first." in second
    assert client.get("/?page=0").status_code == 422


def test_ledger_search_prints_each_hit_and_its_record(imported: Ledger):
    r = CliRunner().invoke(main, ["search", "memory", "offload", "--db", imported.url])
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines() == [
        "2 titles hold memory offload",
        f"paper arXiv:2411.01142: {NEO}",
        "  /paper/2411.01142/citation-record",
        f"paper arXiv:2509.02480: {MLP}",
        "  /paper/2509.02480/citation-record",
    ]
    r = CliRunner().invoke(main, ["search", "DeepSpeed4Science", "--json", "--db", imported.url])
    assert r.exit_code == 0 and '"reference_index":34' in r.stdout


def test_ledger_search_refuses_no_word(imported: Ledger):
    r = CliRunner().invoke(main, ["search", "%%", "--db", imported.url])
    assert r.exit_code == 1 and r.stderr == "error: WORDS: no word in '%%': a word is letters or digits\n"
