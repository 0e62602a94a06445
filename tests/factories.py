"""Builders of events for tests, and hypothesis strategies for whole ledgers."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from hypothesis import strategies as st

from ledger.model import events as ev
from ledger.model.instants import SYSTEM_CLOCK

BASE = datetime(2026, 1, 1, tzinfo=UTC)
PAPERS = ["2101.00001", "2101.00002", "2101.00003", "hep-th/9901001"]
WORKS = ["w-1", "w-2", "w-3"]
SOURCES = ["crossref", "retraction_watch"]


def ts(step: int, micro: int = 0, style: int = 0) -> str:
    """A timestamp `step` minutes after BASE, spelled one of several verbatim ways."""
    dt = BASE + timedelta(minutes=step, microseconds=micro)
    if style == 1:
        return dt.isoformat()  # +00:00, fraction only when non-zero
    if style == 2:
        return (dt + timedelta(hours=2)).strftime("%Y-%m-%dT%H:%M:%S.%f") + "+02:00"
    return dt.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def paper(
    arxiv_id: str, at: str, *, title: str = "A paper", category: str | None = "cs.DC", version: int = 1
) -> ev.PaperObserved:
    """A paper.observed event."""
    return ev.PaperObserved(
        observed_at=at,
        data=ev.PaperData(arxiv_id, title, category, "2025-09-02T16:30:49Z", "2025-09-02T16:30:49Z", version),
    )


def work(
    work_id: str | None, at: str, *, title: str | None = "A cited work", pith: str | None = None
) -> ev.CitedWork:
    """A cited_work object."""
    return ev.CitedWork(None, None, "raw_reference", pith, at, title, None, work_id, 2024)


def citation(
    oid: str, citing: str, at: str, index: int = 0, cited: ev.CitedWork | None = None
) -> ev.CitationObserved:
    """A citation.observed event."""
    return ev.CitationObserved(observed_at=at, data=ev.CitationData(oid, citing, index, "pdf_text", cited))


def resolution(
    oid: str,
    at: str,
    status: str = "verified_exact",
    *,
    cited_arxiv: str | None = None,
    cited: ev.CitedWork | None = None,
    resolver: str | None = "local_arxiv",
) -> ev.ResolutionObserved:
    """A resolution.observed event."""
    return ev.ResolutionObserved(
        observed_at=at,
        data=ev.ResolutionData(oid, status, resolver, cited, cited_arxiv),  # type: ignore[arg-type]
    )


def notice(work_id: str, kind: str = "retraction", doi: str | None = "10.1000/notice") -> ev.Notice:
    """A standing notice."""
    return ev.Notice(work_id, kind, doi, "42", kind.title(), ["Misconduct"], "2026-01-02", None)  # type: ignore[arg-type]


def check(
    source: str,
    at: str,
    work_ids: list[str] | None,
    notices: list[ev.Notice] = (),  # type: ignore[assignment]
) -> ev.StandingChecked:
    """A standing.checked event."""
    return ev.StandingChecked(observed_at=at, data=ev.StandingData(source, work_ids, list(notices)))


def measurement(
    arxiv_id: str, at: str, value: int, source: str = "openalex", metric: str = "cited_by_count"
) -> ev.MeasurementObserved:
    """A measurement.observed event."""
    return ev.MeasurementObserved(
        observed_at=at, data=ev.MeasurementData(arxiv_id, source, metric, value, None, None)
    )


def measurement_json(
    arxiv_id: str = "2509.02480", at: str = "2026-11-01T00:00:00Z", **data: Any
) -> dict[str, Any]:
    """A measurement.observed envelope as a client sends it (plain JSON values); `data` overrides fields."""
    fields = {
        "arxiv_id": arxiv_id,
        "source": "openalex",
        "metric": "cited_by_count",
        "value": 4,
        "source_release": None,
        "query_url": None,
    }
    return {"type": "measurement.observed", "observed_at": at, "data": {**fields, **data}}


def oid_of(n: int) -> str:
    """A deterministic lowercase UUID."""
    return str(uuid.UUID(int=n + 1, version=4))


def cited_by_many(cited: str, first: int, n: int) -> list[ev.Event]:
    """Papers 2201.{first}.. each citing `cited` once (paper, citation, resolution: 3 events a paper),
    after `cited`'s own paper event when `first` is 0: a paper whose inbound spans grow as they come."""
    events: list[ev.Event] = [paper(cited, ts(0))] if first == 0 else []
    for i in range(first, first + n):
        citing = f"2201.{i:05d}"
        events += [
            paper(citing, ts(1, i)),
            citation(oid_of(i), citing, ts(2, i), 0),
            resolution(oid_of(i), ts(3, i), cited_arxiv=cited),
        ]
    return events


