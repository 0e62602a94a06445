"""CLI commands for ingesting real sources and diffing records (issue: real sources in)."""

from __future__ import annotations

import click


def register(main: click.Group) -> None:
    """Add this module's commands to the `ledger` group."""
