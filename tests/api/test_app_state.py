"""One typed state per app (api/state.py): made whole by `create_app`, read through `state_of`; no route
looks for a part of it with `getattr` and a default, or makes one on its first request."""

from __future__ import annotations

import ast
import dataclasses
from pathlib import Path

import pytest

from api.app import create_app
from api.settings import Settings
from api.state import AppState, state_of
from tests.conftest import NewDb
from tests.paths import ROOT

# where the state is stored and read: the only modules that touch `app.state` by name
KEEPERS = {Path("api/app.py"), Path("api/state.py")}


def _on_state(node: ast.AST) -> bool:
    """Whether an expression is an app's `state` (`app.state`, `request.app.state`, a name `state`)."""
    return (isinstance(node, ast.Attribute) and node.attr == "state") or (
        isinstance(node, ast.Name) and node.id == "state"
    )


def _untyped_reads(tree: ast.AST) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
            if node.func.id in {"getattr", "setattr", "hasattr"} and node.args and _on_state(node.args[0]):
                found.append((node.lineno, f"{node.func.id}({ast.unparse(node.args[0])}, ...)"))
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Attribute)
            and node.value.attr == "state"
            and ast.unparse(node.value.value).endswith("app")
        ):
            found.append((node.lineno, ast.unparse(node)))
    return found


def test_no_api_module_reads_the_app_state_untyped() -> None:
    modules = sorted(p.relative_to(ROOT) for p in (ROOT / "api").rglob("*.py"))
    assert len(modules) > 30
    found = {
        f"{path}:{line}": what
        for path in modules
        if path not in KEEPERS
        for line, what in _untyped_reads(ast.parse((ROOT / path).read_text(), str(path)))
    }
    assert found == {}, "read the app's parts through api.state.state_of(app)"


def test_the_walk_sees_an_untyped_read() -> None:
    bad = "x = getattr(request.app.state, 'rate_limiter', None)\ny = app.state.ledger\n"
    assert [w for _, w in _untyped_reads(ast.parse(bad))] == [
        "getattr(request.app.state, ...)",
        "app.state.ledger",
    ]


def test_the_app_is_built_whole_before_its_first_request(new_db: NewDb) -> None:
    app = create_app(Settings(db=new_db(), rate_limit=5.0))
    state = state_of(app)
    assert isinstance(state, AppState) and dataclasses.is_dataclass(state)
    made = {f.name: getattr(state, f.name) for f in dataclasses.fields(AppState)}
    # a writable server without witnesses: everything but the cosigner and its clients
    assert [name for name, part in made.items() if part is None] == ["cosigner", "witness_clients"]
    assert state.clock is state.ledger.clock and state.passes.clock is state.clock
    with pytest.raises(dataclasses.FrozenInstanceError, match="ledger"):
        state.ledger = state.ledger  # type: ignore[misc]
    state.ledger.close()
