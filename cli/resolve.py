"""`ledger resolve`: resolve references against the catalogue, watch for new works, or record a
person's resolution (resolver-v1.md)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

import click

from cli.common import db_option, fail
from ledger.model.errors import InvalidEvent, LedgerError, NotFound
from ledger.model.ids import normalise_arxiv
from service.ledger import Ledger

# The resolver (rapidfuzz, ICU) loads inside the command that runs it, not at every `ledger` start.
if TYPE_CHECKING:
    from service.resolver.defaults import Resolver
    from service.resolver.person import PersonChoice
    from service.resolver.run import Summary

WATCH_EVERY_S = 5.0  # how often the watch looks for new works
# the flag that gives each field a person's resolution checks: its refusals name the flag typed
FLAGS = {"by": "--by", "doi": "--doi", "arxiv_id": "--arxiv", "none": "--none",
         "observation_id": "--observation"}  # fmt: skip


def as_flag(err: LedgerError) -> LedgerError:
    """A refusal naming one of the API's fields, reworded to name the CLI's flag for it."""
    if isinstance(err, InvalidEvent) and err.where in FLAGS:
        return InvalidEvent(FLAGS[err.where], err.reason)
    if isinstance(err, NotFound) and isinstance(err.details, dict) and "observation_id" in err.details:
        return NotFound(f"--observation: {err.message}", details=err.details)
    return err


def person_choice(by: str | None, doi: str | None, arxiv: str | None, clear: bool) -> PersonChoice:
    """A person's choice from the flags, refusals naming the flags."""
    from service.resolver.person import choice

    if by is None:
        raise InvalidEvent("--by", "a person's resolution needs --by NAME (the person's name)")
    if sum((doi is not None, arxiv is not None, clear)) != 1:
        raise InvalidEvent("--doi/--arxiv/--none", "give exactly one (--none: the reference names no work)")
    try:
        return choice(by, doi, arxiv, clear)
    except LedgerError as e:
        raise as_flag(e) from None


def summary_lines(s: Summary) -> list[str]:
    """A run's summary as the CLI prints it: counts, then each change (a dry run: what would change)."""
    verb = "would change" if s.dry_run else "changed"
    per = ", ".join(f"{status} {n}" for status, n in s.changed().items()) or "none"
    lines = [f"examined {s.examined}, {verb} {len(s.changes)} ({per}), unchanged {s.unchanged}"]
    for c in s.changes:
        work = c.event.data.cited_work
        named = "" if work is None else f" -> {work.doi or 'arXiv:' + str(work.arxiv_id)}"
        lines.append(f"  {c.citing_arxiv_id} [{c.reference_index}] {c.observation_id}: "
                     f"{c.before or 'no resolution'} -> {c.after}{named}")  # fmt: skip
    return lines


def _resolver(ctx: click.Context) -> Resolver:
    """The resolver the caller passed in (`obj={"resolver": ...}`), else the ledger's own."""
    from service.resolver.defaults import default_resolver

    given = (ctx.obj or {}).get("resolver") if isinstance(ctx.obj, dict) else None
    return given if given is not None else default_resolver()


def _ledger(ctx: click.Context, db: str) -> Ledger:
    given = (ctx.obj or {}).get("ledger") if isinstance(ctx.obj, dict) else None
    return given if given is not None else Ledger(db)


