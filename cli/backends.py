"""`ledger migrate --from DB --to DB`: copy a ledger between backends event for event, then verify it."""

from __future__ import annotations

import sys

import click

from ledger.model.errors import LedgerError
from service.ledger import Store


@click.command("migrate")
@click.option("--from", "source", required=True, help="Source ledger: a SQLite path or postgresql:// URL.")
@click.option(
    "--to", "target", required=True, help="Empty target ledger: a SQLite path or postgresql:// URL."
)
@click.option("--batch", default=2000, show_default=True, help="Events per target transaction.")
def migrate(source: str, target: str, batch: int) -> None:
    """Copy every event verbatim (same seq, recorded_at and hashes) into an empty ledger and verify it."""
    from service.ledger import Ledger, copy_ledger

    try:
        src, dst = Ledger(source), Ledger(target)
        expected = src.head()
        shown = sys.stderr.isatty()
        copied = copy_ledger(
            src.store,
            dst.store,
            batch=batch,
            progress=(lambda n: click.echo(f"\rcopied {n}/{expected.seq}", nl=False, err=True))
            if shown
            else None,
        )
        if shown:
            click.echo(err=True)
        click.echo(f"copied {copied.seq} events; head seq {copied.seq} hash {copied.hash}")
        report = dst.verify()
    except LedgerError as e:
        click.echo(f"error: {e.message}", err=True)
        sys.exit(1)
    if not report.ok:
        click.echo(f"BROKEN copy at seq {report.first_bad_seq}: {report.reason}", err=True)
        sys.exit(2)
    if report.head != copied:
        click.echo(f"error: the target's head {report.head.header()} is not the copied head", err=True)
        sys.exit(2)
    click.echo(f"OK: {report.events_checked} events verified in the target; head seq {report.head.seq}")
    try:
        carried = carry_side_state(src.store, dst.store)
    except LedgerError as e:
        click.echo(f"error: the copy's signed state: {e.message}", err=True)
        sys.exit(2)
    if carried:
        click.echo("carried over: " + ", ".join(carried))


def carry_side_state(src: Store, dst: Store) -> list[str]:
    """Give the target the source's signing key and token file where it has none, and the last signed
    checkpoint when both sign with the same key (checked against the copied tree before it is kept)."""
    from ledger.tlog.checkpoint import Checkpointer
    from service.ops.backup import copy_private

    carried: list[str] = []
    for suffix in (".key", ".tokens"):
        origin, target = src.tables.side_file(suffix), dst.tables.side_file(suffix)
        if not target.exists() and copy_private(origin, target):
            carried.append(str(target))
    src_key, dst_key = Checkpointer.for_db(src).key_path, Checkpointer.for_db(dst).key_path
    same_key = src_key.exists() and dst_key.exists() and src_key.read_bytes() == dst_key.read_bytes()
    note = src.tables.last_checkpoint()
    if note is not None and same_key and dst.tables.last_checkpoint() is None:
        with dst.tables.signing():
            dst.tables.save_checkpoint(note)
        Checkpointer.for_db(dst).latest()  # refuses (ChainBroken) if the copy does not extend it
        carried.append("the last signed checkpoint")
    return carried


def register(main: click.Group) -> None:
    """Add the backend commands to the `ledger` group."""
    main.add_command(migrate)
