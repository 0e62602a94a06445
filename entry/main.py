"""`ledger`: the command line of cli/, plus `ledger serve` and `ledger witness serve`, which run the API."""

from __future__ import annotations

from pathlib import Path

import click

from api.settings import Settings, environment_help
from cli.common import db_option, fail
from cli.main import main
from cli.witness import _key_option, _name_option, read_log_key
from ledger.model.errors import LedgerError
from ledger.tlog.checkpoint import Verifier
from ledger.tlog.cosign import load_or_create_witness_key
from ledger.tlog.witness_state import WitnessState
from service.ledger import Ledger, is_pg_url
from service.ops.replicate import replicating
from service.proofs.witness import Witness

__all__ = ["main"]

witness_group = main.commands["witness"]
assert isinstance(witness_group, click.Group)


# \b keeps click from rewrapping the lines: one variable a line
@main.command(
    "serve", epilog="Environment (every LEDGER_* variable the server reads):\n\n\b\n" + environment_help()
)
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", default=8000, show_default=True, type=int)
@click.option("--workers", default=1, show_default=True, type=int, help="uvicorn worker processes.")
@click.option("--read-only", is_flag=True, help="Refuse every write (403 writes_disabled).")
@click.option("--no-samples", is_flag=True, help="Do not load the sample record into an empty ledger.")
@click.option(
    "--replicate",
    "replica",
    type=click.Path(file_okay=False),
    default=None,
    help="Keep a Litestream replica of the SQLite file in this directory while serving.",
)
@click.option("--sync-interval", default="1s", show_default=True, help="How far the replica may lag.")
@db_option
def serve_api(
    host: str,
    port: int,
    workers: int,
    read_only: bool,
    no_samples: bool,
    replica: str | None,
    sync_interval: str,
    db: str,
) -> None:
    """Serve the HTTP API and record pages; an empty ledger gets the sample record first."""
    from api.server import run  # FastAPI and uvicorn load only when a server starts, not for the CLI

    def go() -> None:
        run(db=db, host=host, port=port, workers=workers, read_only=read_only, samples=not no_samples)

    if replica is None:
        go()
        return
    if is_pg_url(db):
        raise click.UsageError(
            "--replicate is for a SQLite file; replicate PostgreSQL with its own streaming"
        )
    Ledger(db).close()  # the file exists (and is migrated) before Litestream opens it
    try:
        with replicating(db, replica, sync_interval) as config:
            click.echo(f"Replicating {db} to {replica} with Litestream ({config})", err=True)
            go()
    except LedgerError as e:
        raise click.ClickException(e.message) from None


@witness_group.command("serve")
@_key_option
@_name_option
@click.option("--log", "logs", multiple=True, required=True, help="A log's vkey, or a file holding it.")
@click.option("--db", required=True, type=click.Path(dir_okay=False, path_type=Path), help="State file.")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=int, default=8080, show_default=True)
def serve_witness(key: Path, name: str | None, logs: tuple[str, ...], db: Path, host: str, port: int) -> None:
    """Serve POST /add-checkpoint (tlog-witness) for the logs given by --log."""
    from api.server import check_can_listen, run_guarded  # FastAPI and uvicorn: only when serving
    from api.witness.app import create_witness_app  # the same, for the witness's app

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
    check_can_listen(host, port)
    app = create_witness_app(Witness(WitnessState(db), signer, known), settings=settings)
    click.echo(f"Witness {signer.vkey}", err=True)
    click.echo(f"Witnessing {', '.join(sorted(known))}; serving http://{host}:{port}", err=True)
    # the ledger server's guards: a deadline for each head and body, bounded heads, lingering close
    run_guarded(app, host=host, port=port, log_level="warning")
