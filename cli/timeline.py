"""`ledger timeline ID`: the instants where a paper's record changed, one line each."""

from __future__ import annotations

import click
import msgspec

from cli.common import arxiv_arg, read_db_option


def register(main: click.Group) -> None:
    """Add `ledger timeline` to the `ledger` group (once)."""
    if "timeline" not in main.commands:
        main.add_command(timeline)


@click.command()
@click.argument("arxiv_id", callback=arxiv_arg)
@click.option("--json", "as_json", is_flag=True, help="Print the instants and lanes as canonical JSON.")
@read_db_option
def timeline(arxiv_id: str, as_json: bool, db: str) -> None:
    """Print each instant where the record of ARXIV_ID changed (oldest first): when, what changed, and
    the events behind it. Any of them is a record: `ledger record ID --as-of INSTANT`."""
    from service.ledger import Ledger

    found, _ = Ledger(db).records.timeline(arxiv_id)  # a LedgerError leaves as one line (cli.main)
    if as_json:
        out = msgspec.to_builtins(found)
        for item, instant in zip(out["instants"], found.instants, strict=True):
            item["at"] = instant.at
        click.echo(msgspec.json.encode(out, order="sorted").decode())
        return
    for instant in found.instants:
        click.echo(instant.line())
    if found.inbound_by_day:
        click.echo(
            "note: more inbound citations than are followed one by one: their changes are counted per "
            "day (each day's first and last change listed)",
            err=True,
        )