@st.composite
def ledgers(draw: Any, max_obs: int = 8) -> list[ev.Event]:
    """Random but valid event histories with all-distinct instants (so order is never a tie-break)."""
    slots = iter(draw(st.permutations(range(400))))
    # checks mostly come after the works they check (steps 380..419), so notices show up
    check_slots = iter(draw(st.permutations(range(400, 420))))

    def at() -> str:
        return ts(next(slots), draw(st.integers(0, 999_999)), draw(st.integers(0, 2)))

    events: list[ev.Event] = []
    for pid in PAPERS:
        for _ in range(draw(st.sampled_from([0, 1, 1, 1, 2]))):
            events.append(
                paper(
                    pid,
                    at(),
                    title=draw(st.sampled_from(["Ünïcode “title”", "T?", "Plain"])),
                    category=draw(st.sampled_from([None, "cs.DC", "hep-th"])),
                    version=draw(st.integers(1, 3)),
                )
            )
    citations: list[tuple[ev.CitationObserved, list[ev.Event]]] = []
    for n in range(draw(st.integers(2, max_obs))):
        oid, citing = oid_of(n), draw(st.sampled_from(PAPERS))
        first = citation(oid, citing, at(), draw(st.integers(0, 4)), _maybe_work(draw, at))
        later: list[ev.Event] = []
        for _ in range(draw(st.integers(0, 1))):
            later.append(citation(oid, citing, at(), draw(st.integers(0, 4)), _maybe_work(draw, at)))
        for _ in range(draw(st.integers(0, 2))):
            cited_arxiv = draw(st.sampled_from([None, *PAPERS]))
            w = _maybe_work(draw, at, pith=cited_arxiv if draw(st.booleans()) else None)
            later.append(
                resolution(
                    oid,
                    at(),
                    draw(st.sampled_from(ev.STATUSES)),
                    cited_arxiv=cited_arxiv,
                    cited=w,
                    resolver=draw(st.sampled_from([None, "local_arxiv"])),
                )
            )
        citations.append((first, later))
    for source in SOURCES:
        for _ in range(draw(st.integers(1, 3))):
            covered = draw(st.one_of(st.none(), st.lists(st.sampled_from(WORKS), unique=True)))
            pool = WORKS if covered is None else covered
            notices = (
                draw(
                    st.lists(
                        st.builds(
                            notice,
                            st.sampled_from(pool) if pool else st.nothing(),
                            st.sampled_from(["retraction", "correction", "expression_of_concern"]),
                            st.sampled_from([None, "10.1000/a", "10.1000/b"]),
                        ),
                        unique_by=lambda n: (n.work_id, n.kind, n.notice_doi),
                        min_size=1 if draw(st.booleans()) else 0,
                        max_size=3,
                    )
                )
                if pool
                else []
            )
            step = next(check_slots) if draw(st.integers(0, 3)) else next(slots)
            check_at = ts(step, draw(st.integers(0, 999_999)), draw(st.integers(0, 2)))
            events.append(check(source, check_at, sorted(covered) if covered is not None else None, notices))
    for pid in PAPERS:
        for _ in range(draw(st.integers(0, 1))):
            events.append(
                measurement(
                    pid,
                    at(),
                    draw(st.integers(0, 500)),
                    draw(st.sampled_from(["openalex", "semantic_scholar"])),
                )
            )
    # a resolution's instant must follow its observation's first citation (so "events <= T" is a
    # valid ledger on its own): sort each observation's later events after the first citation
    for first, later in citations:
        events.append(first)
        for e in later:
            if _instant(e) < _instant(first):
                continue
            events.append(e)
    return events


def _instant(e: ev.Event) -> int:
    from ledger.model.instants import parse_ts

    return parse_ts(e.observed_at)


def _maybe_work(draw: Any, at: Any, pith: str | None = None) -> ev.CitedWork | None:
    if draw(st.integers(0, 4)) == 0:
        return None
    return work(
        draw(st.sampled_from([None, *WORKS])),
        at(),
        title=draw(st.sampled_from([None, "Cited work", "Why?"])),
        pith=pith,
    )


def valid_order(events: list[ev.Event]) -> list[ev.Event]:
    """Reorder so each observation's first citation precedes everything else about it."""
    firsts: dict[str, int] = {}
    for i, e in enumerate(events):
        if isinstance(e, ev.CitationObserved):
            firsts.setdefault(e.data.observation_id, i)
    head = [events[i] for i in sorted(firsts.values())]
    rest = [e for i, e in enumerate(events) if i not in set(firsts.values())]
    return head + rest


def run_threads(*targets: Callable[[], object]) -> None:
    """Run each target in its own thread, all started before any is joined."""
    threads = [threading.Thread(target=t) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def outbox_entries(store: Any, states: list[str]) -> None:
    """Webhook outbox entries in these states, with no alert behind them (so no deliverer takes one)."""
    tables = store.alerts
    with tables.updating():
        for n, state in enumerate(states, 1):
            tables._q(
                "INSERT INTO outbox (alert_n, watch_id, state, attempts, next_us, first_us, lease_us) "
                "VALUES (?, 'w', ?, 0, 0, 0, 0)",
                (10**9 + n, state),
            )


class Clock:
    """A clock a test moves by hand (UTC microseconds): `Ledger(db, clock=Clock())`, then `advance()`,
    instead of sleeping for distinct instants."""

    def __init__(self, start_us: int | None = None) -> None:
        self.us = SYSTEM_CLOCK.now_us() if start_us is None else start_us

    def now_us(self) -> int:
        """The instant it stands at."""
        return self.us

    def advance(self, us: int = 1_000) -> int:
        """Move on by `us` microseconds; the new instant."""
        self.us += us
        return self.us
