"""`ledger serve`: load the samples into an empty ledger, print a record URL, run uvicorn."""

from __future__ import annotations

import asyncio
import functools
import json
import os
from pathlib import Path
from urllib.parse import quote, urlsplit, urlunsplit

import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

from ledger.backend import is_pg_url
from ledger.service import Ledger

from .settings import ENV_DB, ENV_READ_ONLY, Settings

SHUTDOWN_GRACE_S = 3
KEEP_ALIVE_S = 5
SAMPLES = Path(__file__).resolve().parent.parent / "ledger" / "samples"


@functools.cache
def _idle_timeout() -> float:
    return Settings.from_env().idle_timeout


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, plus a deadline for a new connection's first byte.

    uvicorn times out an idle keep-alive connection only after a first response; a socket opened and
    left silent would be held for ever, and enough of them would exhaust the server's descriptors.
    """

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Start the idle timer; the first byte received cancels it (uvicorn's own keep-alive path)."""
        super().connection_made(transport)
        self.timeout_keep_alive_task = self.loop.call_later(_idle_timeout(), self.timeout_keep_alive_handler)


def sample_records(samples: Path = SAMPLES) -> list[tuple[bytes, str, str]]:
    """(bytes, arxiv_id, as_of) of every sample record."""
    out = []
    for path in sorted(samples.glob("*.json")):
        raw = path.read_bytes()
        record = json.loads(raw)
        out.append((raw, record["paper"]["arxiv_id"], record["as_of"]))
    return out


def load_samples(ledger: Ledger, samples: Path = SAMPLES) -> list[tuple[str, str]]:
    """Import the sample records into an empty ledger; (arxiv_id, as_of) of those loaded."""
    if ledger.head().seq != 0:
        return []
    loaded = []
    for raw, arxiv_id, as_of in sample_records(samples):
        ledger.import_bytes(raw)
        loaded.append((arxiv_id, as_of))
    return loaded


def shown_db(db: str) -> str:
    """`db` as safe to print: a postgresql:// URL's password (user:pw@ or ?password=) as ***."""
    if not is_pg_url(db):
        return db
    parts = urlsplit(db)
    if parts.password is not None:
        userinfo, _, hostport = parts.netloc.rpartition("@")
        parts = parts._replace(netloc=f"{userinfo.partition(':')[0]}:***@{hostport}")
    if parts.query:  # libpq also takes ?password=...
        params = parts.query.split("&")
        hidden = ["password=***" if p.lower().startswith("password=") else p for p in params]
        parts = parts._replace(query="&".join(hidden))
    return urlunsplit(parts)


def base_url(host: str, port: int) -> str:
    """http://host:port, with IPv6 hosts bracketed."""
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def record_url(base: str, arxiv_id: str, as_of: str | None = None) -> str:
    """The record page URL, as of the given instant when there is one."""
    url = f"{base}/paper/{arxiv_id}/citation-record"
    return f"{url}?as_of={quote(as_of, safe=':')}" if as_of else url


def first_page(ledger: Ledger, base: str) -> str:
    """The page to show a new user: a sample as it was, else the most observed paper, else /."""
    for _, arxiv_id, as_of in sample_records():
        if ledger.store.paper_history(arxiv_id):
            return record_url(base, arxiv_id, as_of)
    papers = ledger.store.papers(1)
    return record_url(base, papers[0]) if papers else base + "/"


def run(
    *,
    db: str,
    host: str = "127.0.0.1",
    port: int = 8000,
    workers: int = 1,
    read_only: bool = False,
    samples: bool = True,
) -> None:
    """Serve the API and pages over `db` with uvicorn (an app factory, so workers > 1 work)."""
    try:
        Settings.from_env()  # a bad LEDGER_* value fails here, once, not in every worker
    except ValueError as e:
        raise SystemExit(f"error: {e}") from None
    ledger = Ledger(db)
    loaded = load_samples(ledger) if samples else []
    for arxiv_id, as_of in loaded:
        print(f"Loaded the sample record of arXiv:{arxiv_id} (as of {as_of}) into {shown_db(db)}")
    url = first_page(ledger, base_url(host, port))
    ledger.store.close()
    # Workers are separate processes that build the app from the environment, so everything
    # the app needs travels there (tokens and the body limit are read from it already).
    os.environ[ENV_DB] = db if is_pg_url(db) else str(Path(db).resolve())
    if read_only:
        os.environ[ENV_READ_ONLY] = "1"
    print(f"Serving {url}", flush=True)
    uvicorn.run(
        "api.app:create_app",
        factory=True,
        host=host,
        port=port,
        workers=workers if workers > 1 else None,
        log_level="info",
        # An SSE subscription never ends by itself: without a bound, shutdown waits for clients.
        timeout_graceful_shutdown=SHUTDOWN_GRACE_S,
        # by name, so each worker process imports it
        http="api.server:GuardedH11Protocol",
        timeout_keep_alive=KEEP_ALIVE_S,
    )
