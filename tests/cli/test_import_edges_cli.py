"""`ledger import` as a program, of what is not a regular file (/dev/stdin from a pipe, a FIFO, bash's
process substitution): read once, imported, no traceback; a bomb refused naming its flag; and a file
replaced after a stop refused naming both hashes, imported from line 1 with --restart."""

from __future__ import annotations

import gzip
import hashlib
import os
import shlex
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.main import main
from service.intake import load
from service.intake.load import file_key, import_file
from service.ledger import Ledger
from tests.api_fixtures import ledger_command
from tests.conftest import NewDb

from .test_import_stream_cli import _KILL_AFTER, _events

LINES = _events(12)  # 34 lines
DATA = b"".join(LINES)


def _ok(r: subprocess.CompletedProcess[str], db: str) -> None:
    assert r.returncode == 0, r.stderr
    assert "Traceback" not in r.stderr
    assert "34 appended, 0 duplicate (head seq 34)" in r.stdout
    ledger = Ledger(db)
    try:
        assert ledger.head().seq == 34 and ledger.verify().ok
    finally:
        ledger.close()


@pytest.mark.process
@pytest.mark.parametrize("encode", [lambda b: b, gzip.compress], ids=["plain", "gzip"])
def test_dev_stdin_from_a_pipe(new_db: NewDb, encode: object) -> None:
    db = new_db()
    r = subprocess.run(
        [*ledger_command(), "import", "/dev/stdin", "--db", db, "--batch-size", "10"],
        input=encode(DATA),  # type: ignore[operator]
        capture_output=True,
        check=False,
    )
    _ok(subprocess.CompletedProcess(r.args, r.returncode, r.stdout.decode(), r.stderr.decode()), db)


@pytest.mark.process
def test_a_fifo(new_db: NewDb, tmp_path: Path) -> None:
    db, fifo = new_db(), tmp_path / "fifo"
    os.mkfifo(fifo)

    def feed() -> None:
        with fifo.open("wb") as f:
            f.write(gzip.compress(DATA))

    writer = threading.Thread(target=feed, daemon=True)
    writer.start()
    r = subprocess.run(
        [*ledger_command(), "import", str(fifo), "--db", db], capture_output=True, text=True, check=False
    )
    writer.join(timeout=10)
    _ok(r, db)


@pytest.mark.process
@pytest.mark.skipif(shutil.which("bash") is None, reason="process substitution is bash's")
def test_bash_process_substitution(new_db: NewDb, tmp_path: Path) -> None:
    db, path = new_db(), tmp_path / "f.ndjson"
    path.write_bytes(DATA)
    command = (
        f"{shlex.join([*ledger_command(), 'import'])} <(cat {shlex.quote(str(path))}) --db {shlex.quote(db)}"
    )
    r = subprocess.run(["bash", "-c", command], capture_output=True, text=True, check=False)
    _ok(r, db)


@pytest.mark.process
def test_a_bomb_through_a_pipe_is_refused_in_one_line(new_db: NewDb) -> None:
    db = new_db()
    r = subprocess.run(
        [*ledger_command(), "import", "/dev/stdin", "--db", db],
        input=gzip.compress(LINES[0] + b"\n" * (32 << 20)),
        capture_output=True,
        check=False,
    )
    err = r.stderr.decode()
    assert r.returncode == 1 and "Traceback" not in err
    assert "/dev/stdin: refused, nothing written: file: a gzip stream that expands more than 100 times" in err
    assert "(--max-expansion, LEDGER_IMPORT_MAX_EXPANSION)" not in err  # named as "the limit ..."
    assert "the limit --max-expansion, LEDGER_IMPORT_MAX_EXPANSION" in err
    ok = subprocess.run(
        [*ledger_command(), "import", "/dev/stdin", "--db", db, "--max-expansion", "1000000"],
        # a second event after the blank run: one line alone would be read whole, past its 32 MiB
        input=gzip.compress(LINES[0] + b"\n" * (32 << 20) + LINES[1]),
        capture_output=True,
        check=False,
    )
    assert ok.returncode == 0 and "2 appended" in ok.stdout.decode(), ok.stderr


