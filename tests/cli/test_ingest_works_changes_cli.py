"""`ledger ingest works`: the summary names the DOIs whose title or first author the file changed, and
the LEDGER_WORK_MAX_* settings bound a work (a value that is no positive integer: exit 1, named)."""

from __future__ import annotations

import json
from pathlib import Path

from click.testing import CliRunner

from cli.main import main
from tests.conftest import NewDb
from tests.service.test_works_limits import item, ndjson

T = "2026-11-01T00:00:00Z"
T2 = "2026-11-02T00:00:00Z"


def _ingest(db: str, path: Path, at: str, *args: str, env: dict[str, str] | None = None):
    return CliRunner().invoke(
        main, ["ingest", "works", str(path), "--observed-at", at, *args, "--db", db], env=env
    )


def test_the_summary_lists_the_changed_dois(new_db: NewDb, tmp_path: Path) -> None:
    db = new_db()
    first, second = tmp_path / "a.ndjson", tmp_path / "b.ndjson"
    first.write_bytes(ndjson(item("10.1/a"), item("10.1/b")))
    second.write_bytes(ndjson(item("10.1/a", title=["Another"]), item("10.1/b")))
    assert _ingest(db, first, T).exit_code == 0
    r = _ingest(db, second, T2)
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines()[-1] == "  changed the title or first author of 1 work: 10.1/a (title)"
    j = _ingest(db, second, "2026-11-03T00:00:00Z", "--json")
    assert json.loads(j.stdout)["changed"] == {"count": 0, "listed": []}


def test_the_limits_come_from_the_environment(new_db: NewDb, tmp_path: Path) -> None:
    db = new_db()
    f = tmp_path / "a.ndjson"
    f.write_bytes(ndjson(item("10.1/a", title=["x" * 11])))
    r = _ingest(db, f, T, "--json", env={"LEDGER_WORK_MAX_TITLE": "10"})
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["skipped"] == {"title longer than LEDGER_WORK_MAX_TITLE": 1}
    bad = _ingest(db, f, T, env={"LEDGER_WORK_MAX_TITLE": "ten"})
    assert (
        bad.exit_code == 1
        and "LEDGER_WORK_MAX_TITLE must be a positive integer (characters), got 'ten'" in bad.output
    )
