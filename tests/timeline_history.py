"""A synthetic paper with 5,000 events over three years, for the timeline's tests and benchmark.

arXiv:2312.00042: four snapshots; 60 references, observed again at v2 and v3, resolved and re-resolved
thousands of times (exact, fuzzy, unresolved), 8 of them to cited arXiv papers with snapshots of their
own; crossref and retraction_watch checking every cited work weekly, with a retraction that appears
and stays, a correction, and an expression of concern that appears and later goes; 15 citing papers
(one re-resolved away later); openalex and semantic_scholar counts, a thousand each, never combined.
Deterministic (one seed), so the tests know each notice's instant.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import NamedTuple

from ledger.model import events as ev

PAPER = "2312.00042"
START = datetime(2023, 12, 1, tzinfo=UTC)
DAYS = 3 * 365
REFS = 60
WEEKS = DAYS // 7  # 156 checks per source
TOTAL = 5000
MEASURES = 1000  # per source
# (source, work index, kind, first week listed, last week listed)
NOTICES: list[tuple[str, int, ev.NoticeKind, int, int]] = [
    ("retraction_watch", 7, "retraction", 40, WEEKS - 1),
    ("crossref", 12, "correction", 80, WEEKS - 1),
    ("crossref", 20, "expression_of_concern", 100, 120),
]


class History(NamedTuple):
    """The events, and the instants the tests look for."""

    events: list[ev.Event]
    notice_first: dict[str, str]  # kind -> observed_at of the first check listing it
    notice_gone: dict[str, str]  # kind -> observed_at of the first check no longer listing it


def at(delta: timedelta) -> str:
    """START + delta, spelled with microseconds."""
    return (START + delta).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _work(i: int, snapshot: str) -> ev.CitedWork:
    pith = f"2301.{i:05d}" if i < 8 else None
    return ev.CitedWork(
        None, f"10.5555/ref.{i}", "crossref", pith, snapshot, f"Cited work {i}", None, f"w-{i}", 2020
    )


def _paper(pid: str, when: str, title: str, version: int = 1) -> ev.PaperObserved:
    return ev.PaperObserved(
        observed_at=when,
        data=ev.PaperData(pid, title, "cs.DL", "2023-11-30T00:00:00Z", "2023-11-30T00:00:00Z", version),
    )


def _oid(kind: int, n: int) -> str:
    return f"00000000-0000-4000-8{kind:03d}-{n:012d}"


def history(seed: int = 18) -> History:
    """The 5,000 events, in observed order."""
    rng = random.Random(seed)
    out: list[ev.Event] = []
    versions = [timedelta(hours=1), timedelta(days=200), timedelta(days=600), timedelta(days=900)]
    for v, d in enumerate(versions, 1):
        out.append(_paper(PAPER, at(d), f"A ledger of citations, version {v}", v))
    for i in range(8):  # the cited arXiv papers, observed before the paper
        out.append(_paper(f"2301.{i:05d}", at(timedelta(minutes=10 + i)), f"Cited paper {i}"))
    cited_at = {}
    for i in range(REFS):
        when = at(timedelta(hours=2, minutes=i))
        cited_at[i] = when
        out.append(
            ev.CitationObserved(
                observed_at=when, data=ev.CitationData(_oid(0, i), PAPER, i, "pdf_text", None)
            )
        )
        for d in versions[1:3]:
            again = at(d + timedelta(minutes=5 + i))
            out.append(
                ev.CitationObserved(
                    observed_at=again, data=ev.CitationData(_oid(0, i), PAPER, i, "pdf_text", None)
                )
            )
    statuses: list[ev.Status] = ["verified_exact"] * 6
    statuses += ["verified_fuzzy"] * 2
    statuses += ["unresolved"] * 2

    def resolve(i: int, when: str, status: ev.Status) -> ev.ResolutionObserved:
        linked = status != "unresolved"
        work = _work(i, cited_at[i]) if linked else None
        cited = f"2301.{i:05d}" if linked and i < 8 else None
        return ev.ResolutionObserved(
            observed_at=when,
            data=ev.ResolutionData(_oid(0, i), status, "local_arxiv", work, cited),
        )

    for i in range(REFS):
        out.append(
            resolve(i, at(timedelta(days=1, minutes=i)), "verified_exact" if i < 40 else statuses[i % 10])
        )
    notice_first: dict[str, str] = {}
    notice_gone: dict[str, str] = {}
    works = [f"w-{i}" for i in range(REFS)]
    for week in range(WEEKS):
        for k, source in enumerate(("crossref", "retraction_watch")):
            when = at(timedelta(days=7 * week + 3, hours=6 + k))
            notices = []
            for src, w, kind, first, last in NOTICES:
                if src != source:
                    continue
                if first <= week <= last:
                    notice_first.setdefault(kind, when)
                    notices.append(
                        ev.Notice(
                            f"w-{w}",
                            kind,
                            f"10.5555/notice.{w}",
                            str(w),
                            kind,
                            ["Synthetic"],
                            "2025-01-01",
                            None,
                        )
                    )
                elif week == last + 1:
                    notice_gone[kind] = when
            out.append(ev.StandingChecked(observed_at=when, data=ev.StandingData(source, works, notices)))
    for n in range(15):
        pid = f"2405.{n + 1:05d}"
        after = timedelta(days=150 + 60 * n, hours=3)
        out.append(_paper(pid, at(after), f"Citing paper {n}"))
        oid = _oid(1, n)
        out.append(
            ev.CitationObserved(observed_at=at(after), data=ev.CitationData(oid, pid, n, "pdf_text", None))
        )
        out.append(
            ev.ResolutionObserved(
                observed_at=at(after + timedelta(minutes=1)),
                data=ev.ResolutionData(oid, "verified_exact", "local_arxiv", None, PAPER),
            )
        )
    out.append(
        ev.ResolutionObserved(
            observed_at=at(timedelta(days=1000)),
            data=ev.ResolutionData(_oid(1, 0), "unresolved", "local_arxiv", None, None),
        )
    )
    step = timedelta(days=DAYS) / MEASURES
    for n in range(MEASURES):
        for k, (source, metric, url) in enumerate(
            (
                ("openalex", "cited_by_count", "https://api.openalex.org/W1"),
                ("semantic_scholar", "citationCount", None),
            )
        ):
            value = int(n * (0.09 if k == 0 else 0.07)) + rng.randint(0, 2)
            out.append(
                ev.MeasurementObserved(
                    observed_at=at(step * n + timedelta(hours=12, minutes=k)),
                    data=ev.MeasurementData(PAPER, source, metric, value, None, url),
                )
            )
    rest = TOTAL - len(out) - 0
    span = DAYS * 86_400 - 3 * 86_400
    for _ in range(rest):
        i = rng.randrange(REFS)
        when = at(timedelta(days=2, seconds=rng.randrange(span), microseconds=rng.randrange(1_000_000)))
        out.append(resolve(i, when, rng.choice(statuses)))
    out.sort(key=lambda e: e.observed_at)  # one spelling: string order is time order
    assert len(out) == TOTAL
    return History(out, notice_first, notice_gone)
