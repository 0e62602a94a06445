"""Inbound spans: over which instants each observation points at a cited paper, by what was known when.

record-v1.md: an observation is inbound to paper P as of T when its latest citation and its latest
resolution as of T (greatest observed_at, ties to the later seq) exist and the resolution names P (and
the citing paper is not P). Reading every observation ever resolved to P to decide that grew with P's
fan-in (2.3 s and 200 MB for a paper cited 100,000 times); these rows let the database count them and
list the first page in the record's order instead.

A row is one state of an observation (its latest citation and resolution) over a half-open interval of
observed time, [t_from, t_to), as known over a half-open interval of recorded time, [k_from, k_to). An
append closes the rows of the observations it changes (k_to becomes its recorded_us) and opens their new
ones. Every event of a batch shares one recorded_us and recorded_us never decreases with seq, so the
table is what replaying each observation's events one recorded_us at a time gives (`history`): that is
how the migration fills it and how `ledger verify` checks it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import groupby
from typing import NamedTuple

import msgspec

from ledger.model.events import ChainLink
from ledger.storage.sql import SqlRow

# the open end of an interval: greater than any instant and than FAR_FUTURE, the "known now" of reads
OPEN = 2**63 - 1
# inbound_counts keeps, per cited paper and bucket of observed time, how many spans known now start and
# end in it: a count as of T sums the buckets before T's and counts only the spans of T's own bucket,
# so counting a paper cited 100,000 times over three years reads about a thousand rows, not 100,000
BUCKET_US = 86_400 * 1_000_000
# the projection's name (ledger/storage/projector.py): the spans and counts hold the events up to its seq
NAME = "inbound_spans"
CITATION = "citation.observed"
RESOLUTION = "resolution.observed"
COLUMNS = (
    "cited, citing, reference_index, observation_id, t_from, t_to, citation_seq, resolution_seq, k_from, k_to"
)


class Step(NamedTuple):
    """What a citation or resolution event contributes to its observation's state."""

    observation_id: str
    seq: int
    type: str
    observed_us: int
    recorded_us: int
    citing: str | None  # a citation's citing paper
    reference_index: int | None  # a citation's reference index
    cited: str | None  # a resolution's cited arXiv id


class Span(NamedTuple):
    """One state of an observation that points at `cited`, over observed time [t_from, t_to), known
    over recorded time [k_from, k_to): a span derived from steps alone is known from 0 and still is."""

    cited: str
    citing: str
    reference_index: int
    observation_id: str
    t_from: int
    t_to: int
    citation_seq: int
    resolution_seq: int
    k_from: int = 0
    k_to: int = OPEN


# a stored span: a Span with the recorded times it was known over
Row = Span


def spans(steps: Iterable[Step]) -> list[Span]:
    """The spans of one observation's events, by observed time: where it points at another paper."""
    ordered = sorted(steps, key=lambda s: (s.observed_us, s.seq))
    out: list[Span] = []
    cit: Step | None = None
    res: Step | None = None
    for i, s in enumerate(ordered):
        if s.type == CITATION:
            cit = s
        else:
            res = s
        end = ordered[i + 1].observed_us if i + 1 < len(ordered) else OPEN
        if end == s.observed_us:
            continue  # the state at this instant is the one after its last event
        if cit is None or res is None or res.cited is None or res.cited == cit.citing:
            continue
        assert cit.citing is not None and cit.reference_index is not None
        out.append(
            Span(
                res.cited,
                cit.citing,
                cit.reference_index,
                s.observation_id,
                s.observed_us,
                end,
                cit.seq,
                res.seq,
            )
        )
    return out


def changes(before: Sequence[Step], new: Sequence[Step]) -> tuple[list[Span], list[Span]]:
    """(spans the new steps close, spans they open) for one observation."""
    old, now = set(spans(before)), set(spans([*before, *new]))
    return sorted(old - now), sorted(now - old)


class Delta(NamedTuple):
    """What an insert changes in one observation's rows."""

    # rows stored open before the insert that it closes at the given recorded_us (deleted instead when
    # they were opened at that same recorded_us: no read could see them)
    closed: list[tuple[Span, int]]
    opened: list[Row]


def delta(prior: Sequence[Step], new: Sequence[Step]) -> Delta:
    """The rows an insert of `new` closes and opens, one recorded_us at a time, over `prior`'s."""
    if not prior and all(s.recorded_us == new[0].recorded_us for s in new):
        # the usual case: a new observation, in one append
        return Delta([], [s._replace(k_from=new[0].recorded_us) for s in spans(new)])
    current: dict[Span, int | None] = dict.fromkeys(spans(prior))  # None: stored, opened earlier
    known = list(prior)
    closed: list[tuple[Span, int]] = []
    opened: list[Row] = []
    for recorded, group in groupby(sorted(new, key=lambda s: s.seq), key=lambda s: s.recorded_us):
        known.extend(group)
        now = set(spans(known))
        for s, k in current.items():
            if s in now:
                continue
            if k is None:
                closed.append((s, recorded))
            elif k < recorded:
                opened.append(s._replace(k_from=k, k_to=recorded))
        current = {s: current.get(s, recorded) for s in now}
    opened.extend(s._replace(k_from=k) for s, k in current.items() if k is not None)
    return Delta(sorted(closed), sorted(opened))


