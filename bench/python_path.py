"""The write path's Python work per event, with no database: what no storage layout can remove.

Runs Ledger.append's per-event work (type re-check, rules, canonical encoding, uuid5, stream and
version bookkeeping, blake3 link, the rows, keys and steps an insert writes) over 20,000 synthetic
events against a transaction that stores nothing, and prints microseconds per event.

    .venv/bin/python -m bench.python_path
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from bench.synth import Synth
from ledger.model.codec import check_rules, check_types
from ledger.model.events import StoredEvent
from ledger.model.facts import Head
from ledger.model.instants import SYSTEM_CLOCK
from ledger.storage.append import Rows, append_batch
from ledger.tlog.chain import GENESIS


class _NoStore:
    """The append protocol over nothing: reads answer from what was 'inserted', inserts build the rows."""

    def __init__(self) -> None:
        self._head = (Head(0, GENESIS), 0)
        self.citing: dict[str, str] = {}

    def head(self) -> tuple[Head, int]:
        return self._head

    def existing(self, event_ids: Sequence[str]) -> dict[str, StoredEvent]:
        return {}

    def citing_papers(self, observation_ids: Sequence[str]) -> dict[str, str]:
        return {o: self.citing[o] for o in observation_ids if o in self.citing}

    def stream_versions(self, streams: Sequence[str]) -> dict[str, int]:
        return {}

    def insert(self, rows: Rows) -> None:
        for step in rows.steps:
            if step.type == "citation.observed" and step.citing is not None:
                self.citing[step.observation_id] = step.citing
        last = rows.events[-1]
        self._head = (Head(last[0], last[11]), last[8])


def main(events: int = 20_000) -> None:
    """Print the per-event Python cost of the write path."""
    pending: list[Any] = []
    for _, evs in Synth().events():
        pending.extend(evs)
        if len(pending) >= events:
            break
    batches = [pending[i : i + 1000] for i in range(0, events, 1000)]
    tx = _NoStore()
    start = time.perf_counter()
    for batch in batches:
        now = SYSTEM_CLOCK.now_us()
        for e in batch:
            check_types(e, "e")
            check_rules(e, "e", now)
        append_batch(tx, batch, clock=SYSTEM_CLOCK)
    seconds = time.perf_counter() - start
    print(f"{events} events, {seconds / events * 1e6:.1f} us an event in Python, no database")


if __name__ == "__main__":
    main()
