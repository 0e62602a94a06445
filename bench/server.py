"""A real uvicorn process serving the bench app over one ledger (file or URL) on a free loopback port."""

from __future__ import annotations

import http.client
import json
import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.util import PROFILES, PYTHON, ROOT, free_port

TOKEN = "bench-token"
AUTH = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}


class Server:
    """`with Server(db) as s:` starts uvicorn (one worker, as `ledger serve` does) and stops it after."""

    def __init__(self, db: str | Path, static_file: Path | None = None) -> None:
        self.db = db
        self.static_file = static_file
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self.log = tempfile.TemporaryFile()  # noqa: SIM115 - closed in __exit__

    def __enter__(self) -> Server:
        env = {**os.environ, "LEDGER_DB": str(self.db), "LEDGER_TOKENS": TOKEN}
        if self.static_file is not None:
            env["BENCH_STATIC_FILE"] = str(self.static_file)
        cmd = [PYTHON, "-m", "uvicorn", "--factory", "bench.httpapp:create_bench_app", "--host", "127.0.0.1",
               "--port", str(self.port), "--log-level", "warning", "--no-access-log"]  # fmt: skip
        self.proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=self.log, stderr=self.log)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited: {self._log()}")
            try:
                status, _ = self.request("GET", "/healthz")
                if status == 200:
                    return self
            except OSError:
                time.sleep(0.1)
        raise RuntimeError(f"the server did not answer in 60 s: {self._log()}")

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()

    def _log(self) -> str:
        self.log.seek(0)
        return self.log.read().decode(errors="replace")[-3000:]

    def request(self, method: str, path: str, body: bytes | None = None) -> tuple[int, bytes]:
        """One request on a fresh connection."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=120)
        try:
            conn.request(method, path, body=body, headers=AUTH if body is not None else {})
            resp = conn.getresponse()
            return resp.status, resp.read()
        finally:
            conn.close()

    def load(self, **spec: Any) -> dict[str, Any]:
        """Run bench/load.py against this server with the given spec (see load.py)."""
        spec = {"port": self.port, "headers": {}, "concurrency": 8, "collect_seqs": False, **spec}
        out = subprocess.run([PYTHON, "-m", "bench.load"], cwd=ROOT, input=json.dumps(spec).encode(),
                             capture_output=True, timeout=spec["max_seconds"] + 120, check=True)  # fmt: skip
        answer: dict[str, Any] = json.loads(out.stdout.decode().strip().splitlines()[-1])
        if answer["errors"]:
            raise RuntimeError(f"load errors: {answer['errors'][:3]}; server log: {self._log()}")
        return answer

    def profile(self, name: str, seconds: float, drive: Any) -> str:
        """py-spy the server while `drive()` loads it; write bench/profiles/NAME.{speedscope.json,txt}."""
        assert self.proc is not None
        PROFILES.mkdir(parents=True, exist_ok=True)
        raw = PROFILES / f"{name}.raw.txt"
        spy = subprocess.Popen(
            [str(Path(PYTHON).with_name("py-spy")), "record", "--pid", str(self.proc.pid), "--duration",
             str(int(seconds) + 1), "--rate", "250", "--format", "raw", "--nonblocking", "-o", str(raw)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        time.sleep(0.5)
        drive()
        spy.wait(timeout=seconds + 60)
        from bench.profiles import summarise_raw

        return summarise_raw(raw, PROFILES / f"{name}.txt")
