"""The `ledger` command line."""

from __future__ import annotations

import getpass
import os
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NoReturn

import click
import msgspec

from cli import (
    alerts,
    backends,
    collections,
    integrity,
    monitor,
    ops,
    resolve,
    screen,
    search,
    sources,
    timeline,
    witness,
)
from cli.common import (
    SQL_COUNT,
    arxiv_arg,
    caps_options,
    db_option,
    fail,
    instant,
    local_caps,
    read_db_option,
)
from ledger.model.codec import envelope_json
from ledger.model.errors import LedgerError


def _ledger(db: str):  # type: ignore[no-untyped-def]
    from service.ledger import Ledger

    return Ledger(db)


def _stdout_closed(code: int | str | None) -> NoReturn:
    """End the program with `code`: the reader of stdout has read all it wanted."""
    # What is still buffered goes nowhere, so the flush at exit cannot fail again (the Python docs'
    # recipe for SIGPIPE; click's own handler would exit 1).
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    sys.exit(code)


def _flush(code: int | str | None = 0) -> None:
    """Write out what stdout still holds; a reader that closed it ends the program with `code`."""
    try:
        # the last lines reach the pipe here, not at interpreter exit, where a failure is only reported
        sys.stdout.flush()
    except BrokenPipeError:
        _stdout_closed(code)


# commands that serve requests: each request's appends are recorded as its token's, never the CLI user's
_SERVING = ("serve", "witness")


def cli_user() -> str:
    """The operating-system user running this command (its uid when the system names none)."""
    try:
        return getpass.getuser()
    except (OSError, KeyError):
        return f"uid {os.getuid()}"


@contextmanager
def _writing(command: str) -> Iterator[None]:
    """The appends of `ledger COMMAND` recorded as `cli:<user>` (ledger/storage/writers.py), and
    projected before it ends."""
    if command in _SERVING or not command:
        yield
        return
    from service.ledger import by_cli, forget_appended, project_appended, writing_as

    # another ledger this process appended to (a dropped test database, say) is not this command's
    forget_appended()
    with writing_as(by_cli(cli_user(), f"ledger {command}")):
        try:
            yield
        finally:
            # what the command appended is projected before it exits: no projector need be running
            project_appended()


class _Group(click.Group):
    """A LedgerError of any command (a refused input, a missing driver) is one line on stderr; a stdout
    closed by its reader (`ledger events | head -1`) ends the command quietly, exit 0. The appends of a
    command are recorded as the CLI user's."""

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        """The command to run; its appends are the CLI user's until the command's context ends."""
        name, command, rest = super().resolve_command(ctx, args)
        ctx.with_resource(_writing(name or ""))
        return name, command, rest

    def invoke(self, ctx: click.Context) -> object:
        """Run the command; a LedgerError leaves as `error: ...` and exit 1, a closed stdout as exit 0
        (or the status the command chose)."""
        try:
            result = super().invoke(ctx)
        except LedgerError as e:
            _flush(1)
            fail(e)
        except SystemExit as e:
            _flush(e.code)
            raise
        except click.exceptions.Exit as e:
            _flush(e.exit_code)
            raise
        except BrokenPipeError:
            _stdout_closed(0)
        _flush()
        return result


@click.group(cls=_Group)
@click.version_option(package_name="citation-ledger")
def main() -> None:
    """citation-ledger: a hash-chained ledger of citation observations and point-in-time records."""


