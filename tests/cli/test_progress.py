"""The import's progress line (cli/progress.py), on a clock the test moves: the time left is the phase's
own, from the pace of the last seconds, and the phases after it are named, never folded into one guess."""

from __future__ import annotations

import io

import pytest

from cli.progress import Meter


class Clock:
    """A monotonic clock that moves only when told."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _meter(clock: Clock, **kw) -> tuple[Meter, io.StringIO]:
    out = io.StringIO()
    return Meter(out, "f.ndjson", every=0, clock=clock, **kw), out


def _last(out: io.StringIO) -> str:
    return out.getvalue().split("\r")[-1].rstrip()


def test_a_quick_check_does_not_make_the_slower_appends_look_short() -> None:
    """A check of a second, then appends ten times slower: a tenth appended after one second leaves
    nine, and the line says nine (a share of the whole file over the time spent said under two)."""
    clock = Clock()
    meter, out = _meter(clock)
    for t, n in ((0.5, 500), (1.0, 1000)):
        clock.now = t
        meter.update("checking", n, n, 1000)
    assert _last(out) == "f.ndjson: checking 1,000 lines, 1,000 lines/s, 100% read, done, then the appends"
    clock.now = 2.0
    meter.update("appending", 100, 100, 1000)
    assert _last(out) == (
        "f.ndjson: appending 100 lines, 100 lines/s, 10% read, ETA 0:00:09 for this pass, "
        "then a last walk of the chain"
    )


def test_the_pace_is_the_last_seconds_own() -> None:
    clock = Clock()
    meter, out = _meter(clock, window=5.0)
    for second in range(1, 7):  # 100 bytes a second for six seconds
        clock.now = float(second)
        meter.update("appending", second * 100, second * 100, 1000)
    assert "ETA 0:00:04 for this pass" in _last(out)
    for second in range(7, 12):  # then 10 a second for five: the pace of the last five is 10
        clock.now = float(second)
        meter.update("appending", 600 + (second - 6) * 10, 600 + (second - 6) * 10, 1000)
    assert _last(out).startswith("f.ndjson: appending 650 lines, 10 lines/s, 65% read, ETA 0:00:35 ")


def test_the_first_count_of_a_phase_measures_from_the_end_of_the_last() -> None:
    clock = Clock()
    meter, out = _meter(clock)
    clock.now = 2.0
    meter.update("checking", 400, 400, 1000)  # 2 s from the start: 200 a second
    assert "200 lines/s, 40% read, ETA 0:00:03 for this pass, then the appends" in _last(out)


def test_a_pass_with_nothing_read_yet_says_it_does_not_know() -> None:
    clock = Clock()
    meter, out = _meter(clock)
    meter.update("checking", 0, 0, 1000)
    assert _last(out).endswith("0% read, ETA not known yet, then the appends")


def test_the_last_walk_is_shown_with_its_time_so_far() -> None:
    clock = Clock()
    meter, out = _meter(clock)
    clock.now = 1.0
    meter.update("appending", 1000, 1000, 1000)
    clock.now = 4.0
    meter.update("walking", 1000, 1000, 1000)
    assert _last(out) == "f.ndjson: walking the chain over what was appended, 0:00:03 so far"


@pytest.mark.parametrize(("every", "drawn"), [(0.0, 3), (10.0, 1)])
def test_it_redraws_at_most_every_so_often(every: float, drawn: int) -> None:
    clock = Clock()
    out = io.StringIO()
    meter = Meter(out, "f.ndjson", every=every, clock=clock)
    for t in (1.0, 2.0, 3.0):
        clock.now = t
        meter.update("checking", int(t) * 10, int(t) * 10, 100)
    assert out.getvalue().count("\r") == drawn
    meter.close()
    assert out.getvalue().endswith("\r")  # the line is cleared at the end
