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

    @witness.command()
    @_key_option
    @_name_option
    @click.option("--log", "logs", multiple=True, required=True, help="A log's vkey, or a file holding it.")
    @click.option("--db", required=True, type=click.Path(dir_okay=False, path_type=Path), help="State file.")
    @click.option("--host", default="127.0.0.1", show_default=True)
    @click.option("--port", type=int, default=8080, show_default=True)
    def serve(key: Path, name: str | None, logs: tuple[str, ...], db: Path, host: str, port: int) -> None:
        """Serve POST /add-checkpoint (tlog-witness) for the logs given by --log."""
        from api.server import run_guarded
        from api.settings import Settings
        from api.witness.app import create_witness_app
        from ledger.tlog.cosign import load_or_create_witness_key
        from ledger.tlog.witness_state import WitnessState
        from service.proofs.witness import Witness

        known: dict[str, Verifier] = {}
        for value in logs:
            v = read_log_key(value)
            if v.name in known and known[v.name] != v:
                raise click.BadParameter(f"two keys for the log {v.name!r}", param_hint="--log")
            known[v.name] = v
        try:
            signer = load_or_create_witness_key(key, name)
        except LedgerError as e:
            fail(e)
        try:
            # the ledger server's deadlines (LEDGER_IDLE_TIMEOUT, ...): a bad value fails here, once
            settings = Settings.from_env()
        except ValueError as e:
            raise click.ClickException(str(e)) from None
        app = create_witness_app(Witness(WitnessState(db), signer, known), settings=settings)
        click.echo(f"Witness {signer.vkey}", err=True)
        click.echo(f"Witnessing {', '.join(sorted(known))}; serving http://{host}:{port}", err=True)
        # the ledger server's guards: a deadline for each head and body, bounded heads, lingering close
        run_guarded(app, host=host, port=port, log_level="warning")
