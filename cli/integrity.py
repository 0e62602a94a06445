"""CLI commands for verification, Merkle proofs, checkpoints, scrubbing and offline bundles."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple, ParamSpec, TextIO, TypeVar

import click

from cli.common import (
    EXIT_CAUGHT,
    arxiv_arg,
    as_object,
    as_objects,
    db_option,
    fail,
    instant,
    quorum_of,
    quorum_options,
    read_db_option,
)
from ledger.model.codec import canonical
from ledger.model.errors import InvalidEvent, LedgerError, NotFound
from ledger.tlog.cosign import Quorum

if TYPE_CHECKING:
    from click._termui_impl import ProgressBar

    from ledger.model.jsonvalue import Json, JsonIn, JsonObject
    from ledger.tlog.checkpoint import Checkpointer, SignedCheckpoint
    from service.ledger import Ledger

P = ParamSpec("P")
R = TypeVar("R")

# Above this many events to walk, `ledger verify` shows a progress bar instead of counting lines.
BAR_THRESHOLD = 100_000
_BAR_STEP = 1000


class _Held(NamedTuple):
    """A checkpoint `ledger verify` is asked to hold the ledger to: the note, --key and the quorum."""

    note: str
    key_arg: str | None  # None: the ledger's own key file
    quorum: Quorum


def _origin(f: Callable[P, R]) -> Callable[P, R]:
    return click.option(
        "--origin",
        envvar="LEDGER_ORIGIN",
        default=None,
        help="Checkpoint origin and key name, used when the key is created "
        "(default: $LEDGER_ORIGIN, else citation-ledger/<hostname>).",
    )(f)


def _checkpointer(db: str, origin: str | None) -> tuple[Ledger, Checkpointer]:
    from service.ledger import Ledger

    ledger = Ledger(db)
    return ledger, ledger.log.checkpointer(origin)


def _checkpointer_command(
    main: click.Group, name: str, doc: str, text: Callable[[Checkpointer], str], nl: bool = True
) -> None:
    """Add `ledger NAME`, which prints text(the ledger's Checkpointer)."""

    @main.command(name, help=doc)
    @_origin
    @db_option
    def command(origin: str | None, db: str) -> None:
        try:
            _, cp = _checkpointer(db, origin)
            click.echo(text(cp), nl=nl)
        except LedgerError as e:
            fail(e)


def _json(value: JsonIn) -> None:
    click.echo(canonical(value).decode())


def register(main: click.Group) -> None:
    """Add this module's commands to the `ledger` group."""

    _checkpointer_command(
        main,
        "key",
        "Print the ledger's public key (C2SP vkey); the key pair is created on first use.",
        lambda cp: cp.verifier().vkey,
    )
    _checkpointer_command(
        main,
        "checkpoint",
        "Print a signed checkpoint of the head (a new one only if the head moved).",
        lambda cp: cp.latest().note,
        nl=False,  # a signed note ends with its own newline
    )

    @main.command()
    @click.argument("seq", type=int)
    @click.option("--tree-size", type=int, default=None, help="Tree size (default: the head).")
    @read_db_option
    def proof(seq: int, tree_size: int | None, db: str) -> None:
        """Print the inclusion proof of event SEQ as JSON (hashes in base64)."""
        from service.ledger import Ledger

        try:
            _json(Ledger(db).log.inclusion(seq, tree_size).to_json())
        except LedgerError as e:
            fail(e)

    @main.command()
    @click.argument("old_size", type=int)
    @click.argument("new_size", type=int, required=False)
    @read_db_option
    def consistency(old_size: int, new_size: int | None, db: str) -> None:
        """Print the consistency proof from tree size OLD_SIZE to NEW_SIZE (default: the head)."""
        from ledger.tlog import merkle_store
        from service.ledger import Ledger

        log = Ledger(db).log
        new = log.head().seq if new_size is None else new_size
        if new_size is None and old_size > new:
            fail(
                NotFound(
                    f"the ledger holds {new} events, fewer than the {old_size} asked for: if you hold a "
                    f"checkpoint of {old_size} events from it, it was truncated (ledger verify --checkpoint "
                    "NOTE says so, with the roots)"
                )
            )
        try:
            proof = log.consistency(old_size, new)
            _json(
                {
                    "from": old_size,
                    "to": new,
                    "old_root_hash": merkle_store.b64(proof.old_root),
                    "new_root_hash": merkle_store.b64(proof.new_root),
                    "consistency_path": [merkle_store.b64(h) for h in proof.path],
                }
            )
        except LedgerError as e:
            fail(e)

    @main.command()
    @click.argument("arxiv_id", callback=arxiv_arg)
    @click.option("--as-of", "as_of", help="RFC 3339 instant or YYYY-MM-DD (end of day UTC); default now.")
    @click.option("--known-at", "known_at", help="Only events recorded at or before this instant.")
    @click.option("--out", "out", type=click.Path(dir_okay=False), help="Write here (default: stdout).")
    @_origin
    @read_db_option
    def bundle(
        arxiv_id: str, as_of: str | None, known_at: str | None, out: str | None, origin: str | None, db: str
    ) -> None:
        """Write an offline evidence bundle: the record, its events, their proofs, a signed checkpoint."""
        from service.proofs.bundle import open_bundle

        t, k = instant(as_of, "--as-of"), instant(known_at, "--known-at")
        try:
            ledger, cp = _checkpointer(db, origin)
            bundle = open_bundle(ledger, arxiv_id, t, k, cp)
            write_bundle(out, bundle.chunks())
        except LedgerError as e:
            fail(e)
        click.echo(
            f"bundle: arXiv:{arxiv_id} as of {bundle.record.as_of}, {len(bundle.seqs)} events, "
            f"checkpoint size {bundle.tree_size}" + (f", written to {out}" if out else ""),
            err=True,
        )

    @main.command("check-bundle")
    @click.argument("file", type=click.Path(exists=True, dir_okay=False))
    @click.option(
        "--key", "key_arg", required=True, help="The pinned public key (vkey) or a file holding it."
    )
    @quorum_options
    def check_bundle(file: str, key_arg: str, witness_keys: tuple[str, ...], quorum: int | None) -> None:
        """Check an evidence bundle (a record's or a screen's) offline, with no database and no server,
        against a pinned key."""
        from ledger.tlog.checkpoint import read_vkey_arg
        from service.proofs.checker import check_bundle_file

        try:
            verifier = read_vkey_arg(key_arg)
        except LedgerError as e:
            raise click.BadParameter(e.message, param_hint="--key") from None
        report = check_bundle_file(file, verifier, quorum_of(witness_keys, quorum))
        for note in report.notes:
            click.echo(f"note: {note}")
        if report.ok:
            click.echo(report.summary)
            return
        click.echo(f"FAILED: {len(report.problems)} problem(s) in {file}")
        for problem in report.problems:
            click.echo(f"  {problem}")
        sys.exit(1)

    @main.command()
    @click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
    @click.option(
        "--resume",
        is_flag=True,
        help="Continue from the last fully verified seq (if it still has the hash it had) instead of seq 1.",
    )
    @click.option(
        "--checkpoint",
        "held",
        type=click.File("r", encoding="utf-8"),
        default=None,
        help="A signed checkpoint you hold (from GET /checkpoint, `ledger checkpoint` or a bundle; - for "
        "stdin): the ledger must extend it (exit 2 and 'truncated' or 'rewritten' otherwise; exit 2 and "
        "'not cosigned' when it lacks --quorum of the --witness cosignatures).",
    )
    @click.option(
        "--key",
        "key_arg",
        default=None,
        help="The pinned public key (vkey, or a file) the held checkpoint is signed with; default: the "
        "ledger's own key file.",
    )
    @read_db_option
    @quorum_options
    def verify(
        as_json: bool,
        resume: bool,
        held: TextIO | None,
        key_arg: str | None,
        witness_keys: tuple[str, ...],
        quorum: int | None,
        db: str,
    ) -> None:
        """Recompute the whole hash chain and Merkle tree; exit non-zero naming the first bad seq.
        With --checkpoint, also hold the ledger to a checkpoint you kept."""
        if witness_keys and held is None:
            raise click.BadParameter("witnesses cosign a held checkpoint: give it with --checkpoint")
        given = None if held is None else _Held(_note_text(held), key_arg, quorum_of(witness_keys, quorum))
        _verify(db, as_json, resume, given)

    @main.command()
    @click.option("--json", "as_json", is_flag=True, help="Print the pass as JSON.")
    @click.option(
        "--pace",
        type=click.FloatRange(0, 1, min_open=True),
        default=1.0,
        show_default=True,
        help="Share of the time spent walking (it pauses the rest), to spare a busy database.",
    )
    @read_db_option
    def scrub(as_json: bool, pace: float, db: str) -> None:
        """Walk the whole chain again from seq 1 now, a batch per short read, and record the pass (as the
        server does every LEDGER_SCRUB_INTERVAL); exit 2 naming the first broken seq."""
        _scrub(db, as_json, pace)


def _note_text(held: TextIO) -> str:
    """A held checkpoint file's text; exit 1 naming --checkpoint when it is not UTF-8."""
    try:
        text = held.read()
    except UnicodeDecodeError as e:
        fail(InvalidEvent("--checkpoint", f"the file is not UTF-8 ({e.reason} at byte {e.start})"))
    return text


def write_bundle(out: str | None, chunks: Iterable[bytes]) -> None:
    """Write a bundle's chunks to stdout (out None) or whole to the file `out` (see _write_whole)."""
    if out is None:
        sys.stdout.buffer.writelines(chunks)
    else:
        _write_whole(Path(out), chunks)


def _write_whole(path: Path, chunks: Iterable[bytes]) -> None:
    """Write the chunks to `path` through a temporary file beside it: a bundle that fails half-way leaves
    no partial file under the name asked for."""
    part = path.with_name(path.name + ".part")
    try:
        with part.open("wb") as f:
            f.writelines(chunks)
        os.replace(part, path)
    finally:
        part.unlink(missing_ok=True)


def _progress(total: int) -> tuple[Callable[[int], None], int, ProgressBar[int] | None]:
    """A progress callback on stderr (a bar above BAR_THRESHOLD events), its step, and the bar to close."""
    if total > BAR_THRESHOLD:
        bar = click.progressbar(length=total, label="walking", file=sys.stderr)
        bar.__enter__()
        return (lambda _: bar.update(_BAR_STEP)), _BAR_STEP, bar

    def progress(n: int) -> None:
        click.echo(f"  ... {n} events checked", err=True)

    return progress, 10000, None


def _walked(span: Json) -> str:
    if span is None:
        return "no event"
    seqs = as_object(span, "the walk")
    return f"seqs {seqs['from']}..{seqs['to']}"


def _last_walk(p: JsonObject) -> str:
    result = "ok" if p["ok"] else f"BROKEN at seq {p['first_bad_seq']}"
    return f"{p['by']} from {p['started_at']} to {p['finished_at']}, {_walked(p['walked'])}, {result}"


def _verify(db: str, as_json: bool, resume: bool, given: _Held | None) -> None:
    from service.ledger import Ledger
    from service.ops.scrub import VERIFY, pass_of

    ledger = Ledger(db)
    held = None if given is None else _open_held(ledger, given)
    passes = ledger.ops.passes()
    point = ledger.log.verified_point() if resume else None
    progress, every, bar = _progress(ledger.head().seq - (point.seq if point is not None else 0))
    try:
        if resume:
            # the prefix it does not re-hash is vouched for by the last recorded full walk, named below
            status = ledger.ops.chain_status(passes, kind=VERIFY, progress=progress, every=every)
        else:
            started = ledger.clock.now_us()
            report = ledger.log.verify(progress, remember=True, every=every)
            done = pass_of(VERIFY, report, started, ledger.clock.now_us())
            passes.record(done)
            status = {**report.to_dict(), "last_full_walk": done.to_dict()}
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)
    # each projection was checked against the events up to its position (--json names them)
    status["projections"] = ledger.ops.projection_positions()
    verdict = None
    if held is not None:
        try:
            verdict = ledger.log.hold_against(held)
        except LedgerError as e:  # a chain too broken to give a root at that size
            status["note"] = f"the held checkpoint could not be checked: {e.message}"
        else:
            status["held_checkpoint"] = verdict.to_dict()
            status["note"] = verdict.message()
    if as_json:
        click.echo(canonical(status).decode())
    elif status["ok"]:
        after = ""
        if status["resumed_from"]:
            after = f" after seq {status['resumed_from']} ({_walked(status['walked'])} re-hashed now)"
        head = status["head"]
        n = status["events_checked"]
        click.echo(f"OK: {n} events verified{after}; head seq {head['seq']} hash {head['hash']}")
        click.echo(_steps(status))
        trusted = status["trusted"]
        if trusted is not None:
            click.echo(
                f"Trusted, not re-hashed now: seqs 1..{trusted['to']} (seq {trusted['to']} still has the "
                f"hash it had when a walk reached it at {trusted['point_saved_at']}); "
                f"last full walk from seq 1: {_last_walk(status['last_full_walk'])}"
            )
        click.echo(("Held checkpoint: " if held is not None else "Note: ") + status["note"])
    elif status["resumed_from"]:
        click.echo(
            f"BROKEN at seq {status['first_bad_seq']}: {status['reason']} (this run re-hashed "
            f"{_walked(status['walked'])} after seq {status['resumed_from']})"
        )
    else:
        click.echo(
            f"BROKEN at seq {status['first_bad_seq']}: {status['reason']} "
            f"({status['events_checked']} events verified before it)"
        )
        click.echo(_steps(status))
        if held is not None:
            click.echo("Held checkpoint: " + status["note"])
    sys.exit(0 if status["ok"] and (held is None or (verdict is not None and verdict.ok)) else EXIT_CAUGHT)


