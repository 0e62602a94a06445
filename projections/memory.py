"""A RecordSource over a list of stored envelopes: the same reads, no database (bundles, tests)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from ledger.append import check_rows
from ledger.codec import decode_data
from ledger.events import StandingChecked, StoredEvent
from ledger.facts import CheckRow, CheckWorkRow, Fact, SourceHead
from ledger.instants import parse_ts
from projections.record import inbound_facts, inbound_observations


class MemoryReader:
    """Answers RecordSource's five reads from envelopes, filtered to observed <= T, recorded <= K."""

    def __init__(
        self,
        envelopes: Iterable[StoredEvent],
        as_of_us: int,
        known_us: int | None = None,
        *,
        inbound_total: int | None = None,
    ):
        # inbound_total: the count of inbound observations, when the envelopes hold only those shown
        # (an integrity report's first page); None counts the envelopes' own
        self.inbound_total = inbound_total
        self.facts: list[tuple[StoredEvent, Fact, int]] = []
        for e in sorted(envelopes, key=lambda e: e.seq):
            o_us, r_us = parse_ts(e.observed_at), parse_ts(e.recorded_at)
            if o_us <= as_of_us and (known_us is None or r_us <= known_us):
                fact = Fact(e.seq, e.type, e.observed_at, o_us, decode_data(e.type, e.data))
                self.facts.append((e, fact, r_us))

    def paper_stream(self, arxiv_id: str) -> list[Fact]:
        """The paper's own stream."""
        return [f for e, f, _ in self.facts if e.stream == f"paper:{arxiv_id}"]

    def inbound(self, arxiv_id: str, limit: int) -> tuple[int, list[Fact]]:
        """How many observations are inbound to the paper, and the facts of the first `limit`."""
        facts = (f for _, f, _ in self.facts if f.type in ("citation.observed", "resolution.observed"))
        found = inbound_observations(facts, arxiv_id)
        total = len(found) if self.inbound_total is None else self.inbound_total
        return total, inbound_facts(found[:limit])

    def snapshots(self, arxiv_ids: Sequence[str]) -> list[Fact]:
        """paper.observed facts of the given papers."""
        streams = {f"paper:{a}" for a in arxiv_ids}
        return [f for e, f, _ in self.facts if f.type == "paper.observed" and e.stream in streams]

    def source_heads(self) -> list[SourceHead]:
        """The latest check of each source."""
        best: dict[str, Fact] = {}
        for _, f, _ in self.facts:
            if f.type == "standing.checked":
                cur = best.get(f.data.source)
                if cur is None or (f.observed_us, f.seq) > (cur.observed_us, cur.seq):
                    best[f.data.source] = f
        return [SourceHead(s, f.observed_at, f.observed_us, f.seq) for s, f in sorted(best.items())]

    def work_checks(self, works: Sequence[tuple[str, int]]) -> list[CheckRow]:
        """Per (work, since, source), the latest check covering the work."""
        rows: list[tuple[Fact, CheckWorkRow]] = []
        for _, f, r_us in self.facts:
            if f.type == "standing.checked":
                event = StandingChecked(observed_at=f.observed_at, data=f.data)
                rows.extend((f, c) for c in check_rows(event, f.seq, f.observed_us, r_us))
        out = []
        for work_id, since in works:
            best: dict[str, tuple[Fact, bytes]] = {}
            for f, c in rows:
                if c.work_id in (work_id, "*") and f.observed_us >= since:
                    cur = best.get(c.source)
                    if cur is None or (f.observed_us, f.seq) > (cur[0].observed_us, cur[0].seq):
                        best[c.source] = (f, c.notices)
            for source, (f, notices) in best.items():
                out.append(
                    CheckRow(work_id, since, source, f.observed_at, f.observed_us, f.seq, json.loads(notices))
                )
        return out
