"""`ledger witness`: run a C2SP tlog-witness for known logs, and print the witness's key."""

from __future__ import annotations

from pathlib import Path

import click

from cli.common import fail
from ledger.model.errors import LedgerError
from ledger.tlog.checkpoint import Verifier, parse_vkey
from ledger.tlog.checkpoint_notes import NoteError

_key_option = click.option(
    "--key",
    "key",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="The witness's private key file (created on first use, mode 600).",
)
_name_option = click.option(
    "--name",
    default=None,
    help="The witness name, used when the key is created (default: $LEDGER_WITNESS_NAME, "
    "else citation-ledger-witness/<hostname>); with an existing key, it must match.",
)


def read_log_key(value: str) -> Verifier:
    """A --log argument: a log's vkey string, or a file holding one."""
    text = value
    if not (value.count("+") >= 2 and "\n" not in value.strip()) or Path(value).is_file():
        try:
            text = Path(value).read_text()
        except OSError as e:
            raise click.BadParameter(
                f"neither a verifier key nor a readable file: {e}", param_hint="--log"
            ) from None
    try:
        return parse_vkey(text)
    except NoteError as e:
        raise click.BadParameter(e.message, param_hint="--log") from None


def register(main: click.Group) -> None:
    """Add the `ledger witness` group to the `ledger` group."""

    @main.group()
    def witness() -> None:
        """A C2SP transparency-log witness: cosigns checkpoints consistent with those it saw."""

    @witness.command()
    @_key_option
    @_name_option
    def vkey(key: Path, name: str | None) -> None:
        """Print the witness's public key (C2SP vkey, cosignature/v1)."""
        from ledger.tlog.cosign import load_or_create_witness_key

        try:
            click.echo(load_or_create_witness_key(key, name).vkey)
        except LedgerError as e:
            fail(e)