_STEP_NAMES = {"chain": "chain", "derived": "derived rows"}


def _steps(status: JsonObject) -> str:
    """The walk's steps in one line: each OK or BROKEN, with its time."""
    parts = [
        f"{_STEP_NAMES.get(str(s['name']), s['name'])} {'OK' if s['ok'] else 'BROKEN'} ({s['seconds']:.2f} s)"
        for s in as_objects(status.get("steps", []), "the walk")
    ]
    return "Steps: " + ("; ".join(parts) or "none")


def _open_held(ledger: Ledger, given: _Held) -> SignedCheckpoint:
    """The held checkpoint, its signature verified with --key or the ledger's key file (exit 1 if not)."""
    from ledger.tlog.checkpoint import NoteError, open_checkpoint, read_vkey_arg

    if given.key_arg is not None:
        verifier = read_vkey_arg(given.key_arg)  # InvalidEvent naming --key: exit 1
    else:
        checkpointer = ledger.log.checkpointer()
        existing = checkpointer.existing_verifier()
        if existing is None:
            fail(
                InvalidEvent(
                    "--key",
                    f"no key file at {checkpointer.key_path} to check the held checkpoint's signature "
                    "with: pass the key you pinned with --key",
                )
            )
        verifier = existing
    try:
        held = open_checkpoint(given.note, verifier)
    except NoteError as e:
        fail(
            NoteError(f"--checkpoint: the held checkpoint does not verify with {verifier.vkey}: {e.message}")
        )
    try:
        given.quorum.check(given.note)
    except NoteError as e:
        # caught, as monitor's "not cosigned": possibly a view shown to this user alone
        fail(NoteError(f"--checkpoint: not cosigned: {e.message}"), EXIT_CAUGHT)
    return held


def _scrub(db: str, as_json: bool, pace: float) -> None:
    from service.ledger import Ledger

    ledger = Ledger(db)
    passes = ledger.ops.passes()
    progress, every, bar = _progress(ledger.head().seq)
    try:
        done = ledger.ops.scrub(passes, pace=pace, progress=progress, every=every)
    finally:
        if bar is not None:
            bar.__exit__(None, None, None)
    assert done is not None  # nothing stops a CLI pass but Ctrl-C
    recorded = not passes.in_memory(done)
    where = "recorded in the database" if recorded else "NOT recorded: the database cannot be written"
    if as_json:
        click.echo(canonical({**done.to_dict(), "recorded": recorded}).decode())
    elif done.ok:
        click.echo(
            f"OK: scrub walked seqs 1..{done.events} ({done.events} events) from {done.started_at} "
            f"to {done.finished_at}; head seq {done.head_seq}; {where}"
        )
    else:
        click.echo(
            f"BROKEN at seq {done.first_bad_seq}: {done.reason} (scrub walked {done.events} good events "
            f"before it, from {done.started_at} to {done.finished_at}; head seq {done.head_seq}); {where}"
        )
    sys.exit(0 if done.ok else 2)
