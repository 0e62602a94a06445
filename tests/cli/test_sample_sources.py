"""`ledger sample --sources DIR`: the sample source files the docs ingest, shipped with the package."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.main import main
from tests.paths import DATA, ROOT

SHIPPED = ROOT / "ledger" / "samples" / "sources"


def test_writes_every_shipped_source_file_byte_for_byte(tmp_path: Path):
    out = tmp_path / "new" / "sources"
    result = CliRunner().invoke(main, ["sample", "--sources", str(out)])
    assert result.exit_code == 0, result.output
    shipped = sorted(p.name for p in SHIPPED.iterdir())
    assert "retraction_watch.csv" in shipped and "crossref_work.json" in shipped
    assert sorted(p.name for p in out.iterdir()) == shipped
    for name in shipped:
        assert (out / name).read_bytes() == (SHIPPED / name).read_bytes(), name
    assert result.output == f"{len(shipped)} sample source files in {out}/: {', '.join(shipped)}\n"


def test_writing_twice_is_harmless(tmp_path: Path):
    for _ in range(2):
        result = CliRunner().invoke(main, ["sample", "--sources", str(tmp_path)])
        assert result.exit_code == 0, result.output


@pytest.mark.parametrize("name", ["retraction_watch.csv", "README.md"])
def test_a_different_file_of_the_users_is_never_overwritten(tmp_path: Path, name: str):
    (tmp_path / name).write_text("mine\n")
    result = CliRunner().invoke(main, ["sample", "--sources", str(tmp_path)])
    assert result.exit_code == 1
    assert f"{name} already there and different; remove them or name another folder" in result.output
    assert (tmp_path / name).read_text() == "mine\n"
    assert not (tmp_path / "crossref_work.json").exists()  # nothing written


def test_a_folder_that_cannot_be_made_is_one_line(tmp_path: Path):
    (tmp_path / "file").write_text("")
    result = CliRunner().invoke(main, ["sample", "--sources", str(tmp_path / "file" / "sub")])
    assert result.exit_code == 1
    where = tmp_path / "file" / "sub"
    assert result.output.startswith(f"error: {where}: cannot write the sample source files")
    assert "Traceback" not in result.output


def test_the_tests_read_the_shipped_files():
    """tests/data/sources is the package's folder, not a copy that could drift."""
    assert (DATA / "sources").resolve() == SHIPPED
