"""`ledger monitor URL`: follow another ledger's checkpoints over HTTP (service/proofs/monitor.py decides)."""

from __future__ import annotations

import functools
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

import click

from cli.common import EXIT_CAUGHT, fail, quorum_of, quorum_options
from ledger.model.errors import LedgerError
from ledger.tlog.checkpoint_notes import NoteError

if TYPE_CHECKING:
    import httpx

    from service.proofs.monitor import Page

TIMEOUT = 30.0
MAX_NOTE = 64 * 1024
MAX_PROOF = 1024 * 1024  # a consistency proof is at most ~2 log2(size) hashes: a few kB
# an evidence page holds at most 4 MB of event data, or one event (at most a request body, 8 MB by
# default), plus each envelope's few hundred bytes
MAX_PAGE = 16 * 1024 * 1024


def register(main: click.Group) -> None:
    """Add `ledger monitor`."""

    @main.command()
    @click.argument("url")
    @click.option(
        "--key", "key_arg", required=True, help="The ledger's public key (vkey) you pinned, or a file."
    )
    @click.option(
        "--state",
        "state_dir",
        type=click.Path(file_okay=False, path_type=Path),
        default=None,
        help="Where the last verified checkpoint is kept (default: ~/.citation-ledger/monitor/<host>).",
    )
    @click.option(
        "--once", is_flag=True, help="Check the current checkpoint against the kept one, then exit."
    )
    @click.option(
        "--events",
        "follow",
        is_flag=True,
        help="Also read every event past those verified (GET /evidence, a page at a time), recompute "
        "each hash from the bytes served, the chain and the Merkle root, which must be the checkpoint's; "
        "only the last seq and hash and O(log n) tree hashes are kept in --state.",
    )
    @click.option(
        "--interval",
        type=click.FloatRange(0.05),
        default=60.0,
        show_default=True,
        help="Seconds between looks.",
    )
    @quorum_options
    def monitor(
        url: str,
        key_arg: str,
        state_dir: Path | None,
        once: bool,
        follow: bool,
        interval: float,
        witness_keys: tuple[str, ...],
        quorum: int | None,
    ) -> None:
        """Follow a remote ledger's signed checkpoints: each must verify with the pinned key and extend
        the last one kept (its consistency proof checked here), and carry the cosignatures of --quorum of
        the --witness keys; with --events, the events must chain and hash to its root. Exit 2 with
        'truncated', 'rewritten', 'bad signature' or 'not cosigned' when the ledger is caught; 0 after
        --once when it is consistent."""
        import httpx

        from ledger.tlog.checkpoint import read_vkey_arg
        from service.proofs.monitor import BadAnswer, Followed, MonitorState, follow_events, observe

        verifier = read_vkey_arg(key_arg)
        required = quorum_of(witness_keys, quorum)
        base = url.rstrip("/")
        state = MonitorState(state_dir or _default_dir(base))
        try:
            kept = state.load(verifier)
        except NoteError as e:
            fail(NoteError(f"the checkpoint kept in {state.path} does not verify with the key: {e.message}"))
        followed = Followed()
        if follow:
            try:
                followed = state.load_events()
            except ValueError as e:
                fail(LedgerError(str(e)))
            if kept is None or followed.size > kept.checkpoint.size:
                followed = Followed()  # no checkpoint kept to have verified them against: read them all
        with httpx.Client(timeout=TIMEOUT, follow_redirects=False) as client:
            while True:
                try:
                    note = _get(client, f"{base}/checkpoint", MAX_NOTE).decode("utf-8", errors="replace")
                    seen = observe(kept, note, verifier, lambda a, b: _proof(client, base, a, b), required)
                    read = None
                    if follow and seen.ok and seen.kept is not None:
                        fetch = functools.partial(_page, client, base)
                        read = follow_events(followed, seen.kept.checkpoint, fetch)
                except (httpx.HTTPError, _Refused, BadAnswer) as e:
                    if once:
                        fail(LedgerError(f"could not read the ledger at {base}: {e}"))
                    click.echo(f"{_now()} unreachable: {e}", err=True)
                    time.sleep(interval)
                    continue
                click.echo(f"{_now()} {seen.message}")
                caught = None if seen.ok else seen.message
                if read is not None:
                    click.echo(f"{_now()} {read.message}")
                    caught = caught or (None if read.ok else read.message)
                if caught is not None:
                    where = state.evidence(kept, note, caught)
                    click.echo(f"evidence kept in {where}", err=True)
                    sys.exit(EXIT_CAUGHT)
                if seen.kept is not None and seen.kept != kept:
                    state.keep(seen.kept)
                    kept = seen.kept
                if read is not None and read.followed != followed:
                    state.keep_events(read.followed)  # after the checkpoint: never past the one kept
                    followed = read.followed
                if once:
                    return
                time.sleep(interval)


class _Refused(Exception):
    """The server answered, but not with what was asked for."""


def _get(client: httpx.Client, url: str, limit: int) -> bytes:
    """The body of a 200 answer, at most `limit` bytes (a server cannot make the monitor hold more)."""
    with client.stream("GET", url) as response:
        if response.status_code != 200:
            raise _Refused(f"GET {url} answered {response.status_code}")
        body = bytearray()
        for chunk in response.iter_bytes():
            body += chunk
            if len(body) > limit:
                raise _Refused(f"GET {url} answered more than {limit} bytes")
        return bytes(body)


def _proof(client: httpx.Client, base: str, old: int, new: int) -> list[bytes]:
    import msgspec

    from service.proofs.monitor import Gone, proof_from_json

    url = f"{base}/checkpoint/consistency?from={old}&to={new}"
    response = client.get(url)
    if response.status_code == 404:  # a size past the ledger's head
        raise Gone(_error_message(response))
    if response.status_code != 200 or len(response.content) > MAX_PROOF:
        raise _Refused(f"GET {url} answered {response.status_code}")
    try:
        body = msgspec.json.decode(response.content)
    except msgspec.DecodeError:
        raise _Refused(f"GET {url} answered something that is not JSON") from None
    return proof_from_json(body, old, new)


def _page(client: httpx.Client, base: str, after: int, limit: int) -> Page:
    from service.proofs.monitor import page_from_json

    return page_from_json(_get(client, f"{base}/evidence?after={after}&limit={limit}", MAX_PAGE))


def _error_message(response: httpx.Response) -> str:
    try:
        return str(response.json()["error"]["message"])
    except Exception:  # any body at all: the status says enough
        return f"HTTP {response.status_code}"


def _default_dir(base: str) -> Path:
    from urllib.parse import urlsplit

    host = urlsplit(base).netloc.replace(":", "_") or "ledger"
    return Path.home() / ".citation-ledger" / "monitor" / host


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
