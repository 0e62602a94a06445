"""Where the suite's files are, for tests at any depth under tests/: the checkout and tests/data."""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
DATA = TESTS / "data"
