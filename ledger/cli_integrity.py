"""CLI commands for Merkle proofs, checkpoints and offline bundles (issue: verifiable integrity)."""

from __future__ import annotations

import click


def register(main: click.Group) -> None:
    """Add this module's commands to the `ledger` group."""
