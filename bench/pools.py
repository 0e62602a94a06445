"""Events to append during the measurements: the synthetic papers after those already in the ledger."""

from __future__ import annotations

from typing import Any

import msgspec

from bench.synth import Synth
from ledger.model.codec import event_to_dict
from ledger.model.events import Event, PaperObserved, ResolutionObserved

# each workload takes its events from its own papers, so no two workloads append the same event
# (about 130 events a paper, 60 of them singles: a pool of 20,000 singles spans some 335 papers)
# (the library append's 25 batches take about 200 papers: 25,000 events hold one move of the key levels)
OFFSETS = {"library_batches": 0, "http_batches": 250, "library_singles": 350, "http_singles": 700,
           "profile_batches": 1050, "profile_singles": 1100, "profile_http": 1300,
           "profile_batches_http": 1700}  # fmt: skip
# the most events each workload may take (run.py): tests/bench/test_pools.py checks that no two overlap
TAKES = {"library_batches": 25_000, "http_batches": 10_000, "library_singles": 20_000,
         "http_singles": 20_000, "profile_batches": 5_000, "profile_singles": 10_000,
         "profile_http": 20_000, "profile_batches_http": 5_000}  # fmt: skip


def batches(first_paper: int, count: int, size: int = 1000) -> list[list[Event]]:
    """`count` batches of exactly `size` events, in the order the papers produce them."""
    events: list[Event] = []
    for _, evs in Synth().events(first_paper):
        events.extend(evs)
        if len(events) >= count * size:
            break
    return [events[k * size : (k + 1) * size] for k in range(count)]


def singles(first_paper: int, count: int) -> list[Event]:
    """`count` new events that need no other: any order of arrival is a valid ledger.

    Left out: resolutions (they need their citation first) and cited papers' snapshots (copies of
    snapshots already stored: duplicates, not appends).
    """
    out: list[Event] = []
    for _, evs in Synth().events(first_paper):
        out.extend(e for e in evs if not isinstance(e, ResolutionObserved) and not _copy(e))
        if len(out) >= count:
            return out[:count]
    return out


def _copy(e: Event) -> bool:
    return isinstance(e, PaperObserved) and e.data.primary_category is None


def body(events: list[Event]) -> bytes:
    """The POST /events body of a batch."""
    value: dict[str, Any] = {"events": [event_to_dict(e) for e in events]}
    return msgspec.json.encode(value)
