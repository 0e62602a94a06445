"""The DB-API connection and cursor the storage code receives: what sqlite3's and psycopg's both offer.

The statements' parameters and the rows' values are the column types the layout uses (schema.py):
integers, text, bytes, booleans and NULL; floats and (PostgreSQL's sums) decimals for computed values.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from decimal import Decimal
from typing import Any, Protocol, TypeAlias

SqlValue: TypeAlias = None | bool | int | float | Decimal | str | bytes
# a row as the drivers give it (sqlite3 and psycopg both: a tuple of the row's values), whose types
# the statement's columns decide: each reader narrows or names what it selects
SqlRow: TypeAlias = Sequence[Any]
# a statement's parameters: values, and a list of them where a PostgreSQL statement binds an array
SqlParams: TypeAlias = Sequence[SqlValue | Sequence[SqlValue]]


class Cursor(Protocol):
    """The part of a DB-API cursor the storage code uses."""

    @property
    def rowcount(self) -> int: ...

    def __iter__(self) -> Iterator[SqlRow]: ...

    # a row or None, as the drivers' own stubs type it: callers check None where a row may be missing
    def fetchone(self) -> Any: ...

    def fetchall(self) -> Sequence[SqlRow]: ...

    # sqlite3 gives the cursor back, psycopg None
    def executemany(self, sql: str, rows: Sequence[SqlParams], /) -> Cursor | None: ...


class Connection(Protocol):
    """The part of a DB-API connection the storage code uses (sqlite3.Connection, psycopg.Connection)."""

    def execute(self, sql: str, params: SqlParams = ..., /) -> Cursor: ...

    def cursor(self) -> Cursor: ...


def first(cursor: Cursor) -> SqlRow:
    """The row of a query that always gives one (an aggregate, a setting)."""
    row = cursor.fetchone()
    if row is None:
        raise LookupError("the query gave no row")
    return row


def integer(value: SqlValue) -> int:
    """A value of an integer column, or an aggregate of one (PostgreSQL's sum is a numeric), as an int."""
    if value is None:
        raise TypeError("expected an integer from the database, found NULL")
    return int(value)
