"""`ledger watch add|list|remove` and `ledger alerts` (cli/alerts.py): what a watch says it covers,
its alerts one a line or as NDJSON, every watch's alerts with no id, and the refusals."""

from __future__ import annotations

import base64
import json

import pytest
from click.testing import CliRunner, Result

from cli.main import main
from tests.conftest import NewDb
from tests.service.sources.test_sources_support import SOURCES_DIR, T_INGEST, imported_sample

RW = str(SOURCES_DIR / "retraction_watch.csv")
CITING = "2509.02480"


@pytest.fixture
def db(new_db: NewDb) -> str:
    return imported_sample(new_db())


def _run(db: str, *args: str) -> Result:
    return CliRunner().invoke(main, [*args, "--db", db])


def _add(db: str, *args: str) -> str:
    made = _run(db, "watch", "add", *args, "--json")
    assert made.exit_code == 0, made.output
    watch_id: str = json.loads(made.stdout)["id"]
    return watch_id


def test_a_paper_watch_is_told_of_the_notice_an_ingest_brings(db: str) -> None:
    made = _run(db, "watch", "add", "--paper", f"arXiv:{CITING}v1")  # read as pasted
    assert made.exit_code == 0, made.output
    assert f": paper {CITING}; 37 work(s) covered, 0 alert(s)" in made.stdout
    watch_id = made.stdout.split()[1].rstrip(":")
    assert _run(db, "ingest", "retraction-watch", RW, "--observed-at", T_INGEST).exit_code == 0
    shown = _run(db, "alerts", watch_id)
    assert shown.exit_code == 0, shown.output
    (line,) = shown.stdout.splitlines()
    # the retracted work named by its arXiv id and title, the citing paper by its own id
    title = (
        "DeepSpeed4Science Initiative: Enabling Large-Scale Scientific Discovery through Sophisticated AI "
        "System Technologies"
    )
    assert (
        f"  retraction of arXiv:2310.04610 “{title}” cited as reference 34 of arXiv:{CITING} by "
        "retraction_watch, notice without DOI; event seq " in line
    )
    assert "; watch " not in line  # one watch asked for: no need to name it
    (body,) = [json.loads(x) for x in _run(db, "alerts", watch_id, "--json").stdout.splitlines()]
    assert body["watch"]["id"] == watch_id and body["notice"]["kind"] == "retraction"
    assert {k: body["work"][k] for k in ("doi", "arxiv_id", "title")} == {
        "doi": None,
        "arxiv_id": "2310.04610",
        "title": title,
    }
    assert all("title" not in c for c in body["citing"])
    assert _run(db, "alerts", watch_id, "--since", "2999-01-01").stdout == ""


def test_with_no_watch_id_every_watchs_alerts_are_listed_naming_the_watch(db: str) -> None:
    by_paper = _add(db, "--paper", CITING)
    by_work = _add(db, "--work", "arXiv:2310.04610v2")
    assert _run(db, "ingest", "retraction-watch", RW, "--observed-at", T_INGEST).exit_code == 0
    lines = _run(db, "alerts").stdout.splitlines()
    assert sorted(line.rsplit("; watch ", 1)[1] for line in lines) == sorted([by_paper, by_work])


def test_watch_list_and_remove(db: str) -> None:
    watch_id = _add(db, "--work", "doi:10.1000/x", "--work", "arxiv:2310.04610")
    (line,) = _run(db, "watch", "list").stdout.splitlines()
    assert line.startswith(f"{watch_id}  works doi:10.1000/x, arxiv:2310.04610")
    removed = _run(db, "watch", "remove", watch_id)
    assert removed.exit_code == 0 and removed.stdout == f"watch {watch_id} removed\n"
    assert _run(db, "watch", "list").stdout == ""


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["watch", "add"], "exactly one of arxiv_id", id="neither"),
        pytest.param(["watch", "add", "--paper", "nope"], "bad arXiv id 'nope'", id="bad-paper"),
        pytest.param(["watch", "add", "--work", "isbn:1"], "works[0]", id="bad-work"),
        pytest.param(["watch", "add", "--paper", CITING, "--callback", "https://127.0.0.1/h"], "loopback",
                     id="loopback-callback"),
        pytest.param(["alerts", "no-such-watch"], "no-such-watch", id="unknown-watch"),
        pytest.param(["watch", "remove", "no-such-watch"], "no-such-watch", id="unknown-remove"),
    ],
)  # fmt: skip
def test_refusals_exit_1_naming_what_is_wrong(db: str, args: list[str], message: str) -> None:
    refused = _run(db, *args)
    assert refused.exit_code == 1, refused.output
    assert message in refused.output
    assert _run(db, "watch", "list").stdout == ""


def test_watch_add_prints_the_secret_it_made_once(db: str) -> None:
    made = _run(db, "watch", "add", "--paper", CITING, "--callback", "https://hooks.example/a")
    assert made.exit_code == 0, made.output
    (secret,) = [line.rsplit(": ", 1)[1] for line in made.stdout.splitlines() if "secret" in line]
    assert secret.startswith("whsec_") and len(base64.b64decode(secret.removeprefix("whsec_"))) == 24
    as_json = _run(
        db, "watch", "add", "--work", "doi:10.1000/x", "--callback", "https://hooks.example/b", "--json"
    )
    assert json.loads(as_json.stdout)["secret"].startswith("whsec_")
    given = _run(
        db, "watch", "add", "--paper", CITING, "--callback", "https://hooks.example/c", "--secret", "s"
    )
    assert given.exit_code == 0 and "secret" not in given.stdout  # the caller's own is not echoed
    assert secret not in _run(db, "watch", "list").stdout


@pytest.mark.parametrize(
    ("body", "named"),
    [
        (
            {"work": {"work_id": "w", "doi": "10.1/x", "arxiv_id": None, "title": "T"}, "citing": []},
            "DOI 10.1/x “T”",
        ),
        # an alert raised before `work`: its work_id at the top, the title under its first citing reference
        ({"work_id": "w", "citing": [{"reference_index": 3, "title": "Old"}]}, "“Old”"),
        ({"work_id": "w", "citing": []}, "work w (no identifier or title given)"),
    ],
)
def test_an_alert_names_its_work_whenever_it_was_raised(body: dict, named: str) -> None:
    from cli.alerts import _work
    from service.alerts.paper_notices import work_name

    assert work_name(_work(body)) == named