def test_a_replaced_file_is_refused_naming_both_hashes_then_restarted(
    new_db: NewDb, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(load, "HEAD_BYTES", 8)  # the identity covers the first 8 bytes only
    db, path = new_db(), tmp_path / "f.ndjson"
    path.write_bytes(DATA)
    ledger = Ledger(db)

    class Stop(Exception):
        pass

    def stop(phase: str, lines: int, read: int, size: int) -> None:
        if phase == load.APPENDING and lines >= 10:
            raise Stop  # after the first batch committed: as a kill would leave it

    with pytest.raises(Stop):
        import_file(ledger, path, batch_size=10, progress=stop)
    progress = ledger.store.imports.import_progress(file_key(path))
    ledger.close()
    assert progress is not None and progress.lines_done == 10
    path.write_bytes(DATA.replace(b'"Paper 1"', b'"Paper Y"'))  # same size and first bytes
    found = hashlib.sha256(path.read_bytes()[: progress.bytes_done]).hexdigest()
    r = CliRunner().invoke(main, ["import", str(path), "--db", db, "--batch-size", "10"])
    assert r.exit_code == 1
    assert f"{path}: refused, nothing written: not the file an earlier import" in r.output
    assert f"sha256 {found}, the committed ones had sha256 {progress.prefix_sha256}" in r.output
    assert "--restart" in r.output
    again = CliRunner().invoke(main, ["import", str(path), "--db", db, "--batch-size", "10", "--restart"])
    assert again.exit_code == 0, again.output
    assert f"{path}: 25 appended, 9 duplicate (head seq 35)" in again.output


@pytest.mark.process
def test_a_file_replaced_after_a_kill_is_refused_then_restarted(new_db: NewDb, tmp_path: Path) -> None:
    """The real thing: kill -9 after 5 batches of a 1.5 MB file, then another file of the same size and
    first MiB in its place (a title past the first MiB changed, inside the committed part)."""
    lines = _events(2000)  # 5,998 lines
    data = b"".join(lines)
    path = tmp_path / "f.ndjson"
    path.write_bytes(data)
    db = new_db()
    command = ["import", str(path), "--db", db, "--batch-size", "1000"]
    killed = subprocess.run(
        [sys.executable, "-c", _KILL_AFTER, "5", *command], capture_output=True, env=os.environ, check=False
    )
    assert killed.returncode == -signal.SIGKILL
    ledger = Ledger(db)
    progress = ledger.store.imports.import_progress(file_key(path))
    ledger.close()
    assert progress is not None and progress.lines_done == 5000
    at = data.find(b'"Paper 1500"')
    assert load.HEAD_BYTES < at < progress.bytes_done  # same identity, other committed bytes
    path.write_bytes(data.replace(b'"Paper 1500"', b'"Paper 9500"'))
    found = hashlib.sha256(path.read_bytes()[: progress.bytes_done]).hexdigest()
    refused = subprocess.run([*ledger_command(), *command], capture_output=True, text=True, check=False)
    assert refused.returncode == 1 and "Traceback" not in refused.stderr
    assert f"{path}: refused, nothing written: not the file an earlier import" in refused.stderr
    assert f"sha256 {found}, the committed ones had sha256 {progress.prefix_sha256}" in refused.stderr
    restarted = subprocess.run(
        [*ledger_command(), *command, "--restart"], capture_output=True, text=True, check=False
    )
    assert restarted.returncode == 0, restarted.stderr
    assert "999 appended, 4,999 duplicate (head seq 5,999)" in restarted.stdout


@pytest.mark.process
@pytest.mark.skipif(shutil.which("bash") is None, reason="process substitution is bash's")
def test_ledger_ingest_works_of_a_process_substitution(new_db: NewDb) -> None:
    """A works file is read twice (checked whole, then appended): a stream is read once, copied aside."""
    works = Path(__file__).resolve().parent.parent / "data" / "works" / "crossref-items.ndjson"
    db = new_db()
    ingest = shlex.join([*ledger_command(), "ingest", "works"])
    rest = shlex.join(["--observed-at", "2026-09-01T12:00:00Z", "--db", db])
    r = subprocess.run(
        ["bash", "-c", f"{ingest} <(cat {shlex.quote(str(works))}) {rest}"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert r.returncode == 0, r.stderr
    assert "2 appended" in r.stdout
