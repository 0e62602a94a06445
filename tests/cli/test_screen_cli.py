"""`ledger screen`: the table, CSV and JSON of the same screen, its pages, its changes, and refusals
naming the option."""

from __future__ import annotations

import csv
import io
import json
from typing import Any

import pytest
from click.testing import CliRunner, Result

from cli.main import main
from cli.screen import KINDS
from ledger.model.events import NOTICE_KINDS
from tests.conftest import NewDb
from tests.screen_scenario import seeded_ledger


@pytest.fixture
def db(new_db: NewDb) -> str:
    path = new_db()
    ledger, _ = seeded_ledger(path)
    ledger.close()
    return path


def run(db: str, *args: str) -> Result:
    return CliRunner().invoke(main, ["screen", "--db", db, *args])


def test_the_kinds_are_the_models() -> None:
    assert KINDS == NOTICE_KINDS


def test_the_table_groups_by_paper_and_names_every_event(db: str) -> None:
    out = run(db, "--as-of", "2026-02-05")
    assert out.exit_code == 0, out.output
    lines = out.output.splitlines()
    assert lines[0] == "Screen as of 2026-02-05T23:59:59.999999Z"
    assert lines[1].startswith("Computed at tree size 19, head ")
    assert [ln for ln in lines if ln.startswith("arXiv:")] == [
        "arXiv:2101.00001  Graph kernels for protein folding",
        "arXiv:2101.00002  A survey of folding benchmarks",
        "arXiv:2101.00003  Notes on kernel methods",
    ]
    assert "    retraction reported by retraction_watch on 2026-01-20, notice 10.1000/retraction.9" in lines
    assert "    resolved verified exact by crossref_match (#5): " in out.output


def test_a_collection_is_screened_by_its_members(db: str) -> None:
    made = CliRunner().invoke(main, ["collection", "add", "office", "2101.00002", "--db", db])
    assert made.exit_code == 0, made.output
    body = json.loads(run(db, "--as-of", "2026-02-05", "--collection", "office", "--format", "json").output)
    assert [(i["citing"]["arxiv_id"], i["reference_index"]) for i in body["items"]] == [("2101.00002", 0)]
    table = run(db, "--as-of", "2026-02-05", "--collection", "office").output
    assert "arXiv:2101.00002" in table and "arXiv:2101.00001" not in table
    before = run(db, "--collection", "office", "--known-at", "2026-01-01")
    assert before.exit_code == 1 and "no collection 'office' known at 2026-01-01" in before.output


def test_json_and_csv_are_the_same_screen(db: str) -> None:
    body = json.loads(run(db, "--as-of", "2026-03-01", "--format", "json").output)
    rows = list(csv.reader(io.StringIO(run(db, "--as-of", "2026-03-01", "--format", "csv").output)))
    assert [(i["citing"]["arxiv_id"], str(i["reference_index"])) for i in body["items"]] == [
        (r[1], r[3]) for r in rows[1:]
    ]
    assert [r[10] for r in rows[1:]] == ["crossref_match", "openalex_match", "person:Ada Lovelace"]


def test_pages_follow_their_token(db: str) -> None:
    whole = json.loads(run(db, "--as-of", "2026-02-05", "--format", "json").output)["items"]
    got: list[Any] = []
    token: str | None = None
    while True:
        args = [
            "--as-of",
            "2026-02-05",
            "--format",
            "json",
            "--limit",
            "3",
            *(["--page", token] if token else []),
        ]
        body = json.loads(run(db, *args).output)
        got += body["items"]
        token = body["next_page"]
        if token is None:
            break
    assert got == whole
    first = run(db, "--as-of", "2026-02-05", "--limit", "3")
    assert first.output.splitlines()[-1].startswith("More: add --page ")
    every = run(db, "--as-of", "2026-02-05", "--limit", "1", "--all-pages", "--format", "csv")
    assert len(every.output.splitlines()) == 1 + len(whole)


def test_changes_and_filters(db: str) -> None:
    out = run(db, "--as-of", "2026-03-01", "--changes-from", "2026-02-05")
    assert out.exit_code == 0, out.output
    assert "  flagged by #19: reference 2: Fabricated folding energies [10.1000/retracted.1]" in out.output
    assert out.output.count("cleared by #18") == 2
    only = json.loads(run(db, "--as-of", "2026-03-01", "--paper", "arXiv:2101.00002v1", "--kind",
                          "retraction", "--exact-only", "--format", "json").output)  # fmt: skip
    assert only["items"] == [] and only["filters"]["papers"] == ["2101.00002"]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--as-of", "yesterday"], "Invalid value for --as-of"),
        (["--known-at", "2026-02-30"], "Invalid value for --known-at"),
        (["--kind", "retracted"], "Invalid value for '--kind'"),
        (["--page", "nonsense"], "page: 'nonsense' is not a page token"),
        (["--limit", "0"], "Invalid value for '--limit'"),
        (["--paper", "nothing"], "--paper:"),
        (["--collection", "office"], "no collection 'office'"),
        (["--collection", "office", "--paper", "2101.00001"], "not both"),
        (
            ["--changes-from", "2026-03-02", "--as-of", "2026-03-01"],
            "from: 2026-03-02T23:59:59.999999Z is after to",
        ),
    ],
)
def test_refusals_name_the_option(db: str, args: list[str], says: str) -> None:
    out = run(db, *args)
    assert out.exit_code != 0
    assert says in out.output
