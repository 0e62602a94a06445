"""`ledger witness serve` as a real process: a cosignature survives SIGKILL, so after a restart on the
same --db the witness still refuses a checkpoint inconsistent with the one it cosigned."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import httpx

from ledger.tlog.cosign import cosignatures, parse_witness_vkey
from tests.api_fixtures import free_port
from tests.paths import ROOT
from tests.service.proofs.test_witness import FORKED, LOG, add, body, note, proof
from tests.waiting import wait_until

REPO = ROOT


def _ledger(*args: str) -> list[str]:
    # this checkout's CLI (an installed `ledger` script may belong to another checkout)
    return [sys.executable, "-c", "from entry.main import main; main()", *args]


def _env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_")}
    env["PYTHONPATH"] = str(REPO)
    env.update(extra or {})
    return env


@contextmanager
def witness_process(
    tmp: Path,
    port: int,
    name: str = "witness.example/w1",
    log: str = LOG.verifier.vkey,
    env: Mapping[str, str] | None = None,
) -> Iterator[subprocess.Popen[str]]:
    """`ledger witness serve` on 127.0.0.1:port with its key and state in `tmp`, up and answering;
    `env` adds LEDGER_* variables (the process gets none of this one's)."""
    cmd = _ledger(
        "witness", "serve", "--key", str(tmp / "witness.key"), "--name", name,
        "--log", log, "--db", str(tmp / "witness.db"), "--port", str(port),
    )  # fmt: skip
    proc = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=_env(env), cwd=REPO
    )
    output: list[str] = []
    assert proc.stdout is not None
    stdout = proc.stdout
    threading.Thread(target=lambda: output.extend(iter(stdout.readline, "")), daemon=True).start()

    def answering() -> bool:
        assert proc.poll() is None, f"the witness exited {proc.returncode}:\n{''.join(output)}"
        try:
            # an empty body: 400 once the server listens, and it changes nothing
            return httpx.post(f"http://127.0.0.1:{port}/add-checkpoint", content=b"").status_code == 400
        except httpx.TransportError:
            return False

    try:
        wait_until(answering, lambda: f"the witness answering:\n{''.join(output)}", 30)
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=10)


def _post(port: int, request: bytes) -> httpx.Response:
    return httpx.post(f"http://127.0.0.1:{port}/add-checkpoint", content=request, timeout=10)


def test_a_killed_witness_remembers_what_it_cosigned(tmp_path: Path) -> None:
    port = free_port()
    vkey = subprocess.run(
        _ledger("witness", "vkey", "--key", str(tmp_path / "witness.key"), "--name", "witness.example/w1"),
        capture_output=True, text=True, env=_env(), cwd=REPO, check=True,
    ).stdout.strip()  # fmt: skip
    witness = parse_witness_vkey(vkey)
    with witness_process(tmp_path, port) as proc:
        r = _post(port, add(0, 8))
        assert r.status_code == 200, r.text
        assert cosignatures(note(8) + r.text, [witness])[vkey] > 0
        proc.send_signal(signal.SIGKILL)  # no shutdown: only what was on disk before the answer counts
        proc.wait(timeout=10)

    port = free_port()
    with witness_process(tmp_path, port):
        # a rewrite of the history it cosigned: same size, another root; and a fork grown from it
        r = _post(port, body(8, [], note(8, FORKED)))
        assert (r.status_code, r.text, r.headers["content-type"]) == (409, "8\n", "text/x.tlog.size")
        assert _post(port, body(8, proof(8, 13, FORKED), note(13, FORKED))).status_code == 422
        # a log that forgot it (old 0) is told the size it must prove from
        assert (_post(port, add(0, 13)).status_code, _post(port, add(0, 13)).text) == (409, "8\n")
        r = _post(port, add(8, 13))
        assert r.status_code == 200, r.text
        assert set(cosignatures(note(13) + r.text, [witness])) == {vkey}
