"""`ledger collection add|remove|list` and `ledger watch add --collection` (cli/collections.py)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner, Result

from cli.main import cli_user, main
from service.ledger import Ledger
from tests.conftest import NewDb

P1, P2 = "2101.00001", "hep-th/9901001"


def _run(db: str, *args: str) -> Result:
    return CliRunner().invoke(main, [*args, "--db", db])


def test_a_collection_is_made_changed_and_listed_as_known_at(new_db: NewDb) -> None:
    db = new_db()
    made = _run(db, "collection", "add", "office", f"arXiv:{P1}v3", f"https://arxiv.org/abs/{P2}")
    assert made.exit_code == 0, made.output
    assert made.stdout == "collection office: added 2; 2 paper(s) now (event seq 1)\n"
    assert f"note: ID 'arXiv:{P1}v3' read as {P1}" in made.stderr
    removed = _run(db, "collection", "remove", "office", P1, "--json")
    assert removed.exit_code == 0, removed.output
    answer = json.loads(removed.stdout)
    assert (answer["remove"], answer["members"], answer["event"]["seq"]) == ([P1], 1, 2)
    assert _run(db, "collection", "list", "office").stdout.split() == [P2]
    first = Ledger(db).store.read_log()[0]
    then = _run(db, "collection", "list", "office", "--known-at", first.recorded_at, "--json")
    assert json.loads(then.stdout)["members"] == sorted([P1, P2])
    assert json.loads(_run(db, "collection", "list", "--json").stdout)["collections"] == [
        {"name": "office", "members": 1}
    ]
    writer = Ledger(db).store.writers.writer_of(2)
    assert writer is not None and (writer.writer, writer.via) == (f"cli:{cli_user()}", "ledger collection")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(("add", "a b", P1), "error: name: bad collection name 'a b'", id="name"),
        pytest.param(("add", "office", "nope"), "error: add[0]: bad arXiv id 'nope'", id="id"),
        pytest.param(("remove", "never", P1), "error: no collection 'never'", id="never-made"),
        pytest.param(("list", "never"), "error: no collection 'never'", id="list-never"),
    ],
)
def test_a_bad_change_or_name_is_one_line_exit_1_and_writes_nothing(
    new_db: NewDb, args: tuple[str, ...], message: str
) -> None:
    db = new_db()
    Ledger(db).close()
    done = _run(db, "collection", *args)
    assert done.exit_code == 1 and done.stderr.startswith(message), done.output
    assert Ledger(db).head().seq == 0


def test_a_collection_is_watched_from_the_cli(new_db: NewDb) -> None:
    db = new_db()
    assert _run(db, "collection", "add", "office", P1).exit_code == 0
    watched = _run(db, "watch", "add", "--collection", "office")
    assert watched.exit_code == 0, watched.output
    assert watched.stdout.startswith("watch ") and ": collection office; 0 work(s) covered" in watched.stdout
    listed = _run(db, "watch", "list").stdout
    assert " collection office " in listed
    missing = _run(db, "watch", "add", "--collection", "nobody")
    assert missing.exit_code == 1 and "no collection 'nobody'" in missing.stderr
