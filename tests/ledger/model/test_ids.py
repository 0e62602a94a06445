"""Paper ids as people paste them (ledger/ids.py): read as the canonical id by the routes (a 308 to the
canonical path, its query string kept) and by the CLI (said on stderr); what names no id is refused."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from api.app import create_app
from api.settings import Settings
from cli.main import main
from ledger.model.codec import ARXIV_RE
from ledger.model.errors import InvalidEvent
from ledger.model.ids import normalise_arxiv
from service.ledger import Ledger
from tests.conftest import FIXTURE_PATH, NewDb

with warnings.catch_warnings():
    warnings.simplefilter("ignore")  # starlette's notice about httpx in its TestClient
    from fastapi.testclient import TestClient

PAPER = "2509.02480"
AS_OF = "2026-08-08T08:47:00Z"
PASTED = {
    "canonical": PAPER,
    "arxiv-prefix": f"arXiv:{PAPER}",
    "lowercase-prefix": f"arxiv:{PAPER}",
    "version": f"{PAPER}v1",
    "prefix-and-version": f"arXiv:{PAPER}v12",
    "abs-url": f"https://arxiv.org/abs/{PAPER}v1",
    "abs-url-http-www": f"http://www.arxiv.org/abs/{PAPER}",
    "pdf-url": f"https://arxiv.org/pdf/{PAPER}v2.pdf",
    "doi": f"10.48550/arXiv.{PAPER}",
    "doi-url": f"https://doi.org/10.48550/arXiv.{PAPER}",
    "doi-prefix": f"doi:10.48550/ARXIV.{PAPER}",
    "spaces": f"  {PAPER} ",
}
NOT_IDS = ["2509.024", "arXiv:", "x", "v1", f"{PAPER}v0", f"{PAPER}v", "10.1000/2509.02480",
           "https://example.org/abs/2509.02480", f"arXiv:arXiv:{PAPER}", "hep-th/99", "HEP-TH/9901001",
           f"{PAPER}/citation-record"]  # fmt: skip


@pytest.mark.parametrize("pasted", list(PASTED.values()), ids=list(PASTED))
def test_pasted_forms_name_the_canonical_id(pasted: str):
    assert normalise_arxiv(pasted, "arxiv_id") == PAPER


def test_old_style_ids_keep_their_archive():
    assert normalise_arxiv("arXiv:hep-th/9901001v2", "x") == "hep-th/9901001"
    assert normalise_arxiv("https://arxiv.org/abs/math.GT/0309136", "x") == "math.GT/0309136"


@pytest.mark.parametrize("bad", NOT_IDS)
def test_what_names_no_id_is_refused_naming_the_place(bad: str):
    with pytest.raises(InvalidEvent, match=r"^arxiv_id: bad arXiv id .*expected NNNN\.NNNNN or archive"):
        normalise_arxiv(bad, "arxiv_id")


canonical_ids = st.from_regex(ARXIV_RE, fullmatch=True)
wrappers = st.sampled_from(["{}", "arXiv:{}", "{}v3", "arXiv:{}v1", "https://arxiv.org/abs/{}v2",
                            "10.48550/arXiv.{}", "https://doi.org/10.48550/arXiv.{}v1"])  # fmt: skip


@given(canonical_ids, wrappers)
def test_every_wrapped_id_reads_as_itself(arxiv_id: str, wrapper: str):
    assert normalise_arxiv(wrapper.format(arxiv_id), "x") == arxiv_id


@given(st.text(max_size=40))
def test_whatever_is_accepted_is_a_canonical_id(text: str):
    try:
        got = normalise_arxiv(text, "x")
    except InvalidEvent:
        return
    assert ARXIV_RE.fullmatch(got)


# -- the routes ------------------------------------------------------------------------------


@pytest.fixture
def client(new_db: NewDb) -> TestClient:
    db = new_db()
    Ledger(db).import_bytes(FIXTURE_PATH.read_bytes())
    return TestClient(create_app(Settings(db=db)), follow_redirects=False)


ROUTES = ["/citation-record.json", "/citation-record", "/integrity", "", "/bundle", "/changes"]


@pytest.mark.parametrize("suffix", ROUTES)
@pytest.mark.parametrize("pasted", ["arXiv:2509.02480", "2509.02480v1", f"https://arxiv.org/abs/{PAPER}v1",
                                    f"10.48550/arXiv.{PAPER}"])  # fmt: skip
def test_a_pasted_id_is_redirected_to_the_canonical_path(client: TestClient, suffix: str, pasted: str):
    r = client.get(f"/paper/{pasted}{suffix}?as_of={AS_OF}&from=2026-08-08")
    assert r.status_code == 308, r.text
    assert r.headers["location"] == f"/paper/{PAPER}{suffix}?as_of={AS_OF}&from=2026-08-08"


def test_the_redirect_leads_to_the_record(client: TestClient):
    r = client.get(f"/paper/arXiv:{PAPER}v1/citation-record.json?as_of={AS_OF}", follow_redirects=True)
    assert r.status_code == 200 and r.content == FIXTURE_PATH.read_bytes()
    assert [h.status_code for h in r.history] == [308]


def test_a_percent_encoded_prefix_is_read_too(client: TestClient):
    r = client.get(f"/paper/arXiv%3A{PAPER}v1/citation-record")
    assert r.status_code == 308 and r.headers["location"] == f"/paper/{PAPER}/citation-record"


@pytest.mark.parametrize("suffix", ["/citation-record.json", "/integrity", "/bundle", "/changes"])
@pytest.mark.parametrize("bad", ["2509.024", "arXiv:2509.024", "10.1000/x", "x"])
def test_what_names_no_id_is_422_naming_the_parameter(client: TestClient, suffix: str, bad: str):
    r = client.get(f"/paper/{bad}{suffix}?from=2026-08-08")
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert error["details"]["where"] == "arxiv_id"
    assert error["message"].startswith(f"arxiv_id: bad arXiv id {bad!r}")


def test_the_html_pages_refuse_in_html(client: TestClient):
    for path in ("/paper/x/citation-record", "/paper/x"):
        r = client.get(path)
        assert r.status_code == 422 and "text/html" in r.headers["content-type"]
        assert "bad arXiv id" in r.text


def test_the_openapi_documents_the_redirect(client: TestClient):
    paths = client.get("/openapi.json").json()["paths"]
    answers = paths["/paper/{arxiv_id}/citation-record.json"]["get"]["responses"]
    assert "Location" in answers["308"]["headers"]


# -- the command line ------------------------------------------------------------------------


@pytest.fixture
def db(new_db: NewDb) -> str:
    path = new_db()
    assert CliRunner().invoke(main, ["import", str(FIXTURE_PATH), "--db", path]).exit_code == 0
    return path


@pytest.mark.parametrize(
    "pasted", ["arXiv:2509.02480v1", f"https://arxiv.org/abs/{PAPER}", f"10.48550/arXiv.{PAPER}"]
)
def test_cli_reads_a_pasted_id_and_says_so(db: str, pasted: str):
    r = CliRunner().invoke(main, ["record", pasted, "--as-of", AS_OF, "--db", db])
    assert r.exit_code == 0, r.output
    assert r.stdout_bytes == FIXTURE_PATH.read_bytes()
    assert r.stderr == f"note: ARXIV_ID {pasted!r} read as {PAPER}\n"


def test_cli_says_nothing_of_a_canonical_id(db: str):
    r = CliRunner().invoke(main, ["record", PAPER, "--as-of", AS_OF, "--db", db])
    assert r.exit_code == 0 and r.stderr == ""


@pytest.mark.parametrize("command", [["record"], ["bundle"], ["diff", "{}", "2026-08-08", "2026-08-09"]])
def test_cli_refuses_what_names_no_id(db: str, command: list[str], tmp_path: Path):
    args = [command[0], "nope", *command[2:]] if len(command) > 1 else [command[0], "nope"]
    before = CliRunner().invoke(main, ["events", "--db", db]).stdout
    r = CliRunner().invoke(main, [*args, "--db", db])
    assert r.exit_code == 1
    assert r.stderr.startswith("error: ARXIV_ID: bad arXiv id 'nope': expected NNNN.NNNNN")
    assert CliRunner().invoke(main, ["events", "--db", db]).stdout == before


def test_cli_diff_and_bundle_take_a_pasted_id(db: str, tmp_path: Path):
    r = CliRunner().invoke(main, ["diff", f"arXiv:{PAPER}v1", "2026-08-08", "2026-08-09", "--db", db])
    assert r.exit_code == 0 and "read as 2509.02480" in r.stderr
    out = tmp_path / "b.json"
    r = CliRunner().invoke(main, ["bundle", f"{PAPER}v1", "--as-of", AS_OF, "--out", str(out), "--db", db])
    assert r.exit_code == 0, r.output
    assert f"bundle: arXiv:{PAPER} as of {AS_OF}" in r.stderr and out.stat().st_size > 0
