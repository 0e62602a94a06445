"""`ledger ingest works FILE --observed-at T [--db PATH]`."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from cli.main import main
from tests.api_fixtures import ledger_command
from tests.conftest import NewDb

DATA = Path(__file__).resolve().parent.parent / "data" / "works"
T = "2026-11-01T00:00:00Z"


@pytest.fixture
def db(new_db: NewDb) -> str:
    return new_db()


def _ingest(db: str, *args: str, stdin: bytes | None = None) -> Result:
    return CliRunner().invoke(main, ["ingest", "works", *args, "--db", db], input=stdin)


def test_ingest_works_prints_a_summary_and_appends_once(db: str) -> None:
    r = _ingest(db, str(DATA / "crossref-works.json"), "--observed-at", T)
    assert r.exit_code == 0, r.output
    assert r.stdout.splitlines() == [
        f"works at {T}: read 3, works 2 (2 crossref)",
        "  skipped: 1 no DOI (e.g. item 3)",
        "  2 appended, 0 unchanged, 0 duplicate; head seq 2",
    ]
    again = _ingest(db, str(DATA / "crossref-works.json"), "--observed-at", "2026-11-02T00:00:00Z", "--json")
    assert again.exit_code == 0
    summary = json.loads(again.stdout)
    assert (summary["appended"], summary["unchanged"], summary["head"]["seq"]) == (0, 2, 2)


def test_ingest_works_reads_stdin(db: str) -> None:
    r = _ingest(db, "-", "--observed-at", T, "--json", stdin=(DATA / "openalex-works.ndjson").read_bytes())
    assert r.exit_code == 0, r.output
    assert json.loads(r.stdout)["appended"] == 2


def test_a_refused_file_exits_1_and_writes_nothing(db: str, tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"hello": "world"}')
    r = _ingest(db, str(bad), "--observed-at", T)
    assert r.exit_code == 1
    assert "refused, nothing written: file: not a works file: value 1 (hello)" in r.stderr
    assert CliRunner().invoke(main, ["events", "--db", db]).stdout == ""


@pytest.mark.parametrize("extra", [["--id", "doi:10.1/x"], ["--force"]])
def test_options_of_other_sources_are_refused(db: str, extra: list[str]) -> None:
    r = _ingest(db, str(DATA / "crossref-work.json"), "--observed-at", T, *extra)
    assert r.exit_code == 2 and "not for works" in r.stderr


@pytest.mark.process
def test_a_stream_past_the_cap_is_refused_before_it_fills_the_disk(db: str) -> None:
    # a pipe has no size: its copy for the second pass is counted against --max-decompressed as it arrives
    body = (DATA / "openalex-works.ndjson").read_bytes()
    run = [*ledger_command(), "ingest", "works", "-", "--observed-at", T, "--db", db]
    small = subprocess.run(
        [*run, "--max-decompressed", str(len(body) - 1)], input=body, capture_output=True, check=False
    )
    err = small.stderr.decode()
    assert small.returncode == 1 and "Traceback" not in err
    assert f"a stream of more than {len(body) - 1:,} bytes (the limit --max-decompressed" in err
    assert CliRunner().invoke(main, ["events", "--db", db]).stdout == ""
    enough = subprocess.run(
        [*run, "--max-decompressed", str(len(body))], input=body, capture_output=True, check=False
    )
    assert enough.returncode == 0 and "2 appended" in enough.stdout.decode(), enough.stderr
