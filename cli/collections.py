"""Collections from the command line: `ledger collection add|remove|list`.

A change is one `collection.changed` event in the log (service/collections.py), recorded as the CLI
user's write; `list --known-at T` answers what the ledger knew at T.
"""

from __future__ import annotations

import os

import click

from cli.common import db_option, instant, read_db_option
from ledger.model.codec import Encodable, canonical
from ledger.model.errors import NotFound
from ledger.model.ids import normalise_arxiv
from ledger.model.instants import format_recorded
from service.collections import change_data, limits_from_env
from service.ledger import Ledger


def register(main: click.Group) -> None:
    """Add `collection` to the `ledger` group (once)."""
    if "collection" not in main.commands:
        main.add_command(collection)


@click.group()
def collection() -> None:
    """Collections: named sets of papers, kept in the log (their membership as of any instant)."""


def _change(db: str, name: str, add: list[str], remove: list[str], as_json: bool) -> None:
    limits = limits_from_env(os.environ)
    data = change_data(name, add, remove, limits)
    for given in (*add, *remove):
        canon = normalise_arxiv(given, "ID")  # each was read by change_data already
        if canon != given:
            click.echo(f"note: ID {given!r} read as {canon}", err=True)
    ledger = Ledger(db)
    done = ledger.intake.change_collection(data)
    item = done.result.items[0]
    if as_json:
        body: dict[str, Encodable] = {
            "name": data.name,
            "add": data.add,
            "remove": data.remove,
            "members": done.members,
            "event": {
                "seq": item.seq,
                "event_id": item.event_id,
                "hash": item.hash,
                "duplicate": item.duplicate,
            },
        }
        click.echo(canonical(body).decode())
        return
    verb = f"added {len(data.add)}" if data.add else f"removed {len(data.remove)}"
    click.echo(f"collection {data.name}: {verb}; {done.members} paper(s) now (event seq {item.seq})")


@collection.command("add")
@click.argument("name")
@click.argument("ids", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print the change as JSON.")
@db_option
def collection_add(name: str, ids: tuple[str, ...], as_json: bool, db: str) -> None:
    """Add papers (arXiv ids as pasted: arXiv:..., a version, a URL) to collection NAME, making it."""
    _change(db, name, list(ids), [], as_json)


@collection.command("remove")
@click.argument("name")
@click.argument("ids", nargs=-1, required=True)
@click.option("--json", "as_json", is_flag=True, help="Print the change as JSON.")
@db_option
def collection_remove(name: str, ids: tuple[str, ...], as_json: bool, db: str) -> None:
    """Remove papers from collection NAME (it stays made, even when empty)."""
    _change(db, name, [], list(ids), as_json)


@collection.command("list")
@click.argument("name", required=False)
@click.option(
    "--known-at", help="What the ledger knew at this instant (RFC 3339 or YYYY-MM-DD; default: now)."
)
@click.option("--json", "as_json", is_flag=True, help="Print JSON.")
@read_db_option
def collection_list(name: str | None, known_at: str | None, as_json: bool, db: str) -> None:
    """Without NAME: each collection and its size. With NAME: its papers, one a line."""
    known_us = instant(known_at, "--known-at")
    collections = Ledger(db).collections
    at = None if known_us is None else format_recorded(known_us)
    if name is None:
        sizes = collections.sizes(known_us)
        if as_json:
            listed: list[Encodable] = [{"name": n, "members": k} for n, k in sizes.items()]
            click.echo(canonical({"collections": listed, "known_at": at}).decode())
            return
        for n, k in sizes.items():
            click.echo(f"{n}  {k} paper(s)")
        return
    members = collections.members(name, known_us)
    if members is None:
        when = f" at {at}" if at else ""
        raise NotFound(f"no collection {name!r}{when}")
    if as_json:
        click.echo(canonical({"name": name, "members": sorted(members), "known_at": at}).decode())
        return
    for m in sorted(members):
        click.echo(m)
