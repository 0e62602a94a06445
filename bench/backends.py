"""What a stage needs from a backend: its ledger, consistent copies of it, and the bare references on the
same engine (SQLite here; PostgreSQL in bench/pg.py). Every database is named by a string: a SQLite path
or a postgresql:// URL, as `service.ledger.Ledger` and the bench workers take it."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from bench import baselines
from bench.util import DATA, copy_db, remove_db


class Engine(Protocol):
    """One backend's column of the table."""

    name: str  # "sqlite" | "postgresql": the key in results.json
    label: str  # the column's name in the table
    prefix: str  # of its profiles' file names
    ledger: str  # the ledger that grows stage by stage

    def after_build(self) -> dict[str, Any]: ...  # settle the built ledger; facts about it
    def copy(self, name: str) -> str: ...  # a consistent copy of the ledger as it is now
    def fresh(self, name: str) -> str: ...  # a new empty database (the peer's store)
    def drop(self, db: str) -> None: ...
    def stored_rows(self, db: str, after: int) -> list[tuple[Any, ...]]: ...
    def bare_batches(self, rows: Sequence[tuple[Any, ...]], into: str | None = None) -> dict[str, Any]: ...
    def bare_one_row(self, rows: Sequence[tuple[Any, ...]], into: str | None = None) -> dict[str, Any]: ...
    def meta(self) -> dict[str, Any]: ...  # for results.json: the engine, its settings, what ratios mean
    def close(self) -> None: ...


class SQLiteEngine:
    """Ledger files under bench/.data; the bare references of bench/baselines.py."""

    name = "sqlite"
    label = "SQLite"
    prefix = ""  # the profiles keep their names from before the PostgreSQL column

    def __init__(self) -> None:
        DATA.mkdir(parents=True, exist_ok=True)
        self.ledger = str(DATA / "ledger.db")
        self.plain = DATA / "plain.db"
        remove_db(Path(self.ledger))

    def after_build(self) -> dict[str, Any]:
        """The file's size (the build's WAL is checkpointed by the copies that follow)."""
        return {"file_mb": round(Path(self.ledger).stat().st_size / 1e6, 1)}

    def copy(self, name: str) -> str:
        """bench/.data/NAME.db, a checkpointed file copy."""
        dst = DATA / f"{name}.db"
        copy_db(Path(self.ledger), dst)
        return str(dst)

    def fresh(self, name: str) -> str:
        """bench/.data/NAME.db, not there yet."""
        dst = DATA / f"{name}.db"
        remove_db(dst)
        return str(dst)

    def drop(self, db: str) -> None:
        """Delete the file and its companions."""
        remove_db(Path(db))

    def stored_rows(self, db: str, after: int) -> list[tuple[Any, ...]]:
        """The rows stored after seq `after`."""
        return baselines.stored_rows(Path(db), after)

    def bare_batches(self, rows: Sequence[tuple[Any, ...]], into: str | None = None) -> dict[str, Any]:
        """executemany, 1000 rows a transaction: a fresh plain table, or (into) a ledger copy's table."""
        if into is None:
            return baselines.bare_batches(self.plain, rows)
        return baselines.bare_batches(Path(into), rows, schema=True)

    def bare_one_row(self, rows: Sequence[tuple[Any, ...]], into: str | None = None) -> dict[str, Any]:
        """One row per transaction: a fresh plain table, or (into) a ledger copy's table."""
        if into is None:
            return baselines.bare_one_row(self.plain, rows)
        return baselines.bare_one_row(Path(into), rows, schema=True)

    def meta(self) -> dict[str, Any]:
        """SQLite's version is in `machine`; the ratios are those of `targets`."""
        return {}

    def close(self) -> None:
        """Remove the plain table's file (the ledger stays for inspection until the next run)."""
        remove_db(self.plain)
