"""What every `ledger` command shares: the --db option, instants from options, failing cleanly."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn, ParamSpec, TypeVar

import click

from ledger.model.errors import InvalidEvent, LedgerError
from ledger.model.ids import normalise_arxiv
from ledger.model.instants import SYSTEM_CLOCK, read_instant

if TYPE_CHECKING:
    from ledger.model.jsonvalue import Json, JsonObject
    from ledger.tlog.cosign import Quorum
    from service.intake.inflate import Inflation

P = ParamSpec("P")
R = TypeVar("R")

EXIT_CAUGHT = 2  # the ledger was caught: truncated, rewritten, badly signed or not cosigned
# a count or a seq that reaches SQL: SQLite INTEGER and PostgreSQL bigint hold no more
SQL_COUNT = click.IntRange(0, 2**63 - 1)

db_option = click.option(
    "--db",
    "db",
    envvar="LEDGER_DB",
    default="ledger.db",
    show_default="$LEDGER_DB or ./ledger.db",
    help="SQLite ledger file (created on first use) or a postgresql:// URL.",
)


# service.intake.inflate.LOCAL's caps (not imported here: the CLI starts without it); a test keeps
# them equal
LOCAL_MAX_DECOMPRESSED = 64 << 30
LOCAL_MAX_EXPANSION = 100.0


def caps_options(f: Callable[P, R]) -> Callable[P, R]:
    """--max-decompressed and --max-expansion: how far a gzip or zstd file named on the command line may
    decompress (a plain file is read as it is)."""
    f = click.option(
        "--max-expansion",
        "max_expansion",
        type=click.FloatRange(min=1.0),
        default=LOCAL_MAX_EXPANSION,
        envvar="LEDGER_IMPORT_MAX_EXPANSION",
        show_default=f"$LEDGER_IMPORT_MAX_EXPANSION or {LOCAL_MAX_EXPANSION:g}",
        help="Times its compressed size a .gz or .zst file may decompress to (past its first MiB).",
    )(f)
    return click.option(
        "--max-decompressed",
        "max_decompressed",
        type=click.IntRange(min=1),
        default=LOCAL_MAX_DECOMPRESSED,
        envvar="LEDGER_IMPORT_MAX_DECOMPRESSED",
        show_default=f"$LEDGER_IMPORT_MAX_DECOMPRESSED or {LOCAL_MAX_DECOMPRESSED} (64 GiB)",
        help="Bytes a .gz or .zst file (or a stream read from a pipe) may hold once decompressed.",
    )(f)


def local_caps(max_decompressed: int, max_expansion: float) -> Inflation:
    """The caps of --max-decompressed and --max-expansion (a service.intake.inflate.Inflation)."""
    from dataclasses import replace

    from service.intake.inflate import LOCAL

    return replace(LOCAL, max_bytes=max_decompressed, max_ratio=max_expansion)


def must_exist(db: str) -> None:
    """A ledger a command only reads must be there: opening a missing SQLite file would make an empty
    ledger, and the command would answer for it (`OK: 0 events verified`) as if it were the user's."""
    from service.ledger import is_pg_url

    if not is_pg_url(db) and not Path(db).exists():
        raise LedgerError(
            f"no ledger at {db}: run this in the folder where `ledger serve` or `ledger import` made "
            "one, or name it with --db or LEDGER_DB (nothing was created)"
        )


def read_db_option(f: Callable[P, R]) -> Callable[P, R]:
    """--db for a command that only reads: checked once every option is read, so a bad option is still
    named first, and before the command opens anything."""

    @functools.wraps(f)
    def checked(*args: P.args, **kwargs: P.kwargs) -> R:
        db = kwargs["db"]
        assert isinstance(db, str)  # the --db option below: click gives its text
        must_exist(db)
        return f(*args, **kwargs)

    return click.option(
        "--db",
        "db",
        envvar="LEDGER_DB",
        default="ledger.db",
        show_default="$LEDGER_DB or ./ledger.db",
        help="The ledger to read: a SQLite file or a postgresql:// URL.",
    )(checked)


