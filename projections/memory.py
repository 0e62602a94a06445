"""A RecordSource over a list of stored envelopes: the same reads, no database (bundles, tests)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from ledger.model.codec import decode_data
from ledger.model.events import StandingChecked, StoredEvent
from ledger.model.facts import Checked, CheckRow, CheckWorkRow, Fact, InboundDay, SourceHead
from ledger.model.instants import parse_ts
from ledger.storage.derived.checks import check_rows
from ledger.storage.derived.spans import BUCKET_US, OPEN, Span, Step, spans
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

    # -- a paper's timeline (projections/timeline.py) ------------------------------------

    def checks(self) -> list[Checked]:
        """Every standing check, in (observed_us, seq) order."""
        found = [f for _, f, _ in self.facts if f.type == "standing.checked"]
        found.sort(key=lambda f: (f.observed_us, f.seq))
        return [Checked(f.data.source, f.observed_at, f.observed_us, f.seq) for f in found]

    def notice_rows(self, work_ids: Sequence[str]) -> list[CheckWorkRow]:
        """The check rows of those of these works some check lists a notice for, and of checks of all."""
        rows: list[CheckWorkRow] = []
        for _, f, r_us in self.facts:
            if f.type == "standing.checked":
                event = StandingChecked(observed_at=f.observed_at, data=f.data)
                rows.extend(check_rows(event, f.seq, f.observed_us, r_us))
        mine = set(work_ids)
        noticed = {r.work_id for r in rows if r.work_id in mine and r.notices != b"[]"} | {"*"}
        picked = [r for r in rows if r.work_id in noticed] if mine else []
        return sorted(picked, key=lambda r: (r.observed_us, r.seq, r.work_id))

    def _spans(self, arxiv_id: str) -> list[tuple[Span, int | None]]:
        steps: dict[str, list[Step]] = {}
        for _, f, r_us in self.facts:
            if f.type in ("citation.observed", "resolution.observed"):
                d = f.data
                cit = f.type == "citation.observed"
                steps.setdefault(d.observation_id, []).append(
                    Step(
                        d.observation_id,
                        f.seq,
                        f.type,
                        f.observed_us,
                        r_us,
                        d.citing_arxiv_id if cit else None,
                        d.reference_index if cit else None,
                        None if cit else d.cited_arxiv_id,
                    )
                )
        found = []
        for mine in steps.values():
            for s in spans(mine):
                if s.cited == arxiv_id:
                    at_end = [x.seq for x in mine if x.observed_us == s.t_to]
                    found.append((s, max(at_end) if at_end else None))
        return sorted(found, key=lambda x: (x[0].t_from, x[0].observation_id))

    def inbound_spans(self, arxiv_id: str, limit: int) -> list[tuple[Span, int | None]] | None:
        """The paper's inbound spans, by (t_from, observation_id), each with the event that ended it;
        None when more than `limit`."""
        found = self._spans(arxiv_id)
        return None if len(found) > limit else found

    def inbound_days(self, arxiv_id: str) -> list[InboundDay]:
        """Per day, the first and last instant where an inbound span starts or ends, and the counts."""
        days: dict[int, list[tuple[int, int, int]]] = {}
        for s, _ in self._spans(arxiv_id):
            days.setdefault(s.t_from // BUCKET_US, []).append((s.t_from, 1, 0))
            if s.t_to != OPEN:
                days.setdefault(s.t_to // BUCKET_US, []).append((s.t_to, 0, 1))
        return [
            InboundDay(
                b,
                min(t for t, _, _ in marks),
                max(t for t, _, _ in marks),
                len({t for t, _, _ in marks}),
                sum(n for _, n, _ in marks),
                sum(e for _, _, e in marks),
            )
            for b, marks in sorted(days.items())
        ]
