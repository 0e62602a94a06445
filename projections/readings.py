"""Who said what about each reference: the latest resolution a source gave and the latest the ledger's
own resolver or a person gave, apart. The record shows only the latest of all; a reader checking it
needs both, since a source's later import can hide the ledger's answer and the ledger's answer hides
what the source said."""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

from ledger.model.claims import claimed
from ledger.model.facts import Fact


class Said(NamedTuple):
    """One resolution as a reader is told of it."""

    status: str
    resolver_source: str | None
    observed_at: str
    seq: int


class Sides(NamedTuple):
    """An observation's latest resolution from a source, and its latest from the ledger (None: none)."""

    source: Said | None
    ledger: Said | None


def resolution_sides(facts: Iterable[Fact]) -> dict[str, Sides]:
    """For each observation among the resolutions in `facts`: the source's and the ledger's latest
    (greatest observed_at, then the later seq, as the record's projection takes the latest)."""
    best: dict[tuple[str, bool], tuple[int, int, Said]] = {}
    for f in facts:
        if f.type != "resolution.observed":
            continue
        d = f.data
        own = claimed(d.resolver_source) is not None
        key = (d.observation_id, own)
        rank = (f.observed_us, f.seq)
        held = best.get(key)
        if held is None or rank > held[:2]:
            best[key] = (*rank, Said(d.status, d.resolver_source, f.observed_at, f.seq))
    out: dict[str, Sides] = {}
    for (oid, own), (_, _, said) in best.items():
        sides = out.get(oid, Sides(None, None))
        out[oid] = sides._replace(ledger=said) if own else sides._replace(source=said)
    return out