def register(main: click.Group) -> None:
    """Add `ledger resolve` to the `ledger` group."""

    @main.command("resolve")
    @click.option("--paper", "papers", multiple=True, help="Resolve this paper's references (repeatable).")
    @click.option("--all", "all_", is_flag=True, help="Resolve every paper's references.")
    @click.option("--dry-run", is_flag=True, help="Append nothing; print what would change.")
    @click.option(
        "--watch", is_flag=True, help="With --all: resolve again after each works ingest (Ctrl-C stops)."
    )
    @click.option("--observation", help="A person's resolution of this observation (with --by).")
    @click.option("--doi", help="With --observation: the DOI the reference names.")
    @click.option("--arxiv", help="With --observation: the arXiv id the reference names.")
    @click.option("--none", "clear", is_flag=True, help="With --observation: the reference names no work.")
    @click.option("--by", "by", help="With --observation: the person's name (resolver_source person:NAME).")
    @click.option(
        "--explain",
        metavar="OBSERVATION_ID",
        help="Say in words how this observation was resolved: the reference, the fields, score, method.",
    )
    @db_option
    @click.pass_context
    def resolve_cmd(
        ctx: click.Context,
        papers: tuple[str, ...],
        all_: bool,
        dry_run: bool,
        watch: bool,
        observation: str | None,
        doi: str | None,
        arxiv: str | None,
        clear: bool,
        by: str | None,
        explain: str | None,
        db: str,
    ) -> None:
        """Resolve the references still unresolved against the catalogue of works, appending one
        resolution per changed answer; or, with --observation, record a person's resolution; or, with
        --explain, say how one observation was resolved."""
        from service.resolver import jobs
        from service.resolver.defaults import catalogue_for
        from service.resolver.explain import explain_lines, explanation, paper_of
        from service.resolver.match import max_text
        from service.resolver.parse import SettingError
        from service.resolver.person import resolve_by_person
        from service.resolver.pool import resolve_on_cores
        from service.resolver.run import unknown_papers
        from service.resolver.shown import resolution_view

        if explain is not None:
            others = papers or all_ or watch or dry_run or observation is not None
            if others or any(v is not None for v in (doi, arxiv, by)) or clear:
                fail(InvalidEvent("--explain", "takes an observation id and no other option"))
            ledger = _ledger(ctx, db)
            try:
                view = resolution_view(ledger, paper_of(ledger, explain), explain)
            except NotFound as unknown:
                fail(NotFound(f"--explain: {unknown.message}"))
            for line in explain_lines(view, explanation(ledger, view)):
                click.echo(line)
            return
        if observation is not None:
            if papers or all_ or watch or dry_run:
                fail(InvalidEvent("--observation", "a person's resolution takes --by and one of --doi, "
                                  "--arxiv, --none only"))  # fmt: skip
            try:
                asked = person_choice(by, doi, arxiv, clear)
                ledger = _ledger(ctx, db)
                given = (ctx.obj or {}).get("resolver") if isinstance(ctx.obj, dict) else None
                result = resolve_by_person(ledger, observation, asked, catalogue_for(given, ledger))
            except LedgerError as refused:
                fail(as_flag(refused))
            e = ledger.records.envelopes([result.items[0].seq])[0] if result.appended else None
            where = "already recorded" if e is None else f"seq {e.seq}"
            click.echo(f"resolved {observation} by person:{asked.by} ({where})")
            return
        if any(v is not None for v in (doi, arxiv, by)) or clear:
            fail(InvalidEvent("--observation", "--doi, --arxiv, --none and --by need --observation"))
        if all_ == bool(papers):
            fail(InvalidEvent("--paper", "give --paper ID (repeatable) or --all"))
        if watch and (not all_ or dry_run):
            fail(InvalidEvent("--watch", "--watch goes with --all and without --dry-run"))
        ids = None if all_ else [normalise_arxiv(p, "--paper") for p in papers]
        ledger = _ledger(ctx, db)
        missing = unknown_papers(ledger, ids or [])
        if missing:
            fail(InvalidEvent("--paper", f"no paper {missing[0]!r} in this ledger"))
        resolver = _resolver(ctx)
        try:
            max_text()  # a bad setting is said once, before any reference is read
        except SettingError as e:
            raise click.ClickException(str(e)) from None

        def once() -> Summary:
            return resolve_on_cores(ledger, ids, resolver, dry_run=dry_run)

        def report(s: Summary) -> None:
            for line in summary_lines(s):
                click.echo(line)

        if not watch:
            report(once())
            return
        stop = threading.Event()
        every: Callable[[], bool] | None = (
            (ctx.obj or {}).get("watch_wait") if isinstance(ctx.obj, dict) else None
        )
        try:
            jobs.watch(ledger, once, report, every or (lambda: stop.wait(WATCH_EVERY_S)))
        except KeyboardInterrupt:
            click.echo("stopped", err=True)
        except LedgerError as e:
            fail(e)
