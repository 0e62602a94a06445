"""The product's seam is typed: few `Any` (an `object` standing in for one counts too), no rows as
`tuple[Any, ...]`, no module past 800 lines, and no one table object holding every table.

`python -m tests.test_typed_seam` prints the counts per file, largest first."""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.paths import ROOT

PRODUCT = ("ledger", "projections", "service", "api", "cli", "entry")
MOST_ANY = 100
MOST_LINES = 800
ANY_WORD = re.compile(r"\bAny\b")
ANY_ROW = re.compile(r"tuple\[\s*Any\s*,\s*\.\.\.\s*\]")


def product_files() -> Iterator[Path]:
    """Every Python file of the product, in path order."""
    for room in PRODUCT:
        yield from sorted((ROOT / room).rglob("*.py"))


def any_lines(text: str) -> int:
    """Lines with the word `Any`, as `grep -cw Any` counts them."""
    return sum(1 for line in text.splitlines() if ANY_WORD.search(line))


def _annotations(tree: ast.AST) -> Iterator[ast.expr]:
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            args = node.args
            every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
            yield from (a.annotation for a in every if a is not None and a.annotation is not None)
            if node.returns is not None:
                yield node.returns
        elif isinstance(node, ast.AnnAssign):
            yield node.annotation
            if _name_of(node.annotation) == "TypeAlias" and node.value is not None:
                yield node.value
        elif isinstance(node, ast.Assign) and _is_alias(node):
            yield node.value
        elif isinstance(node, ast.Call) and _name_of(node.func) in {"cast", "TypeVar", "NewType"}:
            yield from node.args


def _is_alias(node: ast.Assign) -> bool:
    # `Row = tuple[object, ...]` or `X = dict[str, object]`: a type written as a value
    return isinstance(node.value, (ast.Subscript, ast.BinOp))


def _name_of(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    return node.attr if isinstance(node, ast.Attribute) else ""


def object_annotations(text: str) -> int:
    """Uses of `object` as a type (in an annotation, an alias, a cast): `Any` by another name."""
    count = 0
    for annotation in _annotations(ast.parse(text)):
        if isinstance(annotation, ast.Constant) and isinstance(annotation.value, str):
            try:
                annotation = ast.parse(annotation.value, mode="eval").body
            except SyntaxError:
                continue
        count += sum(1 for n in ast.walk(annotation) if isinstance(n, ast.Name) and n.id == "object")
    return count


def counts() -> dict[str, tuple[int, int, int, int]]:
    """Per product file: (Any lines, object as a type, tuple[Any, ...] rows, lines)."""
    out = {}
    for path in product_files():
        text = path.read_text(encoding="utf-8")
        out[str(path.relative_to(ROOT))] = (
            any_lines(text),
            object_annotations(text),
            len(ANY_ROW.findall(text)),
            len(text.splitlines()),
        )
    return out


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("x: object = 1\n", 1),
        ("def f(a: dict[str, object]) -> object: ...\n", 2),
        ("Row = tuple[object, ...]\n", 1),
        ("Row: TypeAlias = tuple[object, ...] | None\n", 1),
        ("y = cast('list[object]', z)\n", 1),
        ("def f(a: 'object') -> None: ...\n", 1),
        ("class A(object): ...\nisinstance(a, object)\n", 0),
        ("# an object in a comment\n", 0),
    ],
)
def test_object_as_a_type_is_counted(source: str, expected: int) -> None:
    assert object_annotations(source) == expected


def test_any_in_the_product_is_at_most_the_budget() -> None:
    seen = counts()
    total = sum(a + o for a, o, _, _ in seen.values())
    worst = sorted(((a + o, f) for f, (a, o, _, _) in seen.items() if a + o), reverse=True)[:10]
    assert total <= MOST_ANY, f"{total} Any (object counted) in the product; most in {worst}"


def test_no_row_is_a_tuple_of_any() -> None:
    rows = {f: n for f, (_, _, n, _) in counts().items() if n}
    assert rows == {}


def test_no_product_module_is_longer_than_800_lines() -> None:
    long = {f: n for f, (_, _, _, n) in counts().items() if n > MOST_LINES}
    assert long == {}


def test_no_one_object_holds_every_table() -> None:
    tree = ast.parse((ROOT / "ledger/storage/interface.py").read_text(encoding="utf-8"))
    classes = {n.name: n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)}
    assert "Tables" not in classes
    store = list(ast.walk(classes["Store"]))
    members = {n.name for n in store if isinstance(n, ast.FunctionDef)}
    members |= {n.target.id for n in store if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name)}
    assert "tables" not in members


if __name__ == "__main__":
    table = counts()
    rooms = sys.argv[1:]
    shown = {f: c for f, c in table.items() if not rooms or any(f.startswith(r) for r in rooms)}
    for f, (a, o, r, n) in sorted(shown.items(), key=lambda kv: -(kv[1][0] + kv[1][1])):
        if a or o or r:
            print(f"{a + o:4d}  Any {a:3d}  object {o:3d}  rows {r:2d}  {n:5d} lines  {f}")
    total = sum(a + o for a, o, _, _ in shown.values())
    print(f"total Any+object {total} (budget {MOST_ANY} for the product)")
