"""Synthetic ledgers shaped like the real record: the fixture's references, re-identified and re-timed."""

from __future__ import annotations

import random
import re
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import NamedTuple

from ledger.model import events as ev
from ledger.model.importer import parse_input

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests" / "data" / "2509.02480.record.json"
BASE = datetime(2024, 1, 1, tzinfo=UTC)
PAPER_STEP = timedelta(minutes=20)  # paper i's events start at BASE + i * PAPER_STEP
TARGET = 3  # the paper the projection figures read: 100 references, INBOUND citing papers
TARGET_REFS = 100
INBOUND = range(10, 40)  # these papers cite the target once each (and no other paper does)
NOTICE_RATE = 0.02  # share of checked works that a source reports a notice for
MEASUREMENT_RATE = 1 / 3
_TS = re.compile(r"(.*?)(?:\.(\d+))?(Z|[+-]\d{2}:\d{2})")
_WORDS = ("graph", "offload", "memory", "training", "scaling", "model", "data", "study", "network", "cache")


def arxiv_id(i: int) -> str:
    """The synthetic arXiv id of paper i (new style, 5 digits)."""
    return f"24{i // 99_999 + 1:02d}.{i % 99_999 + 1:05d}"


def _shift(text: str, delta: timedelta) -> str:
    """The timestamp moved by delta, spelled the way the template spells it (Z or offset, digits)."""
    m = _TS.fullmatch(text)
    assert m is not None, text
    frac, zone = m[2], m[3]
    dt = datetime.fromisoformat(text.replace("Z", "+00:00")) + delta
    head = dt.strftime("%Y-%m-%dT%H:%M:%S")
    if frac is not None:
        digits = f"{dt.microsecond:06d}"[: len(frac)]
        head += "." + digits
    return head + zone


def _text(rng: random.Random, length: int) -> str:
    """Words up to exactly `length` characters (the template's text length)."""
    out = ""
    while len(out) < length:
        out += rng.choice(_WORDS).capitalize() + " "
    out = out[:length]
    return out[:-1] + "s" if out.endswith(" ") else out


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


class _Ref(NamedTuple):
    """One reference of the fixture: its citation, its resolution (or None) and whether it links a paper."""

    citation: ev.CitationObserved
    resolution: ev.ResolutionObserved | None
    linked: bool


class Shapes(NamedTuple):
    """What the generator copies from the fixture."""

    paper: ev.PaperObserved
    refs: list[_Ref]
    checks: list[ev.StandingChecked]
    start: datetime
    title_lengths: list[int]


def load_shapes(path: Path = FIXTURE) -> Shapes:
    """Decompose the real record into its events and group them by reference."""
    events = parse_input(path.read_bytes()).events
    paper = next(e for e in events if isinstance(e, ev.PaperObserved))
    resolutions = {e.data.observation_id: e for e in events if isinstance(e, ev.ResolutionObserved)}
    refs = [
        _Ref(
            e,
            r := resolutions.get(e.data.observation_id),
            r is not None and r.data.cited_arxiv_id is not None,
        )
        for e in events
        if isinstance(e, ev.CitationObserved)
    ]
    checks = [e for e in events if isinstance(e, ev.StandingChecked)]
    start = min(datetime.fromisoformat(e.observed_at.replace("Z", "+00:00")) for e in events)
    titles = [len(e.data.title) for e in events if isinstance(e, ev.PaperObserved)]
    return Shapes(paper, refs, checks, start, titles)


