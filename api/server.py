"""`ledger serve`: load the samples into an empty ledger, print a record URL, run uvicorn."""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import quote

import uvicorn

from ledger.service import Ledger

from .settings import ENV_DB, ENV_READ_ONLY, Settings

SHUTDOWN_GRACE_S = 3
SAMPLES = Path(__file__).resolve().parent.parent / "ledger" / "samples"


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
        Settings.from_env()  # a bad LEDGER_MAX_BODY fails here, once, not in every worker
    except ValueError as e:
        raise SystemExit(f"error: {e}") from None
    ledger = Ledger(db)
    loaded = load_samples(ledger) if samples else []
    for arxiv_id, as_of in loaded:
        print(f"Loaded the sample record of arXiv:{arxiv_id} (as of {as_of}) into {db}")
    url = first_page(ledger, base_url(host, port))
    ledger.store.close()
    # Workers are separate processes that build the app from the environment, so everything
    # the app needs travels there (tokens and the body limit are read from it already).
    os.environ[ENV_DB] = str(Path(db).resolve())
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
    )
