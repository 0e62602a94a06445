"""The peer's intake (bench/intake.py): eventsourcing's application recorder storing the lines of an
NDJSON file of envelopes, read a line at a time, 10,000 events a call to `insert_events`.

    python -m bench.intake_peer FILE DB [--batch N] [--fill BASE]

With `--fill BASE`, the lines of BASE are stored first (durability off, not timed), as the ledger a file
is imported into was built; then FILE is stored at full durability, timed in this process, and the
last line is JSON: its events, wall seconds and CPU seconds.

Each line is decoded (msgspec, no checks), its data encoded canonically (sorted keys, as the ledger
stores it) and stored as one StoredEvent: originator_id one UUID per stream (uuid5 of the stream the
ledger would derive: the paper, or the source of a standing check), originator_version counted per
stream, topic the event's type. No chain, no id index, no derived rows: what the peer keeps.
"""

from __future__ import annotations

import argparse
import json
import time
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


class _Streams:
    """Each line's StoredEvent: its stream's UUID and next version, remembered across files."""

    def __init__(self) -> None:
        self.ids: dict[str, uuid.UUID] = {}
        self.versions: dict[uuid.UUID, int] = {}
        self.owners: dict[str, str] = {}

    def store(self, rec: Any, path: str, batch_size: int) -> int:
        """Store every line of `path`, `batch_size` a call to insert_events; how many."""
        from eventsourcing.persistence import StoredEvent

        decode, encode = msgspec.json.decode, msgspec.json.Encoder(order="sorted").encode
        ids, versions, owners = self.ids, self.versions, self.owners
        stored = 0
        with open(path, "rb") as f:
            batch = []
            for line in f:
                if not line.strip():
                    continue
                envelope = decode(line)
                stream = _stream(envelope, owners)
                oid = ids.get(stream) or ids.setdefault(stream, uuid.uuid5(_NS, stream))
                versions[oid] = versions.get(oid, 0) + 1
                batch.append(StoredEvent(oid, versions[oid], envelope["type"], encode(envelope["data"])))
                if len(batch) == batch_size:
                    rec.insert_events(batch)
                    stored += len(batch)
                    batch = []
            if batch:
                rec.insert_events(batch)
                stored += len(batch)
        return stored


def main() -> None:
    """Store every line of FILE in DB (a SQLite path or a postgresql:// URL); print the count."""
    ap = argparse.ArgumentParser()
    ap.add_argument("file")
    ap.add_argument("db")
    ap.add_argument("--batch", type=int, default=BATCH)
    ap.add_argument("--fill", default=None)
    args = ap.parse_args()
    streams = _Streams()
    if args.fill is not None:
        with recorder(args.db, fill=True) as (rec, _):
            streams.store(rec, args.fill, 10_000)
    with recorder(args.db) as (rec, _):
        wall, cpu = time.perf_counter(), time.process_time()
        stored = streams.store(rec, args.file, args.batch)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    print(f"{stored} stored")
    if args.fill is not None:
        print(json.dumps({"events": stored, "seconds": round(wall, 4), "cpu_seconds": round(cpu, 4)}))


if __name__ == "__main__":
    main()
