"""What ARCHITECTURE.md says of the tree's rooms holds: each room's `__init__.py` says what its
modules may import, and they import nothing else of the project; psycopg is imported only by the
PostgreSQL backend's folder."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from tests.paths import ROOT

PROJECT = ("entry", "cli", "api", "service", "projections", "ledger")
ROOMS = sorted(p.parent for top in PROJECT for p in (ROOT / top).rglob("__init__.py"))
_MAY_IMPORT = re.compile(r"May import (.*?)\.(?:\s|$)", re.S)


def room_name(folder: Path) -> str:
    return ".".join(folder.relative_to(ROOT).parts)


def imported(module: Path) -> list[tuple[int, str]]:
    """Each absolute import of a module (at any depth, type-checking ones too), with its line."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
    return found


def may_import(doc: str) -> list[str] | None:
    """The rooms a docstring's "May import ..." sentence names in backticks; None without one."""
    sentence = _MAY_IMPORT.search(doc)
    return None if sentence is None else re.findall(r"`([\w.]+)`", sentence[1])


def _within(name: str, room: str) -> bool:
    return name == room or name.startswith(room + ".")


@pytest.mark.parametrize("room", ROOMS, ids=[room_name(r) for r in ROOMS])
def test_each_room_says_what_it_may_import_and_imports_nothing_else(room: Path):
    doc = ast.get_docstring(ast.parse((room / "__init__.py").read_text(encoding="utf-8"))) or ""
    allowed = may_import(doc)
    assert allowed is not None, f"{room_name(room)}/__init__.py has no 'May import ...' sentence"
    own = room_name(room)
    beyond = [
        f"{module.name}:{line}: {name}"
        for module in sorted(room.glob("*.py"))
        for line, name in imported(module)
        if name.split(".")[0] in PROJECT
        and not _within(name, own)
        and not any(_within(name, room) for room in allowed)
    ]
    assert beyond == [], f"{own} imports what its __init__ does not name ({allowed}): {beyond}"


@pytest.mark.parametrize(
    ("doc", "rooms"),
    [
        ("Holds x. May import `ledger.model` and `ledger.tlog`.", ["ledger.model", "ledger.tlog"]),
        ("May import nothing of the project outside this room.", []),
        ("May import `service`, `projections`; storage only through `service.ledger`. Holds `x`.",
         ["service", "projections", "service.ledger"]),
        ("Holds things.", None),
    ],
)  # fmt: skip
def test_what_a_room_may_import_is_read_from_one_sentence(doc: str, rooms: list[str] | None):
    assert may_import(doc) == rooms


def test_psycopg_is_imported_only_in_the_postgresql_folder():
    backend = ROOT / "ledger" / "storage" / "postgresql"
    importers = [
        f"{module.relative_to(ROOT)}:{line}"
        for top in PROJECT
        for module in sorted((ROOT / top).rglob("*.py"))
        for line, name in imported(module)
        if name.split(".")[0] == "psycopg" and backend not in module.parents
    ]
    assert importers == []


MIRRORED = ("ledger", "projections", "service", "api", "cli")


def test_each_folder_of_tests_mirrors_a_folder_of_code():
    folders = {
        module.parent.relative_to(ROOT / "tests")
        for top in MIRRORED
        for module in (ROOT / "tests" / top).rglob("test_*.py")
    }
    unmatched = sorted(str(f) for f in folders if not (ROOT / f).is_dir())
    assert unmatched == []
