"""A search for an arXiv id as pasted (bare, arXiv:, a version, an abs URL, a DOI) finds the paper: GET
/search sends a page to /paper/{id} and answers JSON with the paper as its one hit; `ledger search` prints
it; an id the ledger does not hold is said to be not in it. On the backend under test."""

from __future__ import annotations

import warnings

import pytest
from click.testing import CliRunner

from api.app import create_app
from api.settings import Settings
from cli.main import main
from service.ledger import Ledger
from tests.conftest import FIXTURE_PATH

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # starlette's notice about httpx in its TestClient
    from fastapi.testclient import TestClient

PAPER = "2509.02480"
MLP = "MLP-Offload: Multi-Level, Multi-Path Offloading for LLM Pre-training to Break the GPU Memory Wall"
AS_PASTED = [
    "2509.02480",
    "arXiv:2509.02480",
    "arxiv:2509.02480v1",
    "2509.02480v2",
    "https://arxiv.org/abs/2509.02480v1",
    "arxiv.org/pdf/2509.02480v1.pdf",
    "10.48550/arXiv.2509.02480",
    "https://doi.org/10.48550/arXiv.2509.02480",
    "  arXiv:2509.02480  ",
]
ABSENT = "2101.00001"
JSON = {"accept": "application/json"}


@pytest.fixture
def imported(fresh_ledger: Ledger) -> Ledger:
    fresh_ledger.import_bytes(FIXTURE_PATH.read_bytes())
    return fresh_ledger


@pytest.fixture
def client(imported: Ledger) -> TestClient:
    return TestClient(create_app(Settings(db=imported.url)))


@pytest.mark.parametrize("q", AS_PASTED)
def test_a_page_search_for_an_id_goes_to_the_paper(client: TestClient, q: str) -> None:
    r = client.get("/search", params={"q": q}, follow_redirects=False)
    assert r.status_code == 303, r.text
    assert r.headers["location"] == f"/paper/{PAPER}"
    page = client.get("/search", params={"q": q})
    assert page.status_code == 200 and MLP in page.text


@pytest.mark.parametrize("q", AS_PASTED)
def test_a_json_search_for_an_id_answers_the_paper_as_its_one_hit(client: TestClient, q: str) -> None:
    r = client.get("/search", params={"q": q}, headers=JSON, follow_redirects=False)
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["q"] == q and body["arxiv_id"] == PAPER and body["words"] == []
    assert body["hits"] == [
        {
            "kind": "paper",
            "arxiv_id": PAPER,
            "title": MLP,
            "seq": 1,
            "href": f"/paper/{PAPER}/citation-record",
        }
    ]
    assert body["page"]["total_hits"] == 1


def test_title_words_still_search_titles(client: TestClient) -> None:
    body = client.get("/search", params={"q": "memory offload"}, headers=JSON).json()
    assert "arxiv_id" not in body and len(body["hits"]) == 2


@pytest.mark.parametrize("q", [ABSENT, f"arXiv:{ABSENT}v3", f"https://arxiv.org/abs/{ABSENT}"])
def test_an_id_the_ledger_does_not_hold_is_said_plainly(client: TestClient, q: str) -> None:
    page = client.get("/search", params={"q": q}, follow_redirects=False)
    assert page.status_code == 404 and "text/html" in page.headers["content-type"]
    assert f"arXiv:{ABSENT} is not in this ledger" in page.text
    r = client.get("/search", params={"q": q}, headers=JSON)
    assert r.status_code == 404
    error = r.json()["error"]
    assert error["code"] == "not_found" and error["message"].startswith(
        f"arXiv:{ABSENT} is not in this ledger"
    )
    assert error["details"]["arxiv_id"] == ABSENT


@pytest.mark.parametrize(
    "q", ["arXiv:2509.02480", "https://arxiv.org/abs/2509.02480v1", "10.48550/arXiv.2509.02480"]
)
def test_ledger_search_for_an_id_prints_the_paper(imported: Ledger, q: str) -> None:
    r = CliRunner().invoke(main, ["search", q, "--db", imported.url])
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines() == [
        f"arXiv:{PAPER} is in this ledger",
        f"paper arXiv:{PAPER}: {MLP}",
        f"  /paper/{PAPER}/citation-record",
    ]
    r = CliRunner().invoke(main, ["search", q, "--json", "--db", imported.url])
    assert r.exit_code == 0 and f'"arxiv_id":"{PAPER}"' in r.stdout


def test_ledger_search_for_an_id_not_held_says_so(imported: Ledger) -> None:
    r = CliRunner().invoke(main, ["search", f"arXiv:{ABSENT}", "--db", imported.url])
    assert r.exit_code == 1 and r.stdout == ""
    assert r.stderr == f"error: arXiv:{ABSENT} is not in this ledger: it has never been observed here\n"


@pytest.mark.parametrize(
    ("accept", "as_json"),
    [
        pytest.param("application/json", True, id="json"),
        pytest.param("APPLICATION/JSON", True, id="json-upper-case"),
        pytest.param("text/html;q=0, application/json", True, id="html-refused"),
        pytest.param("text/html;q=0.5, application/json", True, id="json-weighed-higher"),
        pytest.param("application/json;q=0.1, text/html", False, id="html-weighed-higher"),
        pytest.param("text/html, application/json", False, id="a-tie-is-the-page"),
        pytest.param("*/*", False, id="anything"),
    ],
)
def test_search_negotiates_by_the_weights_of_accept(client: TestClient, accept: str, as_json: bool) -> None:
    """RFC 9110 12.5.1, as the paper route reads it: JSON only when it ranks above the page."""
    for q in ("memory offloading", ABSENT):
        r = client.get("/search", params={"q": q}, headers={"accept": accept}, follow_redirects=False)
        assert r.headers["vary"] == "Accept"
        want = "application/json" if as_json else "text/html"
        assert r.headers["content-type"].startswith(want), (q, r.text)
