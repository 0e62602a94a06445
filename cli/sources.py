"""CLI commands for ingesting real sources and diffing records."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Callable
from contextlib import ExitStack
from typing import TYPE_CHECKING, Protocol

import click

from cli.common import (
    arxiv_arg,
    as_int,
    as_object,
    as_objects,
    caps_options,
    db_option,
    local_caps,
    read_db_option,
    required_instant,
)
from ledger.model.codec import canonical
from ledger.model.errors import LedgerError

if TYPE_CHECKING:
    from ledger.model.jsonvalue import Json, JsonInObject, JsonObject
    from service.intake.inflate import Inflation
    from service.sources.reader import Input, Progress

PROGRESS_BYTES = 4 * 1024 * 1024


class _Summary(Protocol):
    """What an ingest answers: its summary as JSON and as lines."""

    def to_dict(self) -> JsonInObject: ...
    def lines(self) -> list[str]: ...


# an ingest of one input, with a bar to move (None: no bar)
_Run = Callable[["Input", "Progress | None"], _Summary]
_SOURCES = ("retraction-watch", "crossref", "openalex", "semantic-scholar", "opencitations", "works")


def _ingest(
    source: str,
    file: str,
    observed_at: str,
    paper_id: str | None,
    as_json: bool,
    db: str,
    force: bool,
    caps: Inflation,
) -> None:
    from service.ledger import Ledger
    from service.sources import SourceFile, ingest

    ledger = Ledger(db)

    def run(data: Input, progress: Progress | None) -> _Summary:
        return ingest(ledger, SourceFile(source, data, observed_at, paper_id, caps), progress, force=force)

    _run(file, as_json, "reading", run)


def _ingest_works(file: str, observed_at: str, as_json: bool, db: str, caps: Inflation) -> None:
    from service.ledger import Ledger
    from service.sources import SourceFile
    from service.sources.work_limits import from_env
    from service.sources.works import NAME, ingest_works

    try:
        limits = from_env(os.environ)
    except ValueError as e:
        raise click.ClickException(str(e)) from None
    ledger = Ledger(db)
    # the bar follows the first of its two reads (the whole file checked)
    _run(
        file,
        as_json,
        "checking",
        lambda data, progress: ingest_works(
            ledger, SourceFile(NAME, data, observed_at, caps=caps), progress, limits=limits
        ),
    )


def _run(file: str, as_json: bool, reading: str, run: _Run) -> None:
    """Run an ingest of FILE (- for stdin), with a bar on stderr for a big file, and print its summary;
    exit 1 naming the refusal (nothing written)."""
    from service.sources import input_size

    with ExitStack() as stack:
        data: Input = sys.stdin.buffer if file == "-" else file
        if file != "-" and not stat.S_ISREG(os.stat(file).st_mode):
            # a pipe, a FIFO, <(...): read once, as a stream (a works file is copied aside for its
            # second pass), never opened again by its name
            data = stack.enter_context(open(file, "rb"))
        size = None if data is not file else input_size(file)
        _summarise(file, as_json, reading, run, data, size)


def _summarise(
    file: str,
    as_json: bool,
    reading: str,
    run: _Run,
    data: Input,
    size: int | None,
) -> None:
    try:
        if size is not None and size >= PROGRESS_BYTES:
            # by bytes read, on stderr: stdout stays the summary alone
            with click.progressbar(length=size, label=f"{reading} {file}", file=sys.stderr) as bar:
                summary = run(data, bar.update)
        else:
            summary = run(data, None)
    except LedgerError as e:
        click.echo(f"{file}: refused, nothing written: {e.message}", err=True)
        sys.exit(1)
    if as_json:
        click.echo(canonical(summary.to_dict()).decode())
    else:
        for line in summary.lines():
            click.echo(line)


def diff_lines(d: JsonObject) -> list[str]:
    """A record diff as human lines."""
    before = as_object(d["from"])["as_of"] if d["from"] else "(no record yet)"
    out = [f"arXiv:{d['arxiv_id']}: {before} -> {as_object(d['to'])['as_of']}"]
    for lane, counted in as_object(d["counts"]).items():
        c = as_object(counted)
        was, now, shown = as_int(c["from"]), as_int(c["to"]), as_int(c["shown_to"])
        if was != now or shown < now:
            out.append(f"  {lane} {was:,} -> {now:,} ({shown:,} shown)")
    if not d["changed"]:
        return [*out, "  no change"]
    for c in as_objects(as_object(d["paper"])["changes"]):
        out.append(f"  paper {c['path']}: {c['from']!r} -> {c['to']!r}")
    for s in as_objects(d["standing_sources"]):
        out.append(f"  source {s['source']} checked: {s['from']} -> {s['to']}{_seqs(s['events'])}")
    for o in as_objects(d["observations"]):
        work = as_object(o["cited_work"] or {}).get("title") or "(no title)"
        out.append(
            f"  {o['lane']} ref {o['reference_index']} [{o['observation_id']}] {o['change']}: {work}"
            f"{_seqs(o['events'])}"
        )
        for c in as_objects(o["changes"]):
            out.append("    " + _change_text(c))
    for m in as_objects(d["external_citation_measurements"]):
        a = as_object(m["from"])["value"] if m["from"] else None
        b = as_object(m["to"])["value"] if m["to"] else None
        out.append(f"  {m['source']} {m['metric']}: {a} -> {b} ({m['change']}){_seqs(m['events'])}")
    for cov in as_objects(d["coverage"]):
        for c in as_objects(cov["changes"]):
            out.append(f"  coverage {cov['lane']} {c['path']}: {c['from']!r} -> {c['to']!r}")
    return out


def _seqs(events: Json) -> str:
    if not events:
        return ""
    named = ", ".join("#{} {}".format(e["seq"], e["type"]) for e in as_objects(events))
    return f"  (events: {named})"


def _change_text(c: JsonObject) -> str:
    kind = str(c["kind"])
    if kind in ("notice_appeared", "notice_gone"):
        n = as_object(c["notice"])
        verb = "appeared" if kind == "notice_appeared" else "went away"
        return (
            f"{str(n['kind']).replace('_', ' ')} notice {verb}: reported by {n['source']} "
            f"on {n['notice_date'] or 'an unknown date'}, notice {n['notice_doi'] or 'without DOI'}"
        )
    if kind.startswith("receipt_"):
        return f"{c['source']} receipt {kind.removeprefix('receipt_')}: {c['from']} -> {c['to']}"
    if kind == "cited_work_rebound":
        a, b = as_object(c["from"] or {}).get("work_id"), as_object(c["to"] or {}).get("work_id")
        return f"cited work re-bound: {a} -> {b}"
    return f"{c['path']}: {c['from']!r} -> {c['to']!r}"


def register(main: click.Group) -> None:
    """Add this module's commands to the `ledger` group."""

    @main.command("ingest")
    @click.argument("source", type=click.Choice(_SOURCES))
    @click.argument("file", type=click.Path(exists=True, dir_okay=False, allow_dash=True))
    @click.option(
        "--observed-at",
        "observed_at",
        required=True,
        help="When the file was fetched from the source (RFC 3339 with offset, e.g. 2026-09-01T12:00:00Z).",
    )
    @click.option(
        "--id",
        "paper_id",
        help="opencitations only: the paper the count is about, e.g. doi:10.48550/arXiv.2310.04610.",
    )
    @click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON.")
    @click.option(
        "--force",
        is_flag=True,
        help="retraction-watch: accept a file with fewer than half the rows of the last one accepted "
        "(a file with an unreadable row, or none, is refused all the same).",
    )
    @caps_options
    @db_option
    def ingest_cmd(
        source: str,
        file: str,
        observed_at: str,
        paper_id: str | None,
        as_json: bool,
        force: bool,
        max_decompressed: int,
        max_expansion: float,
        db: str,
    ) -> None:
        """Bring a file as SOURCE publishes it into the ledger as one atomic batch.

        retraction-watch: the Crossref-distributed CSV; crossref: a REST /works answer;
        openalex, semantic-scholar: their work/paper JSON; opencitations: a citation-count answer;
        works: a Crossref or OpenAlex works file, each work a work.observed (the resolver's catalogue).
        """
        caps = local_caps(max_decompressed, max_expansion)
        if source == "works":
            if paper_id or force:
                click.echo("--id and --force are not for works", err=True)
                sys.exit(2)
            _ingest_works(file, observed_at, as_json, db, caps)
            return
        _ingest(source, file, observed_at, paper_id, as_json, db, force, caps)

    @main.command("diff")
    @click.argument("arxiv_id", callback=arxiv_arg)
    @click.argument("from_", metavar="FROM")
    @click.argument("to")
    @click.option("--text", "as_text", is_flag=True, help="Print a human summary instead of JSON.")
    @read_db_option
    def diff_cmd(arxiv_id: str, from_: str, to: str, as_text: bool, db: str) -> None:
        """What changed in the record of ARXIV_ID between FROM and TO (RFC 3339 or YYYY-MM-DD)."""
        from service.ledger import Ledger

        t1, t2 = required_instant(from_, "FROM"), required_instant(to, "TO")
        try:
            d, _head, _ = Ledger(db).records.changes(arxiv_id, t1, t2)
        except LedgerError as e:
            click.echo(f"error: {e.message}", err=True)
            sys.exit(1)
        if as_text:
            for line in diff_lines(d):
                click.echo(line)
        else:
            sys.stdout.buffer.write(canonical(d) + b"\n")
