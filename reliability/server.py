"""A `ledger serve` process for the drivers: started in its own process group, stopped or killed whole."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ledger_cmd() -> list[str]:
    """The `ledger` CLI of this interpreter."""
    return [sys.executable, "-c", "from entry.main import main; main()"]


def workdir_of(db: str | Path, workdir: Path | None = None) -> Path:
    """Where a server of `db` runs: `workdir`, else the SQLite file's directory, else (a database URL)
    $LEDGER_STATE_DIR, where its key and token files are."""
    if workdir is not None:
        return Path(workdir)
    if not is_url(db):
        return Path(db).parent
    state = os.environ.get("LEDGER_STATE_DIR")
    if not state:
        raise ValueError(f"{db}: a database URL needs a workdir (or $LEDGER_STATE_DIR)")
    return Path(state)


def is_url(db: str | Path) -> bool:
    """Whether `db` is a postgresql:// URL rather than a SQLite file."""
    return str(db).startswith(("postgresql://", "postgres://"))


class Server:
    """One running `ledger serve` (with its uvicorn workers, all in one process group).

    `db` is a SQLite file or a postgresql:// URL; the server runs in `workdir` (default: see
    workdir_of), which is also its $LEDGER_STATE_DIR for a URL."""

    def __init__(
        self,
        db: str | Path,
        *,
        env: Mapping[str, str] | None = None,
        args: Sequence[str] = (),
        port: int = 0,
        workdir: Path | None = None,
    ) -> None:
        self.port = port or free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        cwd = workdir_of(db, workdir)
        full_env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_")}
        if is_url(db):
            full_env["LEDGER_STATE_DIR"] = str(cwd)
        full_env.update(env or {})
        full_env["PYTHONPATH"] = str(ROOT)
        cmd = [*ledger_cmd(), "serve", "--db", str(db), "--port", str(self.port), "--no-samples", *args]
        self.output: list[str] = []
        # its own session: a kill reaches the supervisor and every worker at once
        self.proc = subprocess.Popen(
            cmd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=full_env,
            cwd=cwd,
            start_new_session=True,
        )
        assert self.proc.stdout is not None
        stdout = self.proc.stdout
        drain = lambda: self.output.extend(iter(stdout.readline, ""))  # noqa: E731 - keeps the pipe empty
        self._reader = threading.Thread(target=drain, daemon=True)
        self._reader.start()

    def log(self) -> str:
        """What the server printed."""
        return "".join(self.output)

    def wait_healthy(self, timeout: float = 30.0, workers: int = 1) -> None:
        """Until /healthz answers (and, with workers, until every worker has started)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"ledger serve exited {self.proc.returncode}:\n{self.log()}")
            started = self.log().count("Application startup complete")
            try:
                if httpx.get(f"{self.base}/healthz", timeout=1.0).status_code == 200 and started >= workers:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        raise AssertionError(f"ledger serve did not become healthy:\n{self.log()}")

    def kill9(self) -> None:
        """SIGKILL to the whole group: no shutdown, no flush, no goodbye."""
        with suppress(ProcessLookupError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(timeout=10)
        self._reader.join(timeout=5)

    def stop(self) -> None:
        """SIGTERM to the group, then SIGKILL if it lingers."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill9()
            except ProcessLookupError:
                pass
        self._reader.join(timeout=5)


@contextmanager
def serving(
    db: str | Path, *, args: Sequence[str] = (), workers: int = 1, **options: Any
) -> Iterator[Server]:
    """A healthy server for the block (other options as Server's); always stopped afterwards."""
    server = Server(db, args=[*args, "--workers", str(workers)], **options)
    try:
        server.wait_healthy(workers=workers)
        yield server
    finally:
        server.stop()
