"""The SQL of a record's inbound observations, and how the events past the spans' position fold in."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from ledger.model.events import CitationData, ResolutionData
from ledger.model.facts import (
    Fact,
)
from ledger.storage.derived import spans
from ledger.storage.derived.past import FIELD_SEP, ROW_SEP
from ledger.storage.derived.spans import (
    CITATION,
    OPEN,
    Span,
    Step,
)
from ledger.storage.sql import (
    Dialect,
)

# the inbound observations of a paper as of T known now (params: cited, T's bucket, cited, the bucket's
# start, T, cited, the bucket's start, T): spans started minus spans ended by T (see spans.BUCKET_US)
COUNT_NOW = (
    "(SELECT coalesce(sum(starts - ends), 0) FROM inbound_counts WHERE cited = ? AND bucket < ?)"
    f" + (SELECT count(*) FROM inbound_spans WHERE cited = ? AND k_to = {OPEN}"
    "   AND t_from >= ? AND t_from <= ?)"
    f" - (SELECT count(*) FROM inbound_spans WHERE cited = ? AND k_to = {OPEN} AND t_to >= ? AND t_to <= ?"
    f"   AND t_to < {OPEN})"
)
# an inbound span visible as of T (observed) and K (recorded), for one cited paper
VISIBLE = "cited = ? AND t_from <= ? AND t_to > ? AND k_from <= ? AND k_to > ?"
# the same, known now: the spans no append has closed (+t_to: most spans never end, so the index by
# their end would read them all, where the one by their start reads only those started by T)
VISIBLE_NOW = f"cited = ? AND k_to = {OPEN} AND t_from <= ? AND +t_to > ?"
INBOUND_ORDER = "citing, reference_index, observation_id"


class TailRow(NamedTuple):
    """The three columns of `tail_sql`: the spans' position, the head, and the rows past them."""

    position: int | None
    head: int | None
    rows: str | None


def tail_sql(d: Dialect) -> str:
    """Three columns: the spans' position, the head, and one row (derived/past.py) for each citation
    and resolution past the position and past a seq the reader holds already (params: the position
    and the seq its index holds up to; every one past the position when its position is another). A
    read after no new event is one probe of the events past the head."""
    position = f"coalesce((SELECT seq FROM projections WHERE name = '{spans.NAME}'), 0)"
    row = (
        f"CAST(seq AS TEXT) || '{FIELD_SEP}' || {d.json_text('observation_id')} || '{FIELD_SEP}' || "
        f"substr(stream, 7) || '{FIELD_SEP}' || coalesce({d.json_text('cited_arxiv_id')}, '')"
    )
    joined = f"group_concat({row}, '{ROW_SEP}')" if d.json_lists else f"string_agg({row}, '{ROW_SEP}')"
    return (
        f"{position}, (SELECT max(seq) FROM events), (SELECT {joined} FROM events "
        f"WHERE seq > (CASE WHEN {position} = ? THEN ? ELSE {position} END) "
        # bounded on both sides: a planner takes a range between two unknowns for a few rows, where
        # one side alone is a third of the events
        f"AND seq <= (SELECT max(seq) FROM events) AND type IN ('{CITATION}', '{spans.RESOLUTION}'))"
    )


def record_order(facts: Sequence[Fact]) -> tuple[str, int, str]:
    """An inbound observation's place in the record's order (its citation's citing paper and reference
    index, then its id): that of the inbound spans' key."""
    d = next(f.data for f in facts if f.type == CITATION)
    assert isinstance(d, CitationData)  # a citation.observed decodes to its data
    return d.citing_arxiv_id, d.reference_index, d.observation_id


def fold(
    cited: str, t: int, k: int, position: int, tail: Sequence[tuple[Fact, int]]
) -> tuple[int, list[Fact]]:
    """What the events past the spans' position change in a paper's inbound observations as of T and
    K: (how many more are inbound, the citation and resolution of each touched one now inbound), from
    every event (with its recorded_us) of the observations they touch, which the spans read left out."""
    by_oid: dict[str, list[Step]] = {}
    facts = {f.seq: f for f, _ in tail}
    for f, recorded_us in tail:
        if recorded_us > k:
            continue
        d = f.data
        if isinstance(d, CitationData):
            step = Step(d.observation_id, f.seq, f.type, f.observed_us, recorded_us,
                        d.citing_arxiv_id, d.reference_index, None)  # fmt: skip
        else:
            assert isinstance(d, ResolutionData)  # the tail holds citations and resolutions only
            step = Step(
                d.observation_id, f.seq, f.type, f.observed_us, recorded_us, None, None, d.cited_arxiv_id
            )
        by_oid.setdefault(d.observation_id, []).append(step)

    def shown(steps: Sequence[Step]) -> Span | None:
        return next((s for s in spans.spans(steps) if s.cited == cited and s.t_from <= t < s.t_to), None)

    more, found = 0, []
    for steps in by_oid.values():
        # the stored spans hold the steps up to the position (those the read left out), the fold all
        more -= shown([s for s in steps if s.seq <= position]) is not None
        now = shown(steps)
        if now is not None:
            more += 1
            found += [facts[now.citation_seq], facts[now.resolution_seq]]
    return more, found
