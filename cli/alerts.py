"""Standing alerts from the command line: `ledger watch add|list|remove|rotate-secret` and
`ledger alerts WATCH_ID`.

The CLI stores watches and reads alerts in the ledger's own database; webhooks are delivered by a
server (`ledger serve`) over the same database, which finds the outbox this leaves.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import click
import msgspec

from cli.common import db_option, instant, read_db_option
from ledger.model.codec import canonical
from ledger.model.instants import format_recorded
from ledger.model.jsonvalue import JsonObject
from service.alerts.paper_notices import work_name
from service.alerts.secrets import SECRET_GRACE_S
from service.alerts.watch_spec import WORKS, parse_rotation, parse_watch
from service.alerts.watches import Watch, rotation_json, watch_json
from service.ledger import Ledger

if TYPE_CHECKING:
    from ledger.model.jsonvalue import JsonObject

_ALLOW = "LEDGER_WEBHOOK_ALLOW"
_GRACE = "LEDGER_WEBHOOK_SECRET_GRACE"


def register(main: click.Group) -> None:
    """Add `watch` and `alerts` to the `ledger` group (once)."""
    if "watch" not in main.commands:
        main.add_command(watch)
        main.add_command(alerts_command)


@click.group()
def watch() -> None:
    """Watches: be told when a work a paper (or a collection's papers) cites, or a work you list, gets a
    notice."""


@watch.command("add")
@click.option("--paper", "arxiv_id", help="Watch this paper's outbound references (an arXiv id).")
@click.option(
    "--collection", help="Watch the outbound references of every paper in this collection (as it changes)."
)
@click.option(
    "--work", "works", multiple=True, help="Watch this work: doi:10.1000/x or arxiv:2401.00001 (repeat)."
)
@click.option("--callback", "callback_url", help="POST each alert to this https URL (a webhook).")
@click.option(
    "--secret", help="Sign each webhook under this secret (whsec_...; one is made and printed if not given)."
)
@click.option("--json", "as_json", is_flag=True, help="Print the watch as JSON.")
@db_option
def watch_add(
    arxiv_id: str | None,
    collection: str | None,
    works: tuple[str, ...],
    callback_url: str | None,
    secret: str | None,
    as_json: bool,
    db: str,
) -> None:
    """Make a watch; alerts for the notices its works hold already are raised now (marked held)."""
    body: JsonObject = {"arxiv_id": arxiv_id} if arxiv_id else {}
    if collection is not None:
        body["collection"] = collection
    if works:
        body["works"] = [*works]
    for key, value in (("callback_url", callback_url), ("secret", secret)):
        if value is not None:
            body[key] = value
    allow = os.environ.get(_ALLOW, "").replace(",", " ").split()
    ledger = Ledger(db)
    spec = parse_watch(body, allow)
    made, covered = ledger.alerts.add_watch(spec)
    if as_json:
        click.echo(canonical(watch_json(made, covered, spec.secret_made)).decode())
        return
    raised = len(ledger.alerts.alerts(made.id, 0, 10_000))
    click.echo(
        f"watch {made.id}: {made.kind} {_target(made)}; {len(covered)} work(s) covered, {raised} alert(s)"
    )
    if spec.secret_made and made.secret is not None:
        click.echo(f"webhook secret (shown this once): {made.secret}")


def _target(w: Watch) -> str:
    return ", ".join(msgspec.json.decode(w.target)) if w.kind == WORKS else w.target


@watch.command("list")
@read_db_option
def watch_list(db: str) -> None:
    """Every watch in force, one a line, with its owner: the operator (made here) or a token's sha256."""
    alerts = Ledger(db).alerts
    after = ""
    while True:
        page = alerts.watches(after)
        for w in page:
            hook = f" -> {w.callback_url}" if w.callback_url else ""
            click.echo(f"{w.id}  {w.kind} {_target(w)}{hook}  (since {w.created_at}; owner {_owner(w)})")
        if len(page) < 100:
            return
        after = page[-1].id


def _owner(w: Watch) -> str:
    # the start of the token's sha256, as the token file holds it; the operator's have none
    return "operator" if w.owner is None else f"token sha256:{w.owner[:16]}"


@watch.command("remove")
@click.argument("watch_id")
@db_option
def watch_remove(watch_id: str, db: str) -> None:
    """Stop a watch (its pending webhooks are dropped; its alerts stay readable)."""
    w = Ledger(db).alerts.remove_watch(watch_id)
    click.echo(f"watch {w.id} removed")


@watch.command("rotate-secret")
@click.argument("watch_id")
@click.option("--secret", help="The new secret (whsec_...; one is made and printed if not given).")
@click.option(
    "--grace",
    type=click.FloatRange(min=0, min_open=True),
    envvar=_GRACE,
    default=SECRET_GRACE_S,
    show_default=True,
    help=f"Seconds the old secret still signs beside the new one (or {_GRACE}).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the rotation as JSON.")
@db_option
def watch_rotate_secret(watch_id: str, secret: str | None, grace: float, as_json: bool, db: str) -> None:
    """Give a watch a new webhook secret, keeping the watch, its alerts and their webhook-ids; the
    old secret signs beside the new one for the grace."""
    ledger = Ledger(db)
    new, made = parse_rotation({} if secret is None else {"secret": secret})
    rotated = ledger.alerts.rotate_secret(watch_id, new, made, grace)
    if as_json:
        click.echo(canonical(rotation_json(rotated)).decode())
        return
    until = format_recorded(rotated.old_until_us)
    click.echo(f"watch {rotated.watch.id}: secret rotated; the old one signs beside it until {until}")
    if made:
        click.echo(f"webhook secret (shown this once): {new}")


@click.command("alerts")
@click.argument("watch_id", required=False)
@click.option("--since", help="Only alerts raised at or after this instant (RFC 3339 or YYYY-MM-DD).")
@click.option("--json", "as_json", is_flag=True, help="One alert JSON a line (NDJSON).")
@read_db_option
def alerts_command(watch_id: str | None, since: str | None, as_json: bool, db: str) -> None:
    """A watch's alerts (with no WATCH_ID, every watch's), in the order they were raised."""
    ledger = Ledger(db)
    only = ledger.alerts.watch_of(watch_id).id if watch_id is not None else None
    since_us = instant(since, "--since", future=True)
    after = 0
    while True:
        page = ledger.alerts.alerts(only, after, 100, since_us)
        for a in page:
            if as_json:
                click.echo(a.body)
                continue
            b = msgspec.json.decode(a.body)
            n = b["notice"]
            kind = n["kind"].replace("_", " ")
            ref = b["citing"][0] if b["citing"] else None
            cited = f" cited as reference {ref['reference_index']} of arXiv:{ref['arxiv_id']}" if ref else ""
            held = " (held before the watch)" if b["held_before_watch"] else ""
            whose = f"; watch {a.watch_id}" if only is None else ""
            click.echo(
                f"{a.raised_at}  {kind} of {work_name(_work(b))}{cited} by {n['source']}, "
                f"notice {n.get('notice_doi') or 'without DOI'}; event seq {b['event']['seq']}{held}{whose}"
            )
        if len(page) < 100:
            return
        after = page[-1].n


def _work(body: dict) -> dict:
    """The work an alert is on: its `work`, or for an alert raised before alerts named it, its work_id
    and the title its first citing reference gave."""
    if "work" in body:
        return dict(body["work"])
    title = body["citing"][0].get("title") if body.get("citing") else None
    return {"work_id": body.get("work_id"), "doi": None, "arxiv_id": None, "title": title}
