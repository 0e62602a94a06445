"""Every path a comment, docstring or page names exists: a file, a folder or a module of the checkout.

What counts as naming a path, in product code's comments and docstrings and in the top-level pages and
docs/*.md (there only inside `backticks`, outside fenced blocks, which show a user's own files):
- a token with a slash whose first part is a top-level folder (`api/ops/scrub.py`, `tests/data/`):
  it must exist from the checkout's root;
- any other token with a slash that ends in a file's extension or a slash (`derived/keys.py`,
  `postgresql/`), and a bare file name (`sql_store.py`): some file or folder must end with it;
- a dotted name that starts with a top-level package (`service.ledger.Ledger`): its longest module
  prefix must exist, and the next part, if any, must be a name that module defines.
Placeholders (a part in capitals, `NAME.db`), hidden folders (made by tools), paths outside the
checkout (`..`), URLs and host:port addresses are not checked.
"""

from __future__ import annotations

import ast
import io
import os
import re
import tokenize
from functools import cache
from pathlib import Path

import pytest

from tests.paths import ROOT

PRODUCT = ("ledger", "projections", "service", "api", "cli", "entry", "scripts", "bench", "reliability")
PACKAGES = frozenset(
    {"entry", "cli", "api", "service", "projections", "ledger", "tests", "bench", "reliability"}
)
PAGES = ("README.md", "ARCHITECTURE.md", "RELIABILITY.md")
EXTENSIONS = frozenset(
    {"py", "md", "sh", "toml", "csv", "json", "jsonl", "txt", "yml", "yaml", "sql", "html", "svg"}
)

# Words shaped like paths that name no file: the resolver's name in a resolution's source and a user
# agent (`citation-ledger/...`), the default database file a user makes, and the logger names; and
# `shared`, the project's shared folder (the spec, the fixtures), which sits beside the checkout.
NOT_PATHS = frozenset(
    {"citation-ledger", "ledger.db", "ledger.http", "ledger.append", "ledger.serve", "shared"}
)

_TOKEN = re.compile(r"[\w.*{}<>/:-]+")
_HOST_PORT = re.compile(r"\w:\d+/")
_LINE_NUMBER = re.compile(r"(?::\d+)+$")
_FENCE = re.compile(r"^\s*(```|~~~)")
_WRITTEN = re.compile(r"<!-- file: (\S+) -->")
_INLINE = re.compile(r"`([^`]+)`")


@cache
def tree() -> tuple[frozenset[str], frozenset[str]]:
    """The checkout's files and folders, relative to its root, hidden and cache folders left out."""
    files: set[str] = set()
    folders: set[str] = set()
    for here, subs, names in os.walk(ROOT):
        subs[:] = [s for s in subs if not s.startswith(".") and s != "__pycache__"]
        rel = Path(here).relative_to(ROOT).as_posix()
        if rel != ".":
            folders.add(rel)
        files.update(name if rel == "." else f"{rel}/{name}" for name in names)
    return frozenset(files), frozenset(folders)


def _ends_with(tail: str, *, folder: bool) -> bool:
    files, folders = tree()
    pool = folders if folder else files | folders
    return any(p == tail or p.endswith("/" + tail) for p in pool)


