"""The DB-API protocols the storage code receives fit both drivers; the row helpers read as int() did."""

from __future__ import annotations

import sqlite3
from decimal import Decimal

import psycopg
import pytest

from ledger.storage.sql import Connection, SqlValue, first, integer


def _psycopg_connection_is_a_connection(conn: psycopg.Connection) -> Connection:
    return conn  # checked by mypy: psycopg's connection offers what the protocol names


def test_an_sqlite_connection_is_a_connection() -> None:
    conn: Connection = sqlite3.connect(":memory:")  # checked by mypy, then used through the protocol
    assert first(conn.execute("SELECT coalesce(max(x), 0) FROM (SELECT 1 AS x WHERE 0)")) == (0,)
    conn.execute("CREATE TABLE t (x INTEGER)")
    conn.cursor().executemany("INSERT INTO t (x) VALUES (?)", [(3,), (4,)])
    assert [tuple(r) for r in conn.execute("SELECT x FROM t ORDER BY x")] == [(3,), (4,)]


def test_first_refuses_a_query_without_a_row() -> None:
    conn: Connection = sqlite3.connect(":memory:")
    with pytest.raises(LookupError, match="no row"):
        first(conn.execute("SELECT 1 WHERE 0"))


@pytest.mark.parametrize(("value", "expected"), [(7, 7), (Decimal("12"), 12), ("5", 5), (True, 1), (2.0, 2)])
def test_integer_reads_what_the_drivers_give(value: SqlValue, expected: int) -> None:
    assert integer(value) == expected and type(integer(value)) is int


def test_integer_refuses_null() -> None:
    with pytest.raises(TypeError, match="NULL"):
        integer(None)
