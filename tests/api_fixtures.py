"""Helpers for the API tests: a `ledger serve` subprocess on a free loopback port."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import threading
from collections.abc import Collection, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

from ledger.storage.backend import is_pg_url
from tests.waiting import wait_until

# (a JSON log line holds the URL in quotes)
_SERVING = re.compile(r'Serving (http://[^\s"]+)')


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def ledger_command() -> list[str]:
    """The `ledger` console script next to this interpreter, else the same CLI via -c."""
    script = Path(sys.executable).parent / "ledger"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from entry.main import main; main()"]


def now_rfc3339() -> str:
    """The current instant as RFC 3339 UTC with microseconds."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def measurement_event(arxiv_id: str, value: int) -> dict[str, Any]:
    """A citation-count measurement of a paper observed now, as POST /events takes it."""
    return {
        "type": "measurement.observed",
        "observed_at": now_rfc3339(),
        "data": {
            "arxiv_id": arxiv_id,
            "source": "opencitations",
            "metric": "citation_count",
            "value": value,
            "source_release": None,
            "query_url": None,
        },
    }


@dataclass
class Server:
    """A running `ledger serve`: its base URL, the page URL it printed, and its output so far."""

    base: str
    page_url: str
    proc: subprocess.Popen[str]
    output: list[str] = field(default_factory=list)

    def log(self) -> str:
        """Everything the server printed (for assertion messages)."""
        return "".join(self.output)


def _workdir(db: Path | str, cwd: Path | None) -> Path:
    """Where the server runs: `cwd`, else the SQLite file's directory, else $LEDGER_STATE_DIR (a URL)."""
    if cwd is not None:
        return Path(cwd)
    if not is_pg_url(str(db)):
        return Path(db).parent
    state = os.environ.get("LEDGER_STATE_DIR")
    if not state:
        raise ValueError(f"running_server({db!r}): a database URL needs cwd= (or $LEDGER_STATE_DIR)")
    return Path(state)


@contextmanager
def running_server(
    db: Path | str,
    *,
    env: Mapping[str, str] | None = None,
    args: Sequence[str] = (),
    timeout: float = 30.0,
    cwd: Path | None = None,
    ready: Collection[int] = (200,),
) -> Iterator[Server]:
    """Start `ledger serve` on a free port, wait for /healthz, and always stop it afterwards.

    `db` is a SQLite path or a postgresql:// URL. The server runs in `cwd` (default: the SQLite
    file's directory; for a URL, $LEDGER_STATE_DIR, which new_db sets to the test's tmp_path). For a
    URL, LEDGER_STATE_DIR is passed to the server as that directory, so its key and token files land
    there (every other LEDGER_* variable of this process is dropped; `env` may set any). The server is
    up once /healthz answers with a status in `ready` (a ledger known broken answers 503).
    """
    port = free_port()
    workdir = _workdir(db, cwd)
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_")}
    if is_pg_url(str(db)):
        full_env["LEDGER_STATE_DIR"] = str(workdir)
    full_env.update(env or {})
    cmd = [*ledger_command(), "serve", "--db", str(db), "--host", "127.0.0.1", "--port", str(port)]
    proc = subprocess.Popen(
        [*cmd, *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=full_env,
        cwd=workdir,
    )
    output: list[str] = []
    assert proc.stdout is not None
    stdout = proc.stdout

    # Drain the pipe continuously: uvicorn's access log would otherwise fill it and block the server.
    def drain() -> None:
        for line in iter(stdout.readline, ""):
            output.append(line)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    try:
        base = f"http://127.0.0.1:{port}"

        def serving() -> str | None:
            """The page URL it printed, once it answers healthy."""
            if proc.poll() is not None:
                raise AssertionError(f"ledger serve exited {proc.returncode}:\n{''.join(output)}")
            url = next((m[1] for line in list(output) if (m := _SERVING.search(line))), None)
            return url if url and _healthy(base, ready) else None

        page_url = wait_until(serving, lambda: f"ledger serve healthy:\n{''.join(output)}", timeout)
        yield Server(base, page_url, proc, output)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        reader.join(timeout=5)


def _healthy(base: str, ready: Collection[int] = (200,)) -> bool:
    try:
        return httpx.get(f"{base}/healthz", timeout=1.0).status_code in ready
    except httpx.HTTPError:
        return False


def worker_of(server: Server, answer: httpx.Response) -> int:
    """The pid of the worker that gave `answer`: its JSON request line carries the answer's X-Request-Id."""
    rid = answer.headers["X-Request-Id"]

    def pid() -> int | None:
        for line in server.log().splitlines():
            if rid in line and line.startswith("{"):
                fields = json.loads(line)
                if fields["logger"] == "ledger.http" and fields.get("request_id") == rid:
                    return int(fields["pid"])
        return None

    # the line is written as the answer ends: soon after we read it
    return wait_until(pid, lambda: f"a request line for {rid}:\n{server.log()}", 60.0, every=0.02)


def from_both_workers(server: Server, path: str, **kw: Any) -> Iterator[httpx.Response]:
    """GET `path` until both workers have answered it (bounded), yielding every answer (the server runs
    `--workers 2` with LEDGER_LOG_FORMAT=json)."""
    workers: set[int] = set()
    for _ in range(400):
        answer = httpx.get(server.base + path, timeout=10, **kw)
        yield answer
        workers.add(worker_of(server, answer))
        if len(workers) == 2:
            return
    raise AssertionError(f"one worker answered every GET {path}:\n{server.log()}")
