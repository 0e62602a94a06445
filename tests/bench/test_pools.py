"""bench/pools.py: each workload of a bench stage appends events of its own papers, never another's, so
an acknowledged append is never a duplicate of an earlier workload's (bench/run.py asserts every
single-event POST answers 201)."""

from __future__ import annotations

from bench import pools
from bench.synth import Synth

_SINGLES = ("library_singles", "http_singles", "profile_singles", "profile_http")


def _papers(first: int, events: int, singles: bool) -> range:
    """The papers a pool starting at paper `first` draws from to take `events` events."""
    taken = 0
    for n, (_, evs) in enumerate(Synth().events(first), start=1):
        if singles:
            evs = [e for e in evs if not isinstance(e, pools.ResolutionObserved) and not pools._copy(e)]
        taken += len(evs)
        if taken >= events:
            return range(first, first + n)
    raise AssertionError("the synthetic papers ran out")


def test_no_two_workloads_draw_from_the_same_papers() -> None:
    spans = sorted(
        ((_papers(pools.OFFSETS[name], pools.TAKES[name], name in _SINGLES), name) for name in pools.OFFSETS),
        key=lambda span: span[0].start,
    )
    for (a, name_a), (b, name_b) in zip(spans, spans[1:], strict=False):
        assert a.stop <= b.start, f"{name_a} (papers {a.start}..{a.stop - 1}) runs into {name_b} at {b.start}"
