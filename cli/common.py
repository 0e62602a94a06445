"""What every `ledger` command shares: the --db option, instants from options, failing cleanly."""

from __future__ import annotations

import sys
from typing import NoReturn

import click

from ledger.errors import LedgerError
from ledger.instants import parse_as_of

db_option = click.option(
    "--db",
    "db",
    envvar="LEDGER_DB",
    default="ledger.db",
    show_default="$LEDGER_DB or ./ledger.db",
    help="SQLite ledger file (created on first use) or a postgresql:// URL.",
)


def instant(value: str | None, name: str) -> int | None:
    """An option's RFC 3339 instant or YYYY-MM-DD (end of day UTC) in microseconds; None stays None."""
    if value is None:
        return None
    try:
        return parse_as_of(value)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint=name) from None


def required_instant(value: str, name: str) -> int:
    """Like `instant`, for an option that is always given."""
    us = instant(value, name)
    assert us is not None
    return us


def fail(err: LedgerError) -> NoReturn:
    """Print the ledger's message on stderr and exit 1."""
    click.echo(f"error: {err.message}", err=True)
    sys.exit(1)
