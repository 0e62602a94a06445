"""The `ledger` program as a shell runs it: a stdout its reader closed ends a command quietly with exit
0; `ledger serve` on a port another server holds says so in one line before anything else; `ledger
serve --help` lists the environment it reads. On the backend under test."""

from __future__ import annotations

import os
import socket
import subprocess
from pathlib import Path

import pytest

import api.settings
from service.ledger import Ledger
from tests.api_fixtures import ledger_command
from tests.conftest import NewDb

PAPER = "2509.02480"
TIMEOUT = 60

PRINTING = [
    ["events"],
    ["events", "--limit", "1"],
    ["verify"],
    ["record", PAPER],
    ["search", "memory"],
    ["checkpoint"],
    ["stats"],
    ["timeline", PAPER],
]


def _run_into_closed_pipe(argv: list[str]) -> subprocess.CompletedProcess[bytes]:
    """Run `ledger argv` with stdout a pipe whose reader has already gone (as `| head -1` once head ends)."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run(
            [*ledger_command(), *argv], stdout=write_end, stderr=subprocess.PIPE, timeout=TIMEOUT, check=False
        )
    finally:
        os.close(write_end)


@pytest.mark.parametrize("args", PRINTING, ids=" ".join)
def test_a_command_whose_reader_closed_stdout_exits_0_quietly(
    imported_ledger: Ledger, args: list[str]
) -> None:
    done = _run_into_closed_pipe([*args, "--db", imported_ledger.url])
    assert (done.returncode, done.stderr.decode()) == (0, "")


def test_a_refusal_keeps_its_status_when_stdout_is_closed(imported_ledger: Ledger) -> None:
    done = _run_into_closed_pipe(["record", "2101.00001", "--db", imported_ledger.url])
    assert done.returncode == 1 and done.stderr.decode().startswith("error: ")


@pytest.mark.parametrize("command", ["events", "verify"])
def test_head_dash_1_of_a_command_is_exit_0(imported_ledger: Ledger, command: str) -> None:
    """The shell's own pipe: `ledger COMMAND | head -1`."""
    ledger = subprocess.Popen(
        [*ledger_command(), command, "--db", imported_ledger.url],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert ledger.stdout is not None and ledger.stderr is not None
    head = subprocess.run(
        ["head", "-1"], stdin=ledger.stdout, capture_output=True, timeout=TIMEOUT, check=True
    )
    ledger.stdout.close()  # head holds the only reader now: when it ends, the pipe is closed
    assert ledger.wait(timeout=TIMEOUT) == 0
    assert ledger.stderr.read() == b""
    assert len(head.stdout.splitlines()) == 1


def test_serve_on_a_busy_port_says_so_in_one_line_before_anything(new_db: NewDb, tmp_path: Path) -> None:
    db = new_db()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        done = subprocess.run(
            [*ledger_command(), "serve", "--db", db, "--host", "127.0.0.1", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            cwd=tmp_path,
            check=False,
        )
    assert done.returncode != 0
    assert done.stdout == ""
    assert done.stderr.splitlines() == [
        f"error: cannot listen on 127.0.0.1 port {port}: address already in use "
        "(another server holds it: choose another with --port)"
    ]
    assert Ledger(db).head().seq == 0  # the samples were not loaded for a server that never ran


def test_witness_serve_on_a_busy_port_says_so_before_serving(tmp_path: Path) -> None:
    log_key = subprocess.run(
        [*ledger_command(), "key", "--db", str(tmp_path / "l.db")],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=True,
    ).stdout.strip()
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        argv = ["witness", "serve", "--key", str(tmp_path / "w.key"), "--log", log_key]
        argv += ["--db", str(tmp_path / "w.db"), "--port", str(port)]
        done = subprocess.run(
            [*ledger_command(), *argv], capture_output=True, text=True, timeout=TIMEOUT, check=False
        )
    assert done.returncode != 0 and "serving" not in done.stderr
    assert done.stderr.splitlines()[-1].startswith(f"error: cannot listen on 127.0.0.1 port {port}: ")


def test_serve_help_lists_every_ledger_variable_the_server_reads() -> None:
    done = subprocess.run(
        [*ledger_command(), "serve", "--help"], capture_output=True, text=True, timeout=TIMEOUT, check=True
    )
    listed = {
        line.split(":")[0].strip() for line in done.stdout.splitlines() if line.strip().startswith("LEDGER_")
    }
    settings_names = {v for k, v in vars(api.settings).items() if k.startswith("ENV_") and isinstance(v, str)}
    assert settings_names <= listed, settings_names - listed
    assert {"LEDGER_KEY_FILE", "LEDGER_ORIGIN", "LEDGER_STATE_DIR"} <= listed
    assert "  LEDGER_MAX_BODY: bytes in one request body (default 8388608)" in done.stdout.splitlines()
    assert "  LEDGER_READ_ONLY: 1/true/yes/on: refuse every write (--read-only) (default off)" in done.stdout


def test_every_settings_field_has_its_variable_listed() -> None:
    fields = {attr.split(".")[0] for _, attr, _ in api.settings.ENVIRONMENT}
    assert fields == set(api.settings.Settings.__dataclass_fields__)