@main.command("import")
@click.argument("files", nargs=-1, required=True, type=click.Path(exists=True, dir_okay=False))
@click.option("--force", is_flag=True, help="Import a record even if its digests do not match.")
@click.option(
    "--keep-resolver-events",
    is_flag=True,
    help="Take resolutions that name the ledger's own resolver (citation-ledger/...) or a person "
    "(person:...), refused otherwise: for moving a ledger whose resolver made them.",
)
@click.option(
    "--batch-size",
    type=click.IntRange(1, 10_000_000),
    default=5_000,  # service.intake.load.BATCH (not imported here: the CLI starts without it)
    envvar="LEDGER_IMPORT_BATCH",
    show_default="$LEDGER_IMPORT_BATCH or 5000",
    help="Events per transaction of an NDJSON file.",
)
@click.option(
    "--restart",
    is_flag=True,
    help="Import a file from its first line although an earlier, stopped import of a file of the same "
    "size and first MiB committed other bytes (without it, such a file is refused).",
)
@caps_options
@db_option
def import_(
    files: tuple[str, ...],
    force: bool,
    keep_resolver_events: bool,
    batch_size: int,
    restart: bool,
    max_decompressed: int,
    max_expansion: float,
    db: str,
) -> None:
    """Import record JSON or NDJSON envelopes (.gz and .zst read as streams; a pipe, FIFO or
    /dev/stdin is copied to a scratch file first).

    A file is checked whole before anything of it is written; an NDJSON file is then appended a batch
    at a time, and the same command after a stop resumes after its last committed batch."""
    from cli.progress import Meter
    from service.intake.load import Stopped, import_file

    caps = local_caps(max_decompressed, max_expansion)
    ledger = _ledger(db)
    total_new = total_dup = failed = broken = 0
    for name in files:
        meter = Meter(sys.stderr, name) if sys.stderr.isatty() else None
        began = time.monotonic()
        try:
            got = import_file(
                ledger,
                name,
                batch_size=batch_size,
                force=force,
                progress=None if meter is None else meter.update,
                caps=caps,
                restart=restart,
                keep_resolver_events=keep_resolver_events,
            )
        except Stopped as e:
            click.echo(f"{name}: {e.message}", err=True)
            failed += 1
            continue
        except LedgerError as e:
            click.echo(f"{name}: refused, nothing written: {e.message}", err=True)
            failed += 1
            continue
        finally:
            if meter is not None:
                meter.close()
        took = time.monotonic() - began
        total_new += got.appended
        total_dup += got.duplicates
        # a file of one batch reads as before; a long one says its pace, a resumed one where it began
        more = ""
        if got.batches > 1:
            rate = got.lines / took if took else 0
            more += f"; {got.lines:,} lines in {took:.1f} s ({rate:,.0f} lines/s, {got.batches:,} batches)"
        if got.resumed_at_line:
            more += f"; resumed after line {got.resumed_at_line:,}"
        walked = ""
        if got.walk is not None and not got.walk.ok:
            walked = f"; the chain does not verify at seq {got.walk.first_bad_seq:,}: {got.walk.reason}"
        counts = f"{got.appended:,} appended, {got.duplicates:,} duplicate (head seq {got.head.seq:,})"
        click.echo(f"{name}: {counts}{more}{walked}")
        broken += bool(walked)
    click.echo(
        f"{total_new:,} appended, {total_dup:,} duplicate, {failed:,} file(s) refused; "
        f"head seq {ledger.head().seq:,}"
    )
    sys.exit(1 if failed or broken else 0)


@main.command()
@click.option(
    "--sources",
    "sources_dir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Instead, write the sample source files (Retraction Watch, Crossref, OpenAlex, ...) into DIR.",
)
def sample(sources_dir: Path | None) -> None:
    """Print the sample record the package ships (arXiv:2509.02480), to import, read or edit."""
    from importlib.resources import files

    shipped = files("ledger").joinpath("samples")
    if sources_dir is None:
        # bytes as shipped: `ledger record` of the imported sample gives back exactly these
        sys.stdout.buffer.write(shipped.joinpath(SAMPLE_NAME).read_bytes())
        return
    found = sorted((f for f in shipped.joinpath("sources").iterdir() if f.is_file()), key=lambda f: f.name)
    taken = [
        f.name
        for f in found
        if (sources_dir / f.name).exists() and (sources_dir / f.name).read_bytes() != f.read_bytes()
    ]
    if taken:
        # a file of the user's is never overwritten
        fail(
            LedgerError(
                f"{sources_dir}: {', '.join(taken)} already there and different; "
                "remove them or name another folder"
            )
        )
    try:
        sources_dir.mkdir(parents=True, exist_ok=True)
        for f in found:
            (sources_dir / f.name).write_bytes(f.read_bytes())
    except OSError as e:
        fail(LedgerError(f"{sources_dir}: cannot write the sample source files there: {e.strerror}"))
    click.echo(f"{len(found)} sample source files in {sources_dir}/: " + ", ".join(f.name for f in found))


SAMPLE_NAME = "2509.02480.record.json"


@main.command()
@click.argument("arxiv_id", callback=arxiv_arg)
@click.option("--as-of", "as_of", help="RFC 3339 instant or YYYY-MM-DD (end of day UTC); default now.")
@click.option("--known-at", "known_at", help="Only events recorded at or before this instant.")
@read_db_option
def record(arxiv_id: str, as_of: str | None, known_at: str | None, db: str) -> None:
    """Print the record of ARXIV_ID as of T as canonical JSON."""
    t, k = instant(as_of, "--as-of"), instant(known_at, "--known-at")
    try:
        body, _head = _ledger(db).record_bytes(arxiv_id, t, k)
    except LedgerError as e:
        fail(e)
    # exactly the canonical bytes when piped (so `cmp` against a served record works)
    sys.stdout.buffer.write(body + (b"\n" if sys.stdout.isatty() else b""))


@main.command()
@click.option("--after", type=SQL_COUNT, default=0, show_default=True, help="Only events with seq > N.")
@click.option("--limit", type=SQL_COUNT, default=None, help="At most L events.")
@click.option("--stream", default=None, help="Only this stream, e.g. paper:2509.02480.")
@click.option("--type", "type_", default=None, help="Only this event type.")
@read_db_option
def events(after: int, limit: int | None, stream: str | None, type_: str | None, db: str) -> None:
    """Print stored envelopes as NDJSON."""
    out = sys.stdout.buffer
    enc = msgspec.json.Encoder(order="sorted")
    for e in _ledger(db).log.read_log(after, limit, stream, type_):
        out.write(enc.encode(envelope_json(e)) + b"\n")


for commands in (
    integrity,
    sources,
    backends,
    ops,
    monitor,
    witness,
    alerts,
    search,
    timeline,
    resolve,
    collections,
    screen,
):
    commands.register(main)
