"""Product code's comments and docstrings give reasons, not history: no issue numbers, and no facts
about the one machine the code was measured on."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.e2e.test_named_paths import prose_of_code
from tests.paths import ROOT

PRODUCT = ("ledger", "projections", "service", "api", "cli", "entry")
MODULES = sorted(p for folder in PRODUCT for p in (ROOT / folder).rglob("*.py"))
ISSUE = re.compile(r"\bissues? #?\d+|\(#\d+\)", re.I)
# "the Host header" and "this host by name" are a web request's host, not a machine the code ran on
MACHINE = re.compile(r"\b(?:this|the|our) (?:machine|box|vm)\b|\b(?:two|three|four|\d+)[- ]cores?\b", re.I)


def unplain(prose: list[tuple[int, str]]) -> list[str]:
    """`line: text` for each line of prose naming an issue or one machine."""
    return [f"{n}: {text.strip()}" for n, text in prose if ISSUE.search(text) or MACHINE.search(text)]


@pytest.mark.parametrize("module", MODULES, ids=[p.relative_to(ROOT).as_posix() for p in MODULES])
def test_comments_name_no_issue_and_no_machine(module: Path):
    found = unplain(prose_of_code(module.read_text(encoding="utf-8")))
    assert found == [], f"{module.relative_to(ROOT)}: say the reason instead: {found}"


@pytest.mark.parametrize(
    ("text", "flagged"),
    [
        ("# the machine's two cores (issue 30)", True),
        ("# beside its appends (issue 31)", True),
        ("# fixed in #12 (#12)", True),
        ("# measured on this machine", True),
        ("# a 2-core host", True),
        ("# the Host header names the host", False),
        ("# where a second core can run them", False),
        ("# one issue at a time", False),
    ],
)
def test_what_counts_as_history_or_a_machine(text: str, flagged: bool):
    assert bool(unplain([(1, text)])) is flagged
