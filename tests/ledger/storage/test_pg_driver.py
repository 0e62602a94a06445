"""A postgresql:// ledger without the PostgreSQL driver is refused naming the extra to install."""

from __future__ import annotations

import sys

import pytest

from ledger.storage.backend import open_store
from ledger.storage.interface import Unsupported


def test_a_postgresql_url_without_psycopg_names_the_extra(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(sys.modules, "psycopg", None)  # what `import psycopg` meets when it is not installed
    with pytest.raises(Unsupported, match=r"psycopg 3.*citation-ledger\[postgresql\]"):
        open_store("postgresql://nobody@127.0.0.1:1/none")
