"""`ledger serve` on PostgreSQL refuses to start when LEDGER_STATE_DIR names no directory, rather than
fail the first request that signs a checkpoint."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.api_fixtures import free_port, ledger_command

TIMEOUT = 60


@pytest.mark.parametrize("state_dir", ["missing", "a-file"])
def test_serve_refuses_a_state_dir_that_is_not_a_directory(tmp_path: Path, state_dir: str) -> None:
    (tmp_path / "a-file").write_text("not a directory\n")
    # the check comes before the database is opened: no server need listen at this URL
    db = "postgresql://127.0.0.1:1/ledger"
    cmd = [*ledger_command(), "serve", "--db", db, "--port", str(free_port())]
    env = {"LEDGER_STATE_DIR": str(tmp_path / state_dir), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=TIMEOUT, cwd=tmp_path)
    assert done.returncode != 0 and "Traceback" not in done.stderr, done.stderr
    assert f"LEDGER_STATE_DIR='{tmp_path / state_dir}' is not a directory" in done.stderr, done.stderr
