"""Operations commands: `ledger backup DEST` (online, verified copy of a live ledger), `ledger stats`,
`ledger status` (what the ledger is doing, from its database alone)."""

from __future__ import annotations

import sys

import click

from cli.common import read_db_option
from ledger.model.codec import canonical
from service.ledger import Ledger
from service.ops.backup import BackupError, backup


def register(main: click.Group) -> None:
    """Add the operations commands to the `ledger` group (once)."""
    if "backup" not in main.commands:
        main.add_command(backup_command)
        main.add_command(restore_replica)
        main.add_command(stats)
        main.add_command(status)


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the figures as canonical JSON.")
@read_db_option
def stats(as_json: bool, db: str) -> None:
    """Rows in each table of the ledger, and its head."""
    ledger = Ledger(db)
    tables, head = ledger.store.stats(), ledger.head()
    if as_json:
        click.echo(canonical({"head": {"seq": head.seq, "hash": head.hash}, "tables": tables}).decode())
        return
    width = max(map(len, tables), default=0)
    for name, rows in tables.items():
        click.echo(f"{name:<{width}}  {rows:>10,}")
    click.echo(f"head seq {head.seq} hash {head.hash}")


@click.command()
@click.option("--json", "as_json", is_flag=True, help="Print the status as canonical JSON.")
@read_db_option
def status(as_json: bool, db: str) -> None:
    """One screen of what the ledger is doing, read from its database: the head, its size on disk, the
    last full walk of the chain, the last signed checkpoint and the webhook outbox."""
    from service.ops.status import read_status

    ledger = Ledger(db)
    now = read_status(ledger.store, ledger.clock)
    if as_json:
        click.echo(canonical(now.to_dict()).decode())
        return
    for line in now.lines():
        click.echo(line)


@click.command("backup")
@click.argument("dest", type=click.Path(dir_okay=False))
@click.option(
    "--db",
    "db",
    envvar="LEDGER_DB",
    default="ledger.db",
    show_default="$LEDGER_DB or ./ledger.db",
    help="The ledger to back up: a SQLite file, or a postgresql:// URL (copied into a new SQLite file).",
)
@click.option("--step-pages", default=1024, show_default=True, help="Pages copied per step.")
@click.option("--no-verify", is_flag=True, help="Do not verify the copy afterwards.")
def backup_command(dest: str, db: str, step_pages: int, no_verify: bool) -> None:
    """Copy a live ledger to DEST (online: writers go on), with its key, checkpoint and token files;
    then verify the copy. Restore: stop the server, copy DEST over the ledger file (and DEST.key,
    DEST.checkpoint, DEST.tokens over their namesakes), delete the ledger's -wal and -shm files, start."""
    try:
        report = backup(db, dest, step_pages=step_pages, verify=not no_verify)
    except BackupError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(1)
    side = ", ".join(f"{dest}{s}" for s in report.side_files) or "none"
    click.echo(
        f"backup: {db} -> {dest}: head seq {report.head.seq} hash {report.head.hash}, "
        f"{report.pages} pages in {report.seconds:.2f} s; side files: {side}"
    )
    if report.verify is not None:
        if not report.verify.ok:
            click.echo(f"BROKEN copy at seq {report.verify.first_bad_seq}: {report.verify.reason}", err=True)
            sys.exit(2)
        click.echo(f"verify: OK: {report.verify.events_checked} events verified in the copy")


@click.command("restore-replica")
@click.argument("replica", type=click.Path(file_okay=False, exists=True))
@click.argument("dest", type=click.Path(dir_okay=False))
def restore_replica(replica: str, dest: str) -> None:
    """Restore the Litestream replica kept by `ledger serve --replicate REPLICA` into the new file DEST,
    then verify it. Copy the key and last checkpoint (<db>.key, <db>.checkpoint) next to DEST yourself."""
    from ledger.model.errors import LedgerError
    from service.ledger import Ledger
    from service.ops.replicate import restore

    try:
        path = restore(replica, dest)
        report = Ledger(path).verify()
    except LedgerError as e:
        click.echo(f"error: {e.message}", err=True)
        sys.exit(1)
    click.echo(f"restored {replica} -> {path}: head seq {report.head.seq} hash {report.head.hash}")
    if not report.ok:
        click.echo(f"BROKEN at seq {report.first_bad_seq}: {report.reason}", err=True)
        sys.exit(2)
    click.echo(f"verify: OK: {report.events_checked} events verified")
