"""`ledger import` of NDJSON as a stream: .gz and .zst, --batch-size and $LEDGER_IMPORT_BATCH, a line
named when refused, a summary line without a terminal, and a kill -9 mid-file resumed by the same
command with every event exactly once."""

from __future__ import annotations

import gzip
import io
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import msgspec
import pytest
import zstandard
from click.testing import CliRunner

from cli.main import main
from cli.progress import Meter
from ledger.model.codec import event_to_dict
from ledger.model.events import Event
from service.ledger import Ledger
from tests import factories as fx
from tests.api_fixtures import ledger_command
from tests.conftest import NewDb


def _events(n: int) -> list[bytes]:
    """n papers, each citing the one before and resolved to it: 3n - 2 NDJSON lines."""
    out: list[Event] = []
    for i in range(n):
        pid = f"2101.{i + 1:05d}"
        out.append(fx.paper(pid, fx.ts(i), title=f"Paper {i}"))
        if i:
            oid = fx.oid_of(i)
            out.append(fx.citation(oid, pid, fx.ts(i, 1)))
            out.append(fx.resolution(oid, fx.ts(i, 2), cited_arxiv=f"2101.{i:05d}"))
    return [msgspec.json.encode(event_to_dict(e)) + b"\n" for e in out]


@pytest.mark.parametrize(
    ("suffix", "encode"),
    [(".ndjson", lambda b: b), (".ndjson.gz", gzip.compress), (".ndjson.zst", zstandard.compress)],
)
def test_a_compressed_file_is_imported_in_batches(
    new_db: NewDb, tmp_path: Path, suffix: str, encode: object
) -> None:
    path = tmp_path / f"f{suffix}"
    path.write_bytes(encode(b"".join(_events(10))))  # type: ignore[operator]
    db = new_db()
    r = CliRunner().invoke(main, ["import", str(path), "--db", db], env={"LEDGER_IMPORT_BATCH": "10"})
    assert r.exit_code == 0, r.output
    assert f"{path}: 28 appended, 0 duplicate (head seq 28); 28 lines in" in r.output
    assert "lines/s, 3 batches)" in r.output and "\r" not in r.output  # no terminal: no progress line
    again = CliRunner().invoke(main, ["import", str(path), "--db", db, "--batch-size", "4"])
    assert f"{path}: 0 appended, 0 duplicate (head seq 28); resumed after line 28\n" in again.output


def test_a_refused_line_is_named_and_nothing_is_written(new_db: NewDb, tmp_path: Path) -> None:
    lines = _events(10)
    lines[20] = b'{"type": "paper.observed"}\n'
    path = tmp_path / "f.ndjson.gz"
    path.write_bytes(gzip.compress(b"".join(lines)))
    db = new_db()
    r = CliRunner().invoke(main, ["import", str(path), "--db", db, "--batch-size", "5"])
    assert r.exit_code == 1
    assert f"{path}: refused, nothing written: line 21" in r.output
    assert Ledger(db).head().seq == 0


@pytest.mark.parametrize("size", [0, 1])
def test_the_batch_size_must_be_positive(new_db: NewDb, tmp_path: Path, size: int) -> None:
    path = tmp_path / "f.ndjson"
    path.write_bytes(b"".join(_events(3)))
    r = CliRunner().invoke(main, ["import", str(path), "--db", new_db(), "--batch-size", str(size)])
    assert (r.exit_code == 0) == (size == 1), r.output


def test_the_progress_line_says_lines_rate_and_time_left() -> None:
    out = io.StringIO()
    meter = Meter(out, "f.ndjson", every=0)
    meter.update("checking", 5000, 50, 100)
    meter.update("appending", 5000, 100, 100)
    meter.close()
    drawn = out.getvalue().split("\r")
    assert drawn[1].startswith("f.ndjson: checking 5,000 lines, ") and "lines/s, 50% read, " in drawn[1]
    assert drawn[1].endswith(", then the appends")
    assert drawn[2].startswith("f.ndjson: appending 5,000 lines, ") and "100% read, done" in drawn[2]
    assert drawn[-1] == ""  # the line is cleared at the end


_KILL_AFTER = """
import os, signal, sys
from service.ledger import Ledger
from tests.api_fixtures import ledger_command
after, calls, append = int(sys.argv[1]), [0], Ledger.append
def killed(self, *args, **kwargs):
    result = append(self, *args, **kwargs)
    calls[0] += 1
    if calls[0] == after:  # committed: killed before anything else runs
        os.kill(os.getpid(), signal.SIGKILL)
    return result
Ledger.append = killed
from entry.main import main
sys.argv = ["ledger", *sys.argv[2:]]
main()
"""


@pytest.mark.process
def test_an_import_killed_mid_file_is_resumed_by_the_same_command(new_db: NewDb, tmp_path: Path) -> None:
    lines = _events(40)  # 118 lines
    path = tmp_path / "f.ndjson.gz"
    path.write_bytes(gzip.compress(b"".join(lines)))
    db = new_db()
    command = ["import", str(path), "--db", db, "--batch-size", "25"]
    killed = subprocess.run(
        [sys.executable, "-c", _KILL_AFTER, "3", *command], capture_output=True, env=os.environ, check=False
    )
    assert killed.returncode == -signal.SIGKILL
    ledger = Ledger(db)
    assert ledger.head().seq == 75
    ledger.close()
    resumed = subprocess.run([*ledger_command(), *command], capture_output=True, text=True, check=False)
    assert resumed.returncode == 0, resumed.stderr
    assert "43 appended, 0 duplicate (head seq 118); 43 lines in" in resumed.stdout
    assert "2 batches); resumed after line 75" in resumed.stdout
    ledger = Ledger(db)
    log = ledger.store.read_log()
    assert [e.seq for e in log] == list(range(1, 119)) and len({e.event_id for e in log}) == 118
    ledger.close()
    verify = subprocess.run(
        [*ledger_command(), "verify", "--db", db], capture_output=True, text=True, check=False
    )
    assert verify.returncode == 0 and verify.stdout.startswith("OK: 118 events verified"), verify.stdout


def test_a_damaged_compressed_file_is_refused_whole(new_db: NewDb, tmp_path: Path) -> None:
    path = tmp_path / "f.ndjson.gz"
    path.write_bytes(gzip.compress(b"".join(_events(10)))[:-12])  # cut before its end
    db = new_db()
    r = CliRunner().invoke(main, ["import", str(path), "--db", db])
    assert r.exit_code == 1
    assert f"{path}: refused, nothing written: file: a damaged compressed stream" in r.output
    assert Ledger(db).head().seq == 0


def test_the_import_summary_writes_every_number_the_same_way(new_db: NewDb, tmp_path: Path) -> None:
    """Counts of a thousand and more are grouped by thousands throughout, as the lines and the rate are."""
    path = tmp_path / "f.ndjson"
    path.write_bytes(b"".join(_events(400)))  # 1,198 lines
    r = CliRunner().invoke(main, ["import", str(path), "--db", new_db(), "--batch-size", "500"])
    assert r.exit_code == 0, r.output
    first, total = r.output.splitlines()
    assert first.startswith(f"{path}: 1,198 appended, 0 duplicate (head seq 1,198); 1,198 lines in ")
    assert total == "1,198 appended, 0 duplicate, 0 file(s) refused; head seq 1,198"
    assert not re.search(r"\d{4}", first.replace(str(path), "")), first
