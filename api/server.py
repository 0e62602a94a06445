"""`ledger serve`: load the samples into an empty ledger, print a record URL, run uvicorn."""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import quote

import uvicorn

from ledger.service import Ledger

from .settings import ENV_DB, ENV_READ_ONLY

SAMPLES = Path(__file__).resolve().parent.parent / "ledger" / "samples"


def load_samples(ledger: Ledger, samples: Path = SAMPLES) -> list[dict[str, str]]:
    """Import every sample record into an empty ledger; [(arxiv_id, as_of)] of the records."""
    if ledger.head().seq != 0:
        return []
    loaded = []
    for path in sorted(samples.glob("*.json")):
        raw = path.read_bytes()
        ledger.import_bytes(raw)
        record = json.loads(raw)
        loaded.append({"arxiv_id": record["paper"]["arxiv_id"], "as_of": record["as_of"]})
    return loaded


def _sample_records(samples: Path = SAMPLES) -> list[dict[str, str]]:
    out = []
    for path in sorted(samples.glob("*.json")):
        record = json.loads(path.read_bytes())
        out.append({"arxiv_id": record["paper"]["arxiv_id"], "as_of": record["as_of"]})
    return out


def base_url(host: str, port: int) -> str:
    """http://host:port, with IPv6 hosts bracketed."""
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def record_url(base: str, arxiv_id: str, as_of: str | None = None) -> str:
    """The record page URL, as of the given instant when there is one."""
    url = f"{base}/paper/{arxiv_id}/citation-record"
    return f"{url}?as_of={quote(as_of, safe=':')}" if as_of else url


def first_page(ledger: Ledger, base: str, loaded: list[dict[str, str]]) -> str:
    """The page to show a new user: a sample as it was, else the most observed paper, else /."""
    for sample in loaded or _sample_records():
        if ledger.store.paper_history(sample["arxiv_id"]):
            return record_url(base, sample["arxiv_id"], sample["as_of"])
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
    ledger = Ledger(db)
    loaded = load_samples(ledger) if samples else []
    for sample in loaded:
        print(f"Loaded sample record arXiv:{sample['arxiv_id']} (as of {sample['as_of']})")
    url = first_page(ledger, base_url(host, port), loaded)
    ledger.store.close()
    # Workers are separate processes that build the app from the environment, so everything
    # the app needs travels there (tokens and the body limit are read from it already).
    os.environ[ENV_DB] = str(Path(db).resolve())
    os.environ[ENV_READ_ONLY] = "1" if read_only else ""
    print(f"Serving {url}", flush=True)
    uvicorn.run(
        "api.app:create_app",
        factory=True,
        host=host,
        port=port,
        workers=workers if workers > 1 else None,
        log_level="info",
    )