def arxiv_arg(ctx: click.Context, param: click.Parameter, value: str) -> str:
    """An ARXIV_ID argument as the canonical id (a prefix, version, URL or DOI dropped, said on stderr);
    one that names no arXiv id fails as `error: ARXIV_ID: ...`, exit 1 (the group's LedgerError)."""
    canonical = normalise_arxiv(value, param.human_readable_name)
    if canonical != value:
        click.echo(f"note: {param.human_readable_name} {value!r} read as {canonical}", err=True)
    return canonical


def instant(value: str | None, name: str, *, future: bool = False) -> int | None:
    """An option's RFC 3339 instant or YYYY-MM-DD (end of day UTC) in microseconds; None stays None.
    Refused as the HTTP API refuses it (the same words, the forms accepted; one in the future unless
    `future`), naming the option."""
    if value is None:
        return None
    try:
        return read_instant(value, name, SYSTEM_CLOCK.now_us(), future=future)
    except InvalidEvent as e:
        raise click.BadParameter(e.reason, param_hint=name) from None


def required_instant(value: str, name: str) -> int:
    """Like `instant`, for an option that is always given."""
    us = instant(value, name)
    assert us is not None
    return us


def fail(err: LedgerError, code: int = 1) -> NoReturn:
    """Print the ledger's message on stderr and exit `code` (1: a refusal)."""
    click.echo(f"error: {err.message}", err=True)
    sys.exit(code)


def quorum_options(f: Callable[P, R]) -> Callable[P, R]:
    """--witness VKEY (repeatable) and --quorum K: the cosignatures a checkpoint must carry."""
    f = click.option(
        "--quorum",
        type=click.IntRange(1),
        default=None,
        help="How many of the --witness keys must have cosigned the checkpoint (default: all of them).",
    )(f)
    return click.option(
        "--witness",
        "witness_keys",
        multiple=True,
        help="A witness's public key (C2SP vkey, or a file holding it) whose cosignature the checkpoint "
        "must carry; repeatable.",
    )(f)


def quorum_of(witness_keys: Sequence[str], quorum: int | None) -> Quorum:
    """The Quorum of --witness and --quorum (click's BadParameter naming the option when wrong)."""
    from ledger.tlog.cosign import Quorum, parse_witness_vkey

    witnesses = []
    for value in witness_keys:
        text = value
        if not (value.count("+") >= 2 and "\n" not in value.strip()):
            try:
                text = Path(value).read_text()
            except OSError as e:
                why = f"neither a verifier key nor a readable file: {e}"
                raise click.BadParameter(why, param_hint="--witness") from None
        try:
            witnesses.append(parse_witness_vkey(text))
        except LedgerError as e:
            raise click.BadParameter(e.message, param_hint="--witness") from None
    if quorum is not None and quorum > len(witnesses):
        raise click.BadParameter(
            f"{quorum} cosignatures required of {len(witnesses)} --witness key(s) given",
            param_hint="--quorum",
        )
    return Quorum(tuple(witnesses), len(witnesses) if quorum is None else quorum)


def as_object(value: Json, what: str = "the answer") -> JsonObject:
    """A part of an answer's JSON that is an object by its schema (`what` names the answer)."""
    if not isinstance(value, dict):
        raise TypeError(f"{what} holds {type(value).__name__} where an object belongs")
    return value


def as_objects(value: Json, what: str = "the answer") -> list[JsonObject]:
    """A part of an answer's JSON that is a list of objects by its schema."""
    if not isinstance(value, list):
        raise TypeError(f"{what} holds {type(value).__name__} where a list belongs")
    return [as_object(v, what) for v in value]


def as_int(value: Json, what: str = "the answer") -> int:
    """A count or a seq of an answer's JSON."""
    if not isinstance(value, int):
        raise TypeError(f"{what} holds {type(value).__name__} where a number belongs")
    return value
