"""`ledger migrate --from DB --to DB`: copy a ledger between backends event for event, then verify it."""

from __future__ import annotations

import sys

import click

from ledger.model.errors import LedgerError


@click.command("migrate")
@click.option("--from", "source", required=True, help="Source ledger: a SQLite path or postgresql:// URL.")
@click.option(
    "--to", "target", required=True, help="Empty target ledger: a SQLite path or postgresql:// URL."
)
@click.option("--batch", default=2000, show_default=True, help="Events per target transaction.")
def migrate(source: str, target: str, batch: int) -> None:
    """Copy every event verbatim (same seq, recorded_at and hashes) into an empty ledger and verify it."""
    from service.ledger import Ledger

    try:
        src, dst = Ledger(source), Ledger(target)
        expected = src.head()
        shown = sys.stderr.isatty()
        copied = src.ops.copy_into(
            dst.ops,
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
        carried = src.ops.carry_side_state(dst.ops)
    except LedgerError as e:
        click.echo(f"error: the copy's signed state: {e.message}", err=True)
        sys.exit(2)
    if carried:
        click.echo("carried over: " + ", ".join(carried))


def register(main: click.Group) -> None:
    """Add the backend commands to the `ledger` group."""
    main.add_command(migrate)
