"""One clock: the product reads the time of day only through the Clock a Ledger is given
(ledger/model/instants.py), so a test that fixes the ledger's clock fixes every "now" it compares with."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from ledger.model.errors import InvalidEvent
from ledger.model.instants import parse_instant
from service.ledger import Ledger
from service.sources import SourceFile, ingest
from tests.conftest import NewDb
from tests.factories import Clock
from tests.paths import ROOT
from tests.service.sources.test_sources_support import SOURCES_DIR, sample_events

PRODUCT = ("api", "cli", "service", "projections", "ledger", "entry")
THE_CLOCK = Path("ledger/model/instants.py")
RW = (SOURCES_DIR / "retraction_watch.csv").read_bytes()


def _product_modules() -> list[Path]:
    return sorted(p.relative_to(ROOT) for d in PRODUCT for p in (ROOT / d).rglob("*.py"))


def _clock_readings(tree: ast.AST) -> list[tuple[int, str]]:
    """Where a module reads the time of day itself: a call of a bare `now_us` (a function, not a
    clock's method), an import of one, or `time.time_ns`."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "now_us":
            found.append((node.lineno, "now_us()"))
        elif isinstance(node, ast.ImportFrom) and any(a.name == "now_us" for a in node.names):
            found.append((node.lineno, f"from {node.module} import now_us"))
        elif isinstance(node, ast.Attribute) and node.attr == "time_ns":
            found.append((node.lineno, "time.time_ns"))
        elif (
            isinstance(node, ast.Attribute)
            and node.attr == "now_us"
            and isinstance(node.value, ast.Name)
            and node.value.id == "instants"
        ):
            found.append((node.lineno, "instants.now_us"))
    return found


def test_only_the_clock_reads_the_time_of_day() -> None:
    modules = _product_modules()
    assert THE_CLOCK in modules and len(modules) > 100  # the walk sees the product
    readings = {
        f"{path}:{line}": what
        for path in modules
        if path != THE_CLOCK
        for line, what in _clock_readings(ast.parse((ROOT / path).read_text(), str(path)))
    }
    assert readings == {}, "read the time through the ledger's Clock (ledger.clock.now_us()) instead"
    assert _clock_readings(ast.parse((ROOT / THE_CLOCK).read_text())) != []  # the check can see one


def test_a_source_file_is_in_the_future_by_the_ledgers_clock(new_db: NewDb) -> None:
    """The ingest's "not in the future" look and the append it leads to read one clock: a ledger whose
    clock stands in 2030 takes a file fetched in 2029, and one standing in 2025 refuses it by name."""
    later = Ledger(new_db("later.db"), clock=Clock(parse_instant("2030-01-01T00:00:00Z")))
    later.append(sample_events())
    summary = ingest(later, SourceFile("retraction-watch", RW, "2029-06-01T00:00:00Z"))
    assert summary.appended > 0
    earlier = Ledger(new_db("earlier.db"), clock=Clock(parse_instant("2026-01-02T00:00:00Z")))
    earlier.append(sample_events())
    head = earlier.head()
    with pytest.raises(InvalidEvent, match="more than 5 minutes in the future") as refused:
        ingest(earlier, SourceFile("retraction-watch", RW, "2026-01-02T00:06:00Z"))
    assert refused.value.where == "observed_at" and earlier.head() == head