class Synth:
    """Deterministic papers: paper i's events depend only on i (so a ledger can be grown in stages)."""

    def __init__(self, shapes: Shapes | None = None, seed: int = 2480) -> None:
        self.shapes = shapes or load_shapes()
        self.seed = seed
        n = len(self.shapes.refs)
        self.ref_range = (n // 2, n + n // 2)  # reference counts around the fixture's (56: 28..84)

    def title(self, i: int) -> str:
        """Paper i's title (length drawn from the fixture's paper titles)."""
        rng = random.Random(self.seed * 7 + i)
        return _text(rng, rng.choice(self.shapes.title_lengths))

    def paper_events(self, i: int) -> list[ev.Event]:
        """Every event of paper i's import: snapshot, references, cited snapshots, checks, measurement."""
        s, rng = self.shapes, random.Random(self.seed * 1_000_003 + i)
        pid = arxiv_id(i)
        delta = BASE + i * PAPER_STEP - s.start
        count = TARGET_REFS if i == TARGET else rng.randint(*self.ref_range)
        events: list[ev.Event] = [self._snapshot(i, s.paper.data.primary_category)]
        works: list[str] = []
        cited_snaps: set[int] = set()
        for index in range(1, count + 1):
            ref = s.refs[rng.randrange(len(s.refs))]
            cited = None
            if i in INBOUND and index == 1:
                cited = TARGET
            elif ref.linked and i > 0:
                cited = rng.randrange(i)
                cited = None if cited == TARGET else cited
            events.extend(self._reference(rng, ref, pid, index, cited, delta, works))
            if cited is not None and cited not in cited_snaps:
                # the record's cited_paper block: the cited paper's own snapshot, without its category
                # (record blocks carry none), so every later import of it is a duplicate
                cited_snaps.add(cited)
                events.append(self._snapshot(cited, None))
        for check in s.checks:
            events.append(self._check(rng, check, delta, works))
        if rng.random() < MEASUREMENT_RATE:
            at = _shift(s.checks[-1].observed_at, delta + timedelta(minutes=5))
            events.append(
                ev.MeasurementObserved(
                    observed_at=at,
                    data=ev.MeasurementData(pid, "openalex", "cited_by_count", rng.randrange(500),
                                            "2024-06-01", f"https://api.openalex.org/works/doi:10.48550/arXiv.{pid}"),
                )
            )  # fmt: skip
        return events

    def _snapshot(self, i: int, category: str | None) -> ev.PaperObserved:
        """Paper i's snapshot as its own import observes it (category) or a citing record shows it."""
        at = _shift(self.shapes.paper.observed_at, BASE + i * PAPER_STEP - self.shapes.start)
        data = ev.PaperData(arxiv_id(i), self.title(i), category, "2023-10-02T16:30:49Z",
                            "2023-10-02T16:30:49Z", 1 + i % 3)  # fmt: skip
        return ev.PaperObserved(observed_at=at, data=data)

    def _reference(
        self,
        rng: random.Random,
        ref: _Ref,
        pid: str,
        index: int,
        cited: int | None,
        delta: timedelta,
        works: list[str],
    ) -> list[ev.Event]:
        oid = _uuid(rng)
        c = ref.citation
        cited_id = arxiv_id(cited) if cited is not None else None
        work = self._work(rng, c.data.cited_work, delta, cited_id, works)
        out: list[ev.Event] = [
            ev.CitationObserved(
                observed_at=_shift(c.observed_at, delta),
                data=ev.CitationData(oid, pid, index, c.data.source, work),
            )
        ]
        r = ref.resolution
        if r is not None:
            d = r.data
            status = "verified_exact" if cited == TARGET else d.status
            work = self._work(rng, d.cited_work, delta, cited_id, works)
            out.append(
                ev.ResolutionObserved(
                    observed_at=_shift(r.observed_at, delta),
                    data=ev.ResolutionData(oid, status, d.resolver_source, work, cited_id),
                )
            )
        return out

    def _work(
        self,
        rng: random.Random,
        w: ev.CitedWork | None,
        delta: timedelta,
        cited: str | None,
        works: list[str],
    ) -> ev.CitedWork | None:
        if w is None:
            return None
        work_id = None
        if w.work_id is not None:
            work_id = _uuid(rng)
            works.append(work_id)
        return ev.CitedWork(
            cited if w.arxiv_id is not None else None,
            w.doi,
            w.metadata_source,
            cited if w.pith_arxiv_id is not None else None,
            _shift(w.snapshot_observed_at, delta),
            None if w.title is None else _text(rng, len(w.title)),
            w.venue,
            work_id,
            w.year,
        )

    def _check(
        self, rng: random.Random, check: ev.StandingChecked, delta: timedelta, works: list[str]
    ) -> ev.StandingChecked:
        source = check.data.source
        notices = [
            ev.Notice(w, "retraction", f"10.5555/notice.{w[:8]}", str(rng.randrange(10**5)), "Retraction",
                   ["+Concerns/Issues About Data;"], "2024-03-14", None)
            for w in sorted(works)
            if rng.random() < NOTICE_RATE
        ]  # fmt: skip
        return ev.StandingChecked(
            observed_at=_shift(check.observed_at, delta),
            data=ev.StandingData(source, sorted(set(works)), notices),
        )

    def events(self, first_paper: int = 0) -> Iterator[tuple[int, list[ev.Event]]]:
        """(paper index, its events) from `first_paper` on, forever."""
        i = first_paper
        while True:
            yield i, self.paper_events(i)
            i += 1
