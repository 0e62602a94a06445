"""`ledger screen`: the references of a set of papers (or every paper) resolved to works carrying a
standing notice, as of T known at K, as a table, CSV or JSON; `--changes-from` for what became flagged
or cleared since an earlier instant."""

from __future__ import annotations

import csv
import sys
from typing import TYPE_CHECKING

import click

from cli.common import instant, read_db_option

if TYPE_CHECKING:
    from _csv import Writer

    from ledger.model.jsonvalue import JsonObject
    from service.ledger import Ledger
    from service.screen import Page

# notice kinds (ledger.model.events.NOTICE_KINDS; not imported here: the CLI starts without the model)
KINDS = ("retraction", "partial_retraction", "withdrawal", "removal", "expression_of_concern", "correction",
         "reinstatement")  # fmt: skip
DEFAULT_LIMIT = 100  # service.screen.DEFAULT_PAGE (the CLI starts without it)


def register(main: click.Group) -> None:
    """Add `ledger screen` to the `ledger` group (once)."""
    if "screen" not in main.commands:
        main.add_command(screen_command)


@click.command("screen")
@click.option(
    "--paper", "papers", multiple=True, help="A citing paper to screen (repeatable; any form of id)."
)
@click.option("--collection", help="A named collection to screen (its members as known at --known-at).")
@click.option("--as-of", "as_of", help="RFC 3339 instant or YYYY-MM-DD (end of day UTC); default now.")
@click.option(
    "--known-at", "known_at", help="What the ledger knew then: only events recorded by this instant."
)
@click.option(
    "--kind", "kinds", multiple=True, type=click.Choice(KINDS), help="Only notices of this kind (repeatable)."
)
@click.option("--exact-only", is_flag=True, help="Only references resolved verified_exact.")
@click.option(
    "--changes-from",
    "changes_from",
    help="Instead: what became flagged or cleared from this instant to --as-of.",
)
@click.option(
    "--format", "fmt", type=click.Choice(["table", "csv", "json"]), default="table", show_default=True
)
@click.option(
    "--limit", type=click.IntRange(1), default=DEFAULT_LIMIT, show_default=True, help="Lines a page holds."
)
@click.option("--page", "page", help="The next_page token a previous answer printed.")
@click.option("--all-pages", is_flag=True, help="Print every page, one after another (table and CSV).")
@click.option(
    "--bundle",
    "bundle_to",
    metavar="PATH",
    help="Write this page as an offline bundle (its events, their proofs, the signed checkpoint of its "
    "head) to PATH (- for stdout), for `ledger check-bundle`.",
)
@read_db_option
def screen_command(
    papers: tuple[str, ...],
    collection: str | None,
    as_of: str | None,
    known_at: str | None,
    kinds: tuple[str, ...],
    exact_only: bool,
    changes_from: str | None,
    fmt: str,
    limit: int,
    page: str | None,
    all_pages: bool,
    bundle_to: str | None,
    db: str,
) -> None:
    """Each citing paper with each reference whose latest resolution as of T (verified exact or fuzzy,
    by any resolver or a person) ties it to a work carrying a standing notice: the notice, when the
    ledger learned it, who resolved the reference and the evidence link. A page at a time: the table
    ends with the command for the next page."""
    from ledger.model.codec import canonical
    from ledger.model.errors import InvalidEvent
    from ledger.model.ids import normalise_arxiv
    from service.ledger import Ledger
    from service.proofs.screen_bundle import screen_checkpoint
    from service.screen import Query, page_json

    t, k = instant(as_of, "--as-of"), instant(known_at, "--known-at")
    start = instant(changes_from, "--changes-from")
    if papers and collection is not None:
        raise InvalidEvent("--collection", "give --paper or --collection, not both")
    if bundle_to is not None and start is not None:
        raise InvalidEvent("--bundle", "a bundle proves a screen, not its changes: leave out --changes-from")
    ledger = Ledger(db)
    try:
        chosen = (
            ledger.records.collection_members(collection, k)
            if collection is not None
            else (frozenset(normalise_arxiv(p, "--paper") for p in papers) if papers else None)
        )
        query = Query(
            chosen, ledger.clock.now_us() if t is None else t, k, frozenset(kinds) or None, exact_only
        )
        writer = csv.writer(sys.stdout, lineterminator="\n")
        first = True
        while True:
            if start is None:
                answer = ledger.records.screen(query, page, limit)
            else:
                answer = ledger.records.screen_changes(query, start, page, limit)
            if bundle_to is not None:
                _bundle(ledger, answer, page_json(answer, collection), bundle_to)
                return
            if fmt == "json":
                body = page_json(answer, collection)
                body["checkpoint"] = screen_checkpoint(ledger, answer.head.seq)
                click.echo(canonical(body).decode())
                return
            if fmt == "csv":
                _csv(answer, writer, header=first)
            else:
                _table(answer, first)
            first = False
            page = answer.next_page
            if page is None:
                return
            if not all_pages:
                if fmt == "table":
                    click.echo(f"More: add --page {page}")
                else:
                    click.echo(f"note: more lines: add --page {page}", err=True)
                return
    finally:
        ledger.close()


