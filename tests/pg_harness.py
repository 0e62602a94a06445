"""A throwaway PostgreSQL cluster on loopback for the tests (Debian's initdb/pg_ctl), or $LEDGER_TEST_PG_URL.

`python -m tests.pg_harness` starts one and prints its admin URL (Ctrl-C stops and removes it).
"""

from __future__ import annotations

import glob
import itertools
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

if TYPE_CHECKING:
    from ledger.storage.postgresql.store import PostgresStore
    from service.ledger import Ledger

ENV_URL = "LEDGER_TEST_PG_URL"
_names = itertools.count(1)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _bin_dir() -> str | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/pg_ctl"), key=lambda p: int(p.split("/")[4]))
    return str(Path(found[-1]).parent) if found else None


class PgCluster:
    """A PostgreSQL server the tests may create databases in."""

    def __init__(self, admin_url: str, data_dir: str | None = None, run_as: list[str] | None = None):
        self.admin_url = admin_url
        self.data_dir = data_dir
        self.run_as = run_as or []

    @classmethod
    def start(cls, *, fsync: bool = False) -> PgCluster:
        """$LEDGER_TEST_PG_URL if set, else a new cluster in a temp dir; RuntimeError says why not."""
        if os.environ.get(ENV_URL):
            return cls(os.environ[ENV_URL])
        bindir = _bin_dir()
        if bindir is None:
            raise RuntimeError(
                "no PostgreSQL server binaries (apt-get install postgresql) and no $" + ENV_URL
            )
        run_as: list[str] = []
        base = tempfile.mkdtemp(prefix="ledger-pg-")
        if os.geteuid() == 0:  # initdb refuses root: run the server as Debian's postgres user
            if shutil.which("runuser") is None:
                raise RuntimeError("running as root without runuser to drop to the postgres user")
            run_as = ["runuser", "-u", "postgres", "--"]
            shutil.chown(base, "postgres", "postgres")
        data = os.path.join(base, "data")
        port = _free_port()
        init = [f"{bindir}/initdb", "-D", data, "-E", "UTF8", "--locale=C", "-U", "ledger", "--auth=trust"]
        subprocess.run(run_as + init, check=True, capture_output=True)
        opts = f"-p {port} -k {base} -c listen_addresses=127.0.0.1 -c max_connections=200"
        opts += " -c track_commit_timestamp=on"  # lets a test compare seq order with commit order
        if not fsync:
            opts += " -c fsync=off -c synchronous_commit=off -c full_page_writes=off"
        ctl = [f"{bindir}/pg_ctl", "-D", data, "-o", opts, "-l", os.path.join(base, "log"), "-w", "start"]
        subprocess.run(run_as + ctl, check=True, capture_output=True)
        return cls(f"postgresql://ledger@127.0.0.1:{port}/postgres", data, run_as)

    def create_db(self, prefix: str = "t") -> str:
        """A new empty database; its URL."""
        import psycopg

        name = f"{prefix}_{os.getpid()}_{next(_names)}_{time.monotonic_ns() % 10**6}"
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE template0 ENCODING UTF8')
        parts = urlsplit(self.admin_url)
        return urlunsplit(parts._replace(path="/" + name))

    def drop_db(self, url: str) -> None:
        """Drop a database `create_db` made, closing the connections still open to it."""
        import psycopg

        name = urlsplit(url).path.lstrip("/")
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def stop(self) -> None:
        """Stop the server and remove its files (nothing to do for an external server)."""
        if self.data_dir is None:
            return
        bindir = _bin_dir()
        subprocess.run(
            self.run_as + [f"{bindir}/pg_ctl", "-D", self.data_dir, "-m", "immediate", "-w", "stop"],
            capture_output=True,
        )
        shutil.rmtree(os.path.dirname(self.data_dir), ignore_errors=True)
        self.data_dir = None


def start_or_reason() -> tuple[PgCluster | None, str]:
    """A started cluster, or None and why none could be started."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return None, "psycopg is not installed (pip install 'psycopg[binary]')"
    try:
        return PgCluster.start(), ""
    except (RuntimeError, OSError, subprocess.CalledProcessError) as e:
        detail = getattr(e, "stderr", b"") or b""
        return None, f"cannot start PostgreSQL: {e} {detail.decode(errors='replace')[-300:]}"


if __name__ == "__main__":
    cluster = PgCluster.start(fsync=True)
    print(cluster.admin_url, flush=True)
    try:
        while True:
            signal.pause()  # until Ctrl-C
    except KeyboardInterrupt:
        cluster.stop()


def planner_store(ledger: Ledger) -> PostgresStore:
    """The ledger's PostgreSQL store, for a test of the planner's plans (skipped on SQLite)."""
    import pytest

    from ledger.storage.backend import is_pg_url
    from ledger.storage.postgresql.store import PostgresStore

    if not is_pg_url(ledger.url):
        pytest.skip("PostgreSQL's planner: SQLite plans by its own rules")
    store = ledger.store
    assert isinstance(store, PostgresStore)
    return store
