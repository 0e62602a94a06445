"""CLI commands for Merkle proofs, checkpoints and offline bundles (issue: verifiable integrity)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from .cli_common import db_option, fail, instant
from .codec import canonical
from .errors import LedgerError

# Above this many events to walk, `ledger verify` shows a progress bar instead of counting lines.
BAR_THRESHOLD = 100_000
_BAR_STEP = 1000


def _origin(f: Callable[..., Any]) -> Callable[..., Any]:
    return click.option(
        "--origin",
        envvar="LEDGER_ORIGIN",
        default=None,
        help="Checkpoint origin and key name, used when the key is created "
        "(default: $LEDGER_ORIGIN, else citation-ledger/<hostname>).",
    )(f)


def _checkpointer(db: str, origin: str | None):  # type: ignore[no-untyped-def]
    from .checkpoint import Checkpointer
    from .service import Ledger

    ledger = Ledger(db)
    return ledger, Checkpointer.for_db(ledger.store, origin)


def _json(value: Any) -> None:
    click.echo(canonical(value).decode())


def register(main: click.Group) -> None:
    """Add this module's commands to the `ledger` group."""

    @main.command()
    @_origin
    @db_option
    def key(origin: str | None, db: str) -> None:
        """Print the ledger's public key (C2SP vkey); the key pair is created on first use."""
        try:
            _, cp = _checkpointer(db, origin)
            click.echo(cp.verifier().vkey)
        except LedgerError as e:
            fail(e)

    @main.command()
    @_origin
    @db_option
    def checkpoint(origin: str | None, db: str) -> None:
        """Print a signed checkpoint of the head (a new one only if the head moved)."""
        try:
            _, cp = _checkpointer(db, origin)
            click.echo(cp.latest().note, nl=False)
        except LedgerError as e:
            fail(e)

    @main.command()
    @click.argument("seq", type=int)
    @click.option("--tree-size", type=int, default=None, help="Tree size (default: the head).")
    @db_option
    def proof(seq: int, tree_size: int | None, db: str) -> None:
        """Print the inclusion proof of event SEQ as JSON (hashes in base64)."""
        from . import merkle_store
        from .service import Ledger

        try:
            _json(merkle_store.inclusion(Ledger(db).store, seq, tree_size).to_json())
        except LedgerError as e:
            fail(e)

    @main.command()
    @click.argument("old_size", type=int)
    @click.argument("new_size", type=int, required=False)
    @db_option
    def consistency(old_size: int, new_size: int | None, db: str) -> None:
        """Print the consistency proof from tree size OLD_SIZE to NEW_SIZE (default: the head)."""
        from . import merkle_store
        from .service import Ledger

        store = Ledger(db).store
        new = store.head().seq if new_size is None else new_size
        try:
            path = merkle_store.consistency(store, old_size, new)
            _json(
                {
                    "from": old_size,
                    "to": new,
                    "old_root_hash": merkle_store.b64(merkle_store.tree_root(store, old_size)),
                    "new_root_hash": merkle_store.b64(merkle_store.tree_root(store, new)),
                    "consistency_path": [merkle_store.b64(h) for h in path],
                }
            )
        except LedgerError as e:
            fail(e)

    @main.command()
    @click.argument("arxiv_id")
    @click.option("--as-of", "as_of", help="RFC 3339 instant or YYYY-MM-DD (end of day UTC); default now.")
    @click.option("--known-at", "known_at", help="Only events recorded at or before this instant.")
    @click.option("--out", "out", type=click.Path(dir_okay=False), help="Write here (default: stdout).")
    @_origin
    @db_option
    def bundle(
        arxiv_id: str, as_of: str | None, known_at: str | None, out: str | None, origin: str | None, db: str
    ) -> None:
        """Write an offline evidence bundle: the record, its events, their proofs, a signed checkpoint."""
        from .bundle import encode_bundle, record_evidence

        t, k = instant(as_of, "--as-of"), instant(known_at, "--known-at")
        try:
            ledger, cp = _checkpointer(db, origin)
            evidence = record_evidence(ledger, arxiv_id, t, k, cp)
        except LedgerError as e:
            fail(e)
        data = encode_bundle(evidence)
        if out is None:
            sys.stdout.buffer.write(data)
        else:
            Path(out).write_bytes(data)
        size = evidence["proofs"][0]["tree_size"] if evidence["proofs"] else 0
        n = len(evidence["events"])
        click.echo(
            f"bundle: arXiv:{arxiv_id} as of {evidence['record']['as_of']}, {n} events, "
            f"checkpoint size {size}" + (f", written to {out}" if out else ""),
            err=True,
        )

    @main.command("check-bundle")
    @click.argument("file", type=click.Path(exists=True, dir_okay=False))
    @click.option(
        "--key", "key_arg", required=True, help="The pinned public key (vkey) or a file holding it."
    )
    def check_bundle(file: str, key_arg: str) -> None:
        """Check an evidence bundle offline (no database, no server) against a pinned key."""
        from .bundle import check_bundle as check
        from .checkpoint import read_vkey_arg

        try:
            verifier = read_vkey_arg(key_arg)
        except LedgerError as e:
            raise click.BadParameter(e.message, param_hint="--key") from None
        report = check(Path(file).read_bytes(), verifier)
        for note in report.notes:
            click.echo(f"note: {note}")
        if report.ok:
            click.echo(report.summary)
            return
        click.echo(f"FAILED: {len(report.problems)} problem(s) in {file}")
        for problem in report.problems:
            click.echo(f"  {problem}")
        sys.exit(1)

    # Replaces the plain `verify` of cli.py: same output, plus --resume and a progress bar.
    @main.command()
    @click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
    @click.option(
        "--resume",
        is_flag=True,
        help="Continue from the last fully verified seq (if it still has the hash it had) instead of seq 1.",
    )
    @db_option
    def verify(as_json: bool, resume: bool, db: str) -> None:
        """Recompute the whole hash chain and Merkle tree; exit non-zero naming the first bad seq."""
        _verify(db, as_json, resume)


def _verify(db: str, as_json: bool, resume: bool) -> None:
    from .service import Ledger
    from .verify import verify_store

    ledger = Ledger(db)
    point = ledger.store.tables.verified_point() if resume else None
    total = ledger.head().seq - (point.seq if point is not None else 0)
    if total > BAR_THRESHOLD:
        with click.progressbar(length=total, label="verifying", file=sys.stderr) as bar:

            def step(_: int) -> None:
                bar.update(_BAR_STEP)

            report = verify_store(ledger.store, step, resume=resume, remember=True, every=_BAR_STEP)
    else:

        def progress(n: int) -> None:
            click.echo(f"  ... {n} events checked", err=True)

        report = verify_store(ledger.store, progress, resume=resume, remember=True)
    if as_json:
        click.echo(canonical(report.to_dict()).decode())
    elif report.ok:
        after = (
            f" after seq {report.resumed_from} (seqs 1..{report.resumed_from} were verified before and "
            f"seq {report.resumed_from} still has the hash it had then)"
            if report.resumed_from
            else ""
        )
        click.echo(
            f"OK: {report.events_checked} events verified{after}; head seq {report.head.seq} "
            f"hash {report.head.hash}"
        )
        click.echo("Note: " + report.to_dict()["note"])
    else:
        click.echo(
            f"BROKEN at seq {report.first_bad_seq}: {report.reason} "
            f"({report.events_checked} events verified before it)"
        )
    sys.exit(0 if report.ok else 2)