Bucket = tuple[str, int, int, int]  # (cited, bucket, starts, ends)


def bucket_deltas(opened: Iterable[Span], closed: Iterable[Span]) -> list[Bucket]:
    """(cited, bucket, starts, ends) changes of inbound_counts when spans known now are opened and
    closed (a Row opened already closed is not known now and counts nothing)."""
    out: dict[tuple[str, int], list[int]] = {}

    def add(s: Span, sign: int) -> None:
        out.setdefault((s.cited, s.t_from // BUCKET_US), [0, 0])[0] += sign
        if s.t_to != OPEN:
            out.setdefault((s.cited, s.t_to // BUCKET_US), [0, 0])[1] += sign

    for s in opened:
        if s.k_to == OPEN:
            add(s, 1)
    for s in closed:
        add(s, -1)
    return sorted((c, b, n[0], n[1]) for (c, b), n in out.items() if n != [0, 0])


def history(steps: Sequence[Step]) -> list[Row]:
    """Every row one observation's events give, replayed one recorded_us at a time, by (t_from, k_from)."""
    recorded = steps[0].recorded_us if steps else 0
    if all(s.recorded_us == recorded for s in steps):
        # the usual case, events all recorded at once: the spans they give, each known from then on
        # (spans() gives them by t_from, each t_from once)
        return [s._replace(k_from=recorded) for s in spans(steps)]
    return replay(steps)


def replay(steps: Iterable[Step]) -> list[Row]:
    """`history` replayed one recorded_us at a time, whatever the steps (what its usual case equals)."""
    known: list[Step] = []
    current: dict[Span, int] = {}
    rows: list[Row] = []
    for recorded, group in groupby(sorted(steps, key=lambda s: s.seq), key=lambda s: s.recorded_us):
        known.extend(group)
        now = set(spans(known))
        rows.extend(s._replace(k_from=k, k_to=recorded) for s, k in current.items() if s not in now)
        current = {s: current.get(s, recorded) for s in now}
    rows.extend(s._replace(k_from=k) for s, k in current.items())
    return sorted(rows, key=lambda r: (r.t_from, r.k_from))


class ObservationRefs(msgspec.Struct):
    """Where a citation or resolution stands: its observation and, for a citation, its citing paper and
    reference index, decoded alone from the event's data (the other fields skipped)."""

    observation_id: str
    citing_arxiv_id: str | None = None
    reference_index: int | None = None


class _Refs(ObservationRefs):
    cited_arxiv_id: str | None = None


_REFS = msgspec.json.Decoder(_Refs)


def link_step(link: ChainLink) -> Step | None:
    """The step a stored citation or resolution contributes (None for other events)."""
    e = link.event
    if e.type != CITATION and e.type != RESOLUTION:
        return None
    r = _REFS.decode(e.data)
    return Step(
        r.observation_id,
        e.seq,
        e.type,
        link.observed_us,
        link.recorded_us,
        r.citing_arxiv_id,
        r.reference_index,
        r.cited_arxiv_id,
    )


def data_steps(rows: Iterable[SqlRow]) -> list[Step]:
    """The Steps of rows of (seq, type, observed_us, recorded_us, data) of citations and resolutions,
    each event's data decoded for its few fields alone (the rest skipped)."""
    decode = _REFS.decode
    return [
        Step(
            r.observation_id,
            seq,
            type_,
            observed,
            recorded,
            r.citing_arxiv_id,
            r.reference_index,
            r.cited_arxiv_id,
        )
        for seq, type_, observed, recorded, data in rows
        for r in (decode(data),)
    ]


class _StepColumns(NamedTuple):
    """A row of (observation_id, seq, type, observed_us, recorded_us, citing, reference_index, cited)."""

    observation_id: str
    seq: int
    type: str
    observed_us: int
    recorded_us: int
    citing: str | None
    reference_index: int | str | None  # read out of the stored JSON: the backend gives text or a number
    cited: str | None


def step_row(row: SqlRow) -> Step:
    """A Step from a row of `_StepColumns`, whatever type the backend gave the index as."""
    index = row[6]
    if index is None or type(index) is int:
        return _make_step(row)  # the columns as they are (SQLite gives the index as a number)
    c = _StepColumns._make(row)
    return Step(c.observation_id, c.seq, c.type, c.observed_us, c.recorded_us, c.citing, int(index), c.cited)


_make_step = Step._make