@cache
def _defined(module: Path) -> frozenset[str]:
    """The names a module's top level defines, assigns or imports."""
    names: set[str] = set()
    for node in ast.parse(module.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
    return frozenset(names)


def _module_exists(parts: list[str]) -> bool:
    here = ROOT / parts[0]
    taken = 1
    for part in parts[1:]:
        if (here / part / "__init__.py").is_file():
            here, taken = here / part, taken + 1
        elif (here / f"{part}.py").is_file():
            here, taken = here / f"{part}.py", taken + 1
            break
        else:
            break
    if taken == len(parts):
        return True
    source = here / "__init__.py" if here.is_dir() else here
    return source.is_file() and parts[taken] in _defined(source)


def exists(token: str) -> bool | None:
    """Whether the path `token` names exists; None when `token` names no path."""
    if "://" in token or _HOST_PORT.search(token):
        return None
    token = _LINE_NUMBER.sub("", token).split(":")[0].rstrip(".-")
    parts = [p for p in token.split("/") if p]
    if not parts or token.startswith(("/", "-")) or re.search(r"[*{}<>]", token):
        return None
    if parts[0].lower() in NOT_PATHS or token in NOT_PATHS or token.startswith("ledger.db."):
        return None
    if "/" in token and "." in parts[0]:
        return None  # a domain (`arxiv.org/abs/`) or a DOI's prefix (`10.1234/`)
    if any(p in (".", "..") or p.startswith(".") for p in parts):
        return None
    found = _judge(token, parts)
    placeholder = any(word.isupper() for word in re.split(r"[/.]", token))
    return None if found is False and placeholder else found


def _judge(token: str, parts: list[str]) -> bool | None:
    top = {p.split("/")[0] for p in tree()[1]}
    if "/" in token:
        extension = parts[-1].rpartition(".")[2] if "." in parts[-1] else ""
        if parts[0] in top:
            return (ROOT / "/".join(parts)).exists()
        if token.endswith("/") or extension in EXTENSIONS:
            return _ends_with("/".join(parts), folder=token.endswith("/"))
        return None
    stem, dot, extension = token.rpartition(".")
    if not dot:
        return None
    if extension in {"py", "md", "sh", "toml"} and re.fullmatch(r"[\w-]+", stem):
        return _ends_with(token, folder=False)
    dotted = token.split(".")
    if dotted[0] in PACKAGES and all(p.isidentifier() for p in dotted):
        return _module_exists(dotted)
    return None


def prose_of_code(source: str) -> list[tuple[int, str]]:
    """The comments and docstrings of a module's source, each line with its line number."""
    lines = [
        (t.start[0], t.string)
        for t in tokenize.generate_tokens(io.StringIO(source).readline)
        if t.type == tokenize.COMMENT
    ]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            doc = ast.get_docstring(node, clean=False)
            if doc is not None:
                lines += [(node.body[0].lineno + k, text) for k, text in enumerate(doc.splitlines())]
    return lines


def prose_of_script(source: str) -> list[tuple[int, str]]:
    """The comment lines of a shell script, each with its line number."""
    lines = enumerate(source.splitlines(), 1)
    return [(n, line) for n, line in lines if line.lstrip().startswith("#") and not line.startswith("#!")]


def prose_of_page(text: str) -> list[tuple[int, str]]:
    """The inline code spans of a page outside fenced blocks, each with its line number."""
    spans: list[tuple[int, str]] = []
    fenced = False
    for number, line in enumerate(text.splitlines(), 1):
        if _FENCE.match(line):
            fenced = not fenced
        elif not fenced:
            spans += [(number, m[1]) for m in _INLINE.finditer(line)]
    return spans


def missing(prose: list[tuple[int, str]], written: frozenset[str] = frozenset()) -> list[str]:
    """`line: token` for each path the prose names that does not exist."""
    return [
        f"{number}: {m[0]}"
        for number, text in prose
        for m in _TOKEN.finditer(text)
        if m[0].rstrip(".-") not in written and exists(m[0]) is False
    ]


CODE = sorted(p for folder in PRODUCT for pattern in ("*.py", "*.sh") for p in (ROOT / folder).rglob(pattern))
DOCS = [*(ROOT / name for name in PAGES), *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("module", CODE, ids=[p.relative_to(ROOT).as_posix() for p in CODE])
def test_every_path_a_comment_names_exists(module: Path):
    read = prose_of_code if module.suffix == ".py" else prose_of_script
    dead = missing(read(module.read_text(encoding="utf-8")))
    assert dead == [], f"{module.relative_to(ROOT)} names paths the checkout does not have: {dead}"


@pytest.mark.parametrize("page", DOCS, ids=[p.relative_to(ROOT).as_posix() for p in DOCS])
def test_every_path_a_page_names_exists(page: Path):
    text = page.read_text(encoding="utf-8")
    dead = missing(prose_of_page(text), frozenset(_WRITTEN.findall(text)))
    assert dead == [], f"{page.relative_to(ROOT)} names paths the checkout does not have: {dead}"


@pytest.mark.parametrize(
    ("token", "verdict"),
    [
        ("api/ops/scrub.py", True),
        ("service/scrub.py", False),
        ("ledger/keys.py:12", False),
        ("derived/keys.py", True),
        ("postgresql/", True),
        ("nowhere/", False),
        ("sql_store.py", True),
        ("pg_store.py", False),
        ("service.ledger.Ledger", True),
        ("service.ledger.NoSuchName", False),
        ("ledger.merkle_store", False),
        ("api.app:create_app", True),
        ("application/json", None),
        ("https://example.org/a.py", None),
        ("localhost:8400/watches/", None),
        ("bench/.data/NAME.db", None),
        ("tests.NAME", None),
        ("../shared/spec/", None),
        ("ledger.db", None),
        ("e.g.", None),
        ("arxiv.org/abs/", None),
        ("10.1234/", None),
        (".venv/tools/", None),
        ("shared/fixtures/resolver-dev/queries.jsonl", None),
        ("Citation-Ledger/", None),
        ("README.md", True),
        ("ledger/storage/postgresql", True),
    ],
)
def test_what_counts_as_naming_a_path(token: str, verdict: bool | None):
    assert exists(token) is verdict


def test_a_page_is_read_inside_backticks_outside_fences():
    page = "see `nowhere/x.py` and nowhere/y.py\n```\ncat `nowhere/z.py`\n```\n"
    assert missing(prose_of_page(page)) == ["1: nowhere/x.py"]
