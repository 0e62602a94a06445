"""Shared fixtures: a fresh ledger per test on the backend under test, and the real record.

The whole suite runs on SQLite by default and on PostgreSQL with LEDGER_TEST_BACKEND=postgresql
(a throwaway cluster from Debian's packages, or $LEDGER_TEST_PG_URL). Tests about the SQLite file
itself carry `@pytest.mark.sqlite_only(reason)` and are skipped, with that reason, on PostgreSQL.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import settings

from service.ledger import Ledger
from tests.pg_harness import PgCluster, start_or_reason

DATA = Path(__file__).parent / "data"
FIXTURE_PATH = DATA / "2509.02480.record.json"
FIXTURE_ID = "2509.02480"
BACKEND_ENV = "LEDGER_TEST_BACKEND"
BACKENDS = ("sqlite", "postgresql")

NewDb = Callable[..., str]

# `scripts/test.sh --fast` (LEDGER_TEST_FAST=1): each property tries fewer examples; the full run keeps them
FAST = bool(os.environ.get("LEDGER_TEST_FAST"))
RAM_DIR = "/dev/shm"  # a tmpfs on Linux
settings.register_profile("fast", max_examples=20, deadline=None)
if FAST:
    settings.load_profile("fast")


def examples(n: int) -> int:
    """The hypothesis examples of a property that asks for `n`: all of them, or a quarter in the fast run."""
    return max(5, n // 4) if FAST else n


def backend_under_test() -> str:
    """sqlite (default) or postgresql, from $LEDGER_TEST_BACKEND."""
    name = os.environ.get(BACKEND_ENV, "sqlite")
    if name not in BACKENDS:
        raise pytest.UsageError(f"{BACKEND_ENV}={name!r}: expected one of {', '.join(BACKENDS)}")
    return name


def on_postgresql() -> bool:
    """Whether this run's ledgers live in PostgreSQL."""
    return backend_under_test() == "postgresql"


def pytest_configure(config: pytest.Config) -> None:
    if FAST and "TMPDIR" not in os.environ and os.access(RAM_DIR, os.W_OK):
        # the fast run checks logic, not durability: its ledgers' fsyncs go to memory, not a disk that
        # makes each new ledger wait ~0.1 s (the full run keeps the disk)
        tempfile.tempdir = RAM_DIR
    # a PostgreSQL ledger's key and token files go to $LEDGER_STATE_DIR (default: the working
    # directory): keep any a test does not place itself out of the checkout
    if not os.environ.get("LEDGER_STATE_DIR"):
        os.environ["LEDGER_STATE_DIR"] = tempfile.mkdtemp(prefix="ledger-state-")


def pytest_report_header() -> str:
    return f"ledger backend under test: {backend_under_test()} (${BACKEND_ENV})"


# What in a test module's source shows that its tests start processes (servers, the CLI as a
# program, PostgreSQL, a browser): they carry the `process` mark, which `scripts/test.sh --fast` leaves out.
_PROCESS_SIGNS = (
    "subprocess", "running_server", "reliability.", "from reliability import", "chromium", "playwright",
    "multiprocessing",
)  # fmt: skip
_process_modules: dict[str, bool] = {}


def _starts_processes(item: pytest.Item) -> bool:
    path = str(item.path)
    if path not in _process_modules:
        text = Path(path).read_text(encoding="utf-8")
        _process_modules[path] = any(sign in text for sign in _PROCESS_SIGNS)
    return _process_modules[path]


def _needs_postgresql(item: pytest.Item) -> bool:
    """A test run against a PostgreSQL server starts one (tests/pg_harness.py), here or in a parameter."""
    callspec = getattr(item, "callspec", None)
    params = callspec.params.values() if callspec is not None else ()
    fixtures = getattr(item, "fixturenames", ())
    return on_postgresql() or "pg_cluster" in fixtures or "pg_url" in fixtures or "postgresql" in params


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("process") is None and (
            _starts_processes(item) or _needs_postgresql(item)
        ):
            item.add_marker(pytest.mark.process)
    if not on_postgresql():
        return
    for item in items:
        mark = item.get_closest_marker("sqlite_only")
        if mark is not None:
            why = mark.args[0] if mark.args else mark.kwargs.get("reason", "")
            item.add_marker(pytest.mark.skip(reason=f"SQLite only: {why}"))


@pytest.fixture(autouse=True)
def _no_process_in_fast_run(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """In `scripts/test.sh --fast`, a test without the `process` mark that starts one fails, naming it."""
    if not os.environ.get("LEDGER_TEST_FAST") or request.node.get_closest_marker("process"):
        return

    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError(f"{request.node.nodeid} starts a process: mark it @pytest.mark.process")

    monkeypatch.setattr(subprocess.Popen, "__init__", refuse)


@pytest.fixture(scope="session")
def pg_cluster() -> Iterator[PgCluster]:
    """One throwaway PostgreSQL server for the session (skips what needs it if none starts)."""
    cluster, reason = start_or_reason()
    if cluster is None:
        if on_postgresql():
            pytest.fail(f"{BACKEND_ENV}=postgresql but {reason}")
        pytest.skip(reason)
    yield cluster
    cluster.stop()


@pytest.fixture(scope="session")
def db_factory(request: pytest.FixtureRequest) -> Callable[[Path, str], str]:
    """make(dir, name): a new empty ledger's path (SQLite) or URL (a new PostgreSQL database)."""

    def make(directory: Path, name: str = "ledger.db") -> str:
        if on_postgresql():
            cluster: PgCluster = request.getfixturevalue("pg_cluster")
            return cluster.create_db()
        return str(directory / name)

    return make


@pytest.fixture
def new_db(
    db_factory: Callable[[Path, str], str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> Iterator[NewDb]:
    """new_db(name="ledger.db"): a new empty ledger on the backend under test; side files in tmp_path.
    A PostgreSQL database made here is dropped when the test ends, with the connections still open to
    it: a ledger a test leaves unclosed must not hold one of the server's connection slots until the
    collector happens to free it."""
    # a PostgreSQL ledger keeps its key and token files in $LEDGER_STATE_DIR: here, not the cwd
    monkeypatch.setenv("LEDGER_STATE_DIR", str(tmp_path))
    made: list[str] = []
    cluster: PgCluster | None = request.getfixturevalue("pg_cluster") if on_postgresql() else None

    def make(name: str = "ledger.db") -> str:
        db = db_factory(tmp_path, name)
        made.append(db)
        return db

    yield make
    if cluster is not None:
        for url in made:
            cluster.drop_db(url)


@pytest.fixture
def fresh_ledger(new_db: NewDb) -> Iterator[Ledger]:
    """An empty ledger of its own on the backend under test, closed when the test ends."""
    ledger = Ledger(new_db())
    yield ledger
    ledger.close()


@pytest.fixture
def fixture_bytes() -> bytes:
    """The real record, exactly as served."""
    return FIXTURE_PATH.read_bytes()


@pytest.fixture
def fixture_record(fixture_bytes: bytes) -> dict[str, Any]:
    """The real record, parsed."""
    return json.loads(fixture_bytes)


@pytest.fixture
def imported_ledger(fresh_ledger: Ledger, fixture_bytes: bytes) -> Ledger:
    """A ledger holding the real record's events."""
    fresh_ledger.import_bytes(fixture_bytes)
    return fresh_ledger
