"""Every file README.md and docs/*.md point a reader to exists: a link, or a path in backticks."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.paths import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
FOLDERS = "tests|scripts|bench|docs|api|service|ledger|cli|projections|entry|locks"
_LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")
_PATH = re.compile(rf"`((?:{FOLDERS})/[\w./-]*\w)(?::\d+)?`")


def named(text: str, page: Path) -> list[str]:
    """The files `text`, on `page`, points to, relative to the checkout's root."""
    links = [m[1] for m in _LINK.finditer(text) if not re.match(r"[a-z]+:", m[1])]
    found = [str((page.parent / link).resolve().relative_to(ROOT)) for link in links]
    return found + [m[1] for m in _PATH.finditer(text) if "*" not in m[1]]


@pytest.mark.parametrize("page", PAGES, ids=[str(p.relative_to(ROOT)) for p in PAGES])
def test_every_file_a_page_names_is_there(page: Path):
    missing = [name for name in named(page.read_text(encoding="utf-8"), page) if not (ROOT / name).exists()]
    assert missing == [], f"{page.relative_to(ROOT)} names files a checkout does not have: {missing}"


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("see [the tour](tour.md) and `ledger/model/ids.py`", ["docs/tour.md", "ledger/model/ids.py"]),
        ("[site](https://example.org) and `ledger sample` and `ledger/spans.py:56`", ["ledger/spans.py"]),
        ("`tests/data/sources/*.json`", []),
    ],
)
def test_what_counts_as_naming_a_file(text: str, names: list[str]):
    assert sorted(named(text, ROOT / "docs" / "x.md")) == sorted(names)
