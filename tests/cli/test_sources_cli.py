"""`ledger ingest` and `ledger diff`: summaries, refusals, the progress bar on stderr."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

import cli.sources as cli_sources
from cli.main import main
from tests.conftest import NewDb
from tests.service.sources.test_sources_support import SOURCES_DIR, T_INGEST, imported_sample

RW = str(SOURCES_DIR / "retraction_watch.csv")


@pytest.fixture
def db(new_db: NewDb) -> str:
    return imported_sample(new_db())


def _ingest(db: str, *args: str) -> Result:
    return CliRunner().invoke(main, ["ingest", *args, "--db", db])


def test_ingest_prints_a_summary_and_is_idempotent(db: str) -> None:
    first = _ingest(db, "retraction-watch", RW, "--observed-at", T_INGEST)
    assert first.exit_code == 0, first.output
    assert "read 11, matched 1" in first.stdout
    assert "skipped: 10 no_matching_work" in first.stdout
    again = _ingest(db, "retraction-watch", RW, "--observed-at", T_INGEST, "--json")
    summary = json.loads(again.stdout)
    assert summary["appended"] == 0 and summary["duplicates"] == 1 and summary["notices"] == 1


def test_refused_file_exits_1_and_writes_nothing(db: str) -> None:
    before = CliRunner().invoke(main, ["events", "--db", db]).stdout
    r = _ingest(db, "crossref", RW, "--observed-at", T_INGEST)
    assert r.exit_code == 1
    assert "refused, nothing written" in r.stderr and "not a Crossref" in r.stderr
    assert CliRunner().invoke(main, ["events", "--db", db]).stdout == before


def test_observed_at_is_required(db: str) -> None:
    r = _ingest(db, "retraction-watch", RW)
    assert r.exit_code == 2 and "--observed-at" in r.stderr


def test_opencitations_id_option(db: str) -> None:
    path = str(SOURCES_DIR / "opencitations_count.json")
    r = _ingest(db, "opencitations", path, "--observed-at", T_INGEST, "--id", "doi:10.48550/arXiv.2310.04610")
    assert r.exit_code == 0 and "measurements: 1" in r.stdout


def test_progress_bar_on_stderr_for_large_files(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cli_sources, "PROGRESS_BYTES", 1)
    r = _ingest(db, "retraction-watch", RW, "--observed-at", T_INGEST)
    assert r.exit_code == 0
    assert "reading" in r.stderr and "reading" not in r.stdout


def test_stdin_input(db: str) -> None:
    r = CliRunner().invoke(
        main,
        ["ingest", "retraction-watch", "-", "--observed-at", T_INGEST, "--db", db],
        input=Path(RW).read_bytes(),
    )
    assert r.exit_code == 0 and "notices: 1" in r.stdout


def test_diff_errors(db: str) -> None:
    r = CliRunner().invoke(main, ["diff", "2509.02480", "2026-09-02", "2026-09-01", "--db", db])
    assert r.exit_code == 1 and "after" in r.stderr
    r = CliRunner().invoke(main, ["diff", "2509.02480", "later", "2026-09-01", "--db", db])
    assert r.exit_code == 2
    r = CliRunner().invoke(main, ["diff", "2509.02480", "2026-08-09", "2026-08-10", "--db", db, "--text"])
    assert r.exit_code == 0 and "no change" in r.stdout