def _bundle(ledger: Ledger, answer: Page, body: JsonObject, out: str) -> None:
    """Write one page's offline bundle to `out` (- for stdout) and say what it holds on stderr."""
    from cli.integrity import write_bundle
    from service.proofs.screen_bundle import bundle_of_page

    bundle = bundle_of_page(ledger, body)
    write_bundle(None if out == "-" else out, bundle.chunks())
    more = f"; more lines: add --page {body['next_page']}" if body["next_page"] else ""
    where = "" if out == "-" else f", written to {out}"
    click.echo(
        f"bundle: {len(answer.items)} line(s) of the screen as of {body['as_of']}, "
        f"{len(bundle.seqs)} events, checkpoint size {answer.head.seq}{where}{more}",
        err=True,
    )


def _csv(answer: Page, writer: Writer, header: bool) -> None:
    from service.screen import CSV_COLUMNS, item_row

    if header:
        writer.writerow(CSV_COLUMNS)
    for item in answer.items:
        writer.writerow(item_row(answer, item))


def _table(page: Page, first: bool) -> None:
    """Lines grouped by citing paper, in words."""
    from ledger.model.instants import format_as_of
    from service.screen import item_json, json_part

    q = page.query
    if first:
        known = "" if q.known_us is None else f", as known at {format_as_of(q.known_us)}"
        at = format_as_of(q.as_of_us)
        since = page.from_us
        click.echo(
            f"Screen as of {at}{known}"
            if since is None
            else f"Changes from {format_as_of(since)} to {at}{known}"
        )
        click.echo(f"Computed at tree size {page.head.seq}, head {page.head.hash}")
        if not page.items:
            click.echo("No flagged reference." if since is None else "Nothing changed.")
    citing = None
    for item in page.items:
        line = item_json(page, item)
        who, w, r, n = (json_part(line[k]) for k in ("citing", "work", "resolution", "notice"))
        if who["arxiv_id"] != citing:
            citing = who["arxiv_id"]
            click.echo("")
            click.echo(f"arXiv:{citing}  {who['title'] or '(no title)'}")
        change = f"{item.change} by #{', #'.join(map(str, item.events))}: " if "change" in line else ""
        named = w["doi"] or w["arxiv_id"] or w["work_id"]
        click.echo(f"  {change}reference {line['reference_index']}: {w['title'] or '(no title)'} [{named}]")
        date = n["notice_date"] or "an unknown date"
        click.echo(
            f"    {str(n['kind']).replace('_', ' ')} reported by {n['source']} on {date}, "
            f"notice {n['notice_doi'] or 'without DOI'}"
        )
        learned = f"learned {n['learned_at']} (#{n['learned_seq']})"
        click.echo(f"    checked {n['observed_at']} (#{n['check_seq']}); {learned}")
        by = r["resolver_source"] or "an unnamed resolver"
        click.echo(
            f"    resolved {str(r['status']).replace('_', ' ')} by {by} (#{r['seq']}): {r['evidence']}"
        )
