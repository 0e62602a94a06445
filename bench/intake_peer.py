"""The peer's intake (bench/intake.py): eventsourcing's application recorder storing the lines of an
NDJSON file of envelopes, read a line at a time, 10,000 events a call to `insert_events`.

    python -m bench.intake_peer FILE DB

Each line is decoded (msgspec, no checks), its data encoded canonically (sorted keys, as the ledger
stores it) and stored as one StoredEvent: originator_id one UUID per stream (uuid5 of the stream the
ledger would derive: the paper, or the source of a standing check), originator_version counted per
stream, topic the event's type. No chain, no id index, no derived rows: what the peer keeps.
"""

from __future__ import annotations

import sys
import uuid
from typing import Any

import msgspec

from bench.peer import recorder

BATCH = 10_000
_NS = uuid.UUID("6b1e0a52-7c1f-4d3e-9a43-3c1b2a4f0e11")


def _stream(envelope: dict[str, Any], owners: dict[str, str]) -> str:
    data = envelope["data"]
    kind = envelope["type"]
    if kind == "citation.observed":
        owners[data["observation_id"]] = data["citing_arxiv_id"]
        return "paper:" + data["citing_arxiv_id"]
    if kind == "resolution.observed":
        return "paper:" + owners.get(data["observation_id"], "?")
    if kind == "standing.checked":
        return "source:" + data["source"]
    return "paper:" + data["arxiv_id"]


def main() -> None:
    """Store every line of FILE in DB (a SQLite path or a postgresql:// URL); print the count."""
    from eventsourcing.persistence import StoredEvent

    path, db = sys.argv[1], sys.argv[2]
    decode, encode = msgspec.json.decode, msgspec.json.Encoder(order="sorted").encode
    ids: dict[str, uuid.UUID] = {}
    versions: dict[uuid.UUID, int] = {}
    owners: dict[str, str] = {}
    stored = 0
    with recorder(db) as (rec, _), open(path, "rb") as f:
        batch = []
        for line in f:
            if not line.strip():
                continue
            envelope = decode(line)
            stream = _stream(envelope, owners)
            oid = ids.get(stream) or ids.setdefault(stream, uuid.uuid5(_NS, stream))
            versions[oid] = versions.get(oid, 0) + 1
            batch.append(StoredEvent(oid, versions[oid], envelope["type"], encode(envelope["data"])))
            if len(batch) == BATCH:
                rec.insert_events(batch)
                stored += len(batch)
                batch = []
        if batch:
            rec.insert_events(batch)
            stored += len(batch)
    print(f"{stored} stored")


if __name__ == "__main__":
    main()
