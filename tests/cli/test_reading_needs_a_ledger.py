"""A command that only reads refuses a missing SQLite ledger instead of making an empty one."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.main import main

READS = [
    ["record", "2509.02480"],
    ["events"],
    ["diff", "2509.02480", "2026-01-01", "2026-02-01"],
    ["timeline", "2509.02480"],
    ["verify"],
    ["scrub"],
    ["proof", "1"],
    ["consistency", "1"],
    ["bundle", "2509.02480", "--out", "x.bundle.json"],
    ["search", "memory"],
    ["stats"],
    ["status"],
    ["alerts"],
    ["watch", "list"],
]


@pytest.mark.parametrize("args", READS, ids=[" ".join(a[:2]) for a in READS])
def test_a_read_in_a_folder_without_a_ledger_says_where_to_run_it(
    args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("LEDGER_DB", raising=False)
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1, result.output
    assert result.output == (
        "error: no ledger at ledger.db: run this in the folder where `ledger serve` or `ledger import` "
        "made one, or name it with --db or LEDGER_DB (nothing was created)\n"
    )
    assert list(tmp_path.iterdir()) == []


def test_the_ledger_named_by_db_or_the_environment_is_the_one_checked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LEDGER_DB", str(tmp_path / "elsewhere.db"))
    assert "no ledger at " + str(tmp_path / "elsewhere.db") in CliRunner().invoke(main, ["verify"]).output
    made = CliRunner().invoke(main, ["import", "--db", "made.db", _sample(tmp_path)])
    assert made.exit_code == 0, made.output
    verified = CliRunner().invoke(main, ["verify", "--db", "made.db"])
    assert verified.exit_code == 0 and verified.output.startswith("OK: 132 events verified"), verified.output


def _sample(folder: Path) -> str:
    record = folder / "sample.json"
    record.write_bytes(CliRunner().invoke(main, ["sample"]).stdout_bytes)
    return str(record)
