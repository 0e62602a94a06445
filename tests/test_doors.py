"""The doors (api/, cli/) keep to the application's services: no door names a store, under any name,
or imports a storage type; and each service, the Ledger facade included, stays a handful of methods."""

from __future__ import annotations

import ast
import importlib
import inspect
from collections.abc import Iterator
from pathlib import Path

import pytest

from service.ledger import Ledger
from tests.paths import ROOT

DOORS = ("api", "cli")
# what reaches the database: a door that names one of these holds the store itself
STORE_NAMES = {"store", "_store", "tables"}
# storage's plain values a door may hold (results, rows, who wrote, a path's or URL's shape): data and
# pure functions, none of which can read or write the ledger
STORAGE_VALUES = {
    "AppendResult",
    "Alert",
    "Watch",
    "Hit",
    "WriteBy",
    "WriterRow",
    "by_token",
    "by_cli",
    "is_pg_url",
    "side_path",
}
MOST_METHODS = 12


def _door_files() -> Iterator[Path]:
    for door in DOORS:
        yield from sorted((ROOT / door).rglob("*.py"))


def _trees() -> Iterator[tuple[str, ast.AST]]:
    for path in _door_files():
        yield str(path.relative_to(ROOT)), ast.parse(path.read_text(encoding="utf-8"), str(path))


def store_reaches(tree: ast.AST) -> list[str]:
    """Each attribute access named like a store, and each import of storage, as `line: what`."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in STORE_NAMES:
            found.append(f"{node.lineno}: .{node.attr}")
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ledger.storage"):
            found.append(f"{node.lineno}: from {node.module}")
        elif isinstance(node, ast.Import):
            found += [
                f"{node.lineno}: import {a.name}" for a in node.names if a.name.startswith("ledger.storage")
            ]
    return sorted(found, key=lambda f: (int(f.split(":")[0]), f))


def storage_types(tree: ast.AST) -> list[str]:
    """Each name a door imports (from any module) that is storage's own and not a plain value."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.ImportFrom) or node.module is None or node.level:
            continue
        module = importlib.import_module(node.module)
        for alias in node.names:
            value = getattr(module, alias.name, None)
            home = getattr(value, "__module__", None) or ""
            if home.startswith("ledger.storage") and alias.name not in STORAGE_VALUES:
                found.append(f"{node.lineno}: {alias.name} from {node.module} ({home})")
    return found


def public_methods(cls: type) -> list[str]:
    """The public methods and properties a class offers, its project bases' included."""
    names = set()
    for klass in cls.__mro__:
        if klass.__module__.split(".")[0] not in {"service", "ledger", "projections"}:
            continue
        for name, value in vars(klass).items():
            if not name.startswith("_") and (inspect.isfunction(value) or isinstance(value, property)):
                names.add(name)
    return sorted(names)


@pytest.mark.parametrize(("source", "found"), [
    ("ledger.store.head()", ["1: .store"]),
    ("self._store.close()", ["1: ._store"]),
    ("x = ledger.store.tables.verified_point()", ["1: .store", "1: .tables"]),
    ("from ledger.storage.backend import open_store", ["1: from ledger.storage.backend"]),
    ("import ledger.storage.verify", ["1: import ledger.storage.verify"]),
    ("ledger.records.envelopes([1])\nstore = 1", []),
])  # fmt: skip
def test_the_walk_finds_every_way_to_a_store(source: str, found: list[str]) -> None:
    assert store_reaches(ast.parse(source)) == found


def test_no_door_reaches_a_store() -> None:
    reaches = {path: got for path, tree in _trees() if (got := store_reaches(tree))}
    assert reaches == {}


def test_the_import_check_sees_a_storage_type_through_a_re_export() -> None:
    found = storage_types(ast.parse("from service.ledger import Store, AppendResult, Ledger"))
    assert found == ["1: Store from service.ledger (ledger.storage.interface)"]


def test_no_door_imports_a_storage_type() -> None:
    found = {path: got for path, tree in _trees() if (got := storage_types(tree))}
    assert found == {}


def test_the_facade_and_each_service_have_a_handful_of_methods(fresh_ledger: Ledger) -> None:
    services: dict[str, type] = {
        name: type(value)
        for name, value in vars(fresh_ledger).items()
        if not name.startswith("_") and type(value).__module__.startswith("service.")
    }
    # the capabilities a door needs, each a service the facade holds
    assert {"records", "log", "alerts", "works", "collections", "intake", "ops"} <= services.keys()
    # each service keeps the store to itself: no public attribute of one holds a storage object
    held = {
        f"{name}.{attr}"
        for name in services
        for attr, value in vars(getattr(fresh_ledger, name)).items()
        if not attr.startswith("_") and type(value).__module__.startswith("ledger.storage")
    }
    assert held == set()
    counts = {name: len(public_methods(cls)) for name, cls in {"Ledger": Ledger, **services}.items()}
    assert {name: n for name, n in counts.items() if n > MOST_METHODS} == {}
    assert counts["Ledger"] >= 1 and all(counts.values())  # the count sees each one's methods


def test_the_count_takes_properties_and_inherited_methods() -> None:
    class Base:
        def read(self) -> None: ...

    class Service(Base):
        @property
        def size(self) -> int:
            return 0

        def write(self) -> None: ...

        def _private(self) -> None: ...

    Base.__module__ = Service.__module__ = "service.example"
    assert public_methods(Service) == ["read", "size", "write"]
