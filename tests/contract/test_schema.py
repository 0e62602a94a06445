"""The stored layout, read from each backend's catalogue: a fresh ledger (made from ledger/storage/schema.py
in one step) and a ledger made by any earlier layout, then upgraded, hold the same tables, columns, keys,
checks, indexes, triggers and views; and the two backends agree once each spelling is mapped back."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from ledger.storage.postgresql import migrations as pg_migrations
from ledger.storage.sqlite import migrations
from service.ledger import Ledger
from tests.catalogue import abstract, catalogue
from tests.contract.scenario import replay
from tests.old_layout import build_old_ledger

FIXTURE = Path(__file__).resolve().parent.parent / "data" / "2509.02480.record.json"
STEPS = {"sqlite": migrations.VERSION, "postgresql": pg_migrations.VERSION}

# each backend's own spelling of what the other spells otherwise, and nothing more
PG_ONLY_TABLES = {"ledger_schema", "signed_checkpoint"}  # SQLite: PRAGMA user_version, a side file
# the searchable tables: SQLite's FTS5 and its shadow tables; PostgreSQL: the column and index below
SEARCHED = ("search_titles", "catalogue_works")
SQLITE_FTS = tuple(f"{t}_fts" for t in SEARCHED)
PG_SEARCH_COLUMN = ("words", "tsvector", False)
# PostgreSQL keeps seq >= 1 (SQLite's rowid is); SQLite holds a boolean as 0/1 under a CHECK
PG_ONLY_CHECKS = {"events": ("seq",)}
# the small key levels' index by seq (schema.py: SQLite's commits would rewrite it every append)
PG_ONLY_INDEXES = {
    f"{t}_{lv}": f"{t}_{lv}_seq" for t in ("event_keys", "check_works") for lv in ("middle", "recent")
}
SQLITE_ONLY_CHECKS = {"scrub_passes": ("ok",)}


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Ledger]:
    """A SQLite ledger holding the contract scenario, to fill the old layouts with."""
    ledger = Ledger(tmp_path_factory.mktemp("source") / "source.db")
    replay(ledger, FIXTURE.read_bytes())
    yield ledger
    ledger.close()


@pytest.fixture
def new_ledger_db(
    request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Callable[[str, str], str]:
    """new(backend, name): an empty database of that backend."""
    monkeypatch.setenv("LEDGER_STATE_DIR", str(tmp_path))

    def new(backend: str, name: str) -> str:
        if backend == "sqlite":
            return str(tmp_path / f"{name}.db")
        return str(request.getfixturevalue("pg_cluster").create_db())

    return new


def _fresh(db: str) -> dict[str, Any]:
    Ledger(db).close()
    return catalogue(db)


@pytest.fixture(scope="module")
def fresh(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Any]:
    """fresh(backend): the catalogue of a fresh ledger of that backend, read once per module."""
    made: dict[str, Any] = {}

    def get(backend: str) -> Any:
        if backend not in made:
            with pytest.MonkeyPatch.context() as mp:
                home = tmp_path_factory.mktemp("fresh")
                mp.setenv("LEDGER_STATE_DIR", str(home))
                pg = backend == "postgresql"
                made[backend] = _fresh(
                    request.getfixturevalue("pg_cluster").create_db() if pg else str(home / "f.db")
                )
        return made[backend]

    return get


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_fresh_ledger_is_made_in_one_step_at_the_latest_version(
    backend: str, new_ledger_db: Callable[[str, str], str]
) -> None:
    db = new_ledger_db(backend, "fresh")
    if backend == "sqlite":
        lite = sqlite3.connect(db, isolation_level=None)
        begun: list[str] = []
        lite.set_trace_callback(lambda sql: begun.append(sql) if sql.startswith("BEGIN") else None)
        assert migrations.migrate(lite) == STEPS["sqlite"]
        assert begun == ["BEGIN IMMEDIATE"]  # one transaction, not one per step
        assert lite.execute("PRAGMA user_version").fetchone()[0] == STEPS["sqlite"]
        lite.close()
        return
    Ledger(db).close()
    import psycopg

    with psycopg.connect(db) as conn:
        # one step, stamped at the latest version (an upgraded ledger holds a row per step)
        assert conn.execute("SELECT version FROM ledger_schema").fetchall() == [(STEPS["postgresql"],)]


@pytest.mark.parametrize("step", range(1, max(STEPS.values())))
@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_a_ledger_of_any_earlier_layout_upgrades_to_the_fresh_catalogue(
    backend: str,
    step: int,
    source: Ledger,
    fresh: Callable[[str], Any],
    new_ledger_db: Callable[[str, str], str],
) -> None:
    if step >= STEPS[backend]:
        pytest.skip(f"{backend} has {STEPS[backend]} steps")
    want = fresh(backend)
    old = new_ledger_db(backend, "old")
    build_old_ledger(old, step, source)
    upgraded = Ledger(old)
    try:
        assert upgraded.store.read_log() == source.store.read_log()  # every byte kept
        assert upgraded.verify().ok
    finally:
        upgraded.close()
    got = catalogue(old)
    assert got.keys() == want.keys()
    for part in want:
        assert got[part] == want[part], part


@pytest.mark.process  # a PostgreSQL server beside SQLite
def test_both_backends_hold_the_same_layout(fresh: Callable[[str], Any]) -> None:
    lite, pg = abstract(fresh("sqlite")), abstract(fresh("postgresql"))
    lite_tables = {n: t for n, t in lite["tables"].items() if not n.startswith(SQLITE_FTS)}
    pg_tables = {n: t for n, t in pg["tables"].items() if n not in PG_ONLY_TABLES}
    assert list(lite_tables) and sorted(lite_tables) == sorted(pg_tables)
    for name in SEARCHED:
        search = pg_tables[name]
        assert search["columns"].pop() == PG_SEARCH_COLUMN
        assert search["indexes"].pop(f"{name}_words") == (("words",), False, None)
    for name, cols in PG_ONLY_CHECKS.items():
        pg_tables[name]["checks"].remove(cols)
    for name, index in PG_ONLY_INDEXES.items():
        assert pg_tables[name]["indexes"].pop(index) == (("seq",), False, None)
    for name, cols in SQLITE_ONLY_CHECKS.items():
        lite_tables[name]["checks"].remove(cols)
    for name in lite_tables:
        assert lite_tables[name] == pg_tables[name], name
    assert lite["views"] == pg["views"] == ["check_works_all", "event_keys_all"]
    guarded = {n: t["refuses"] for n, t in lite_tables.items() if t["refuses"]}
    assert guarded["events"] == guarded["merkle_nodes"] == {"UPDATE", "DELETE"}
    assert guarded["event_keys_recent"] == {"UPDATE"} and "watches" not in guarded
