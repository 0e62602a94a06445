"""A paper's timeline as server-rendered SVG charts, their text alternatives, and the slider's data.

Pure: a Timeline (projections/timeline.py) and the instant shown in, markup out. Three charts share one
time axis: marks per lane (what the ledger learned, when), resolution coverage as stacked steps, and one
step line per external measurement source (never summed). Marks closer than BUCKET_PX merge into one
band per lane, so a chart's size follows its width, not the number of events: a paper with thousands of
events draws a few hundred elements.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from html import escape
from typing import TypedDict
from urllib.parse import quote

from markupsafe import Markup

from ledger.model.instants import MAX_US, MIN_US, to_datetime
from projections.timeline import GROUPS, Lane, Mark, Series, Timeline, as_of_text, events_text

WIDTH = 720  # viewBox units: about CSS pixels in the page's column (a phone scrolls the chart in its box)
LEFT = 160  # the lane labels' column
RIGHT = 10
PLOT = WIDTH - LEFT - RIGHT
BUCKET_PX = 4  # marks of one lane closer than this are drawn as one band
LANE_H = 22
AXIS_H = 22
COVERAGE_H = 96
MEASURE_H = 44
_DAY_US = 86_400_000_000
_YEAR_US = 365 * _DAY_US
_BEFORE = "0001-01-01T00:00:00Z"  # a `from` before any record: the changes view lists all as added
GROUP_LABELS = {
    "verified_exact": "verified exact",
    "verified_fuzzy": "verified fuzzy",
    "unresolved": "unresolved",
    "other": "other states",
    "pending": "pending",
}


@dataclass
class Row:
    """One line of a chart's table: what one mark or band says, with its links."""

    lane: str
    when: str
    what: str
    record_href: str
    changes_href: str
    seqs: str
    event_href: str | None = None
    strong: bool = False


class Now(TypedDict):
    """The instant shown: what changed there and the events behind it."""

    at: str
    changes: tuple[str, ...]
    seqs: list[tuple[int, str]]  # (seq, the href of its event)
    more: int  # events behind it not listed
    changes_href: str
    exact: bool  # the page's instant is this one (else the last change before it)


@dataclass
class Rendered:
    """The charts and everything the page shows around them."""

    events_svg: Markup
    coverage_svg: Markup
    measures_svg: Markup
    event_rows: list[Row]
    coverage_rows: list[list[str]]
    measure_rows: list[list[str]]
    instants: str  # the slider's instants, encoded (see encode_instants)
    index: int | None  # the instant shown (the last at or before as_of)
    count: int
    base: str  # the page the slider and the marks load (the record page, or the paper page)
    prev_href: str | None = None
    next_href: str | None = None
    now: Now | None = None  # None: no instant at or before the page's

    @property
    def event_groups(self) -> list[tuple[str, list[Row]]]:
        """The event table's rows lane by lane, in the chart's order."""
        out: list[tuple[str, list[Row]]] = []
        for row in self.event_rows:
            if not out or out[-1][0] != row.lane:
                out.append((row.lane, []))
            out[-1][1].append(row)
        return out

    @property
    def size(self) -> int:
        """Bytes of the three SVG charts together."""
        return sum(len(s.encode()) for s in (self.events_svg, self.coverage_svg, self.measures_svg))


def encode_instants(at_us: Sequence[int]) -> str:
    """The instants for the slider's script, compact: per instant, its whole seconds as a hexadecimal
    difference from the previous one's, and `.` and its microseconds in hexadecimal when not zero;
    comma separated. The script spells each back exactly as the record's as_of (`format_as_of`)."""
    out = []
    prev = 0
    for us in at_us:
        sec, micro = divmod(us, 1_000_000)
        out.append(f"{sec - prev:x}.{micro:x}" if micro else f"{sec - prev:x}")
        prev = sec
    return ",".join(out)


class _Axis:
    """Instants to x, over the timeline's span (a day around a single instant)."""

    def __init__(self, t0: int, t1: int) -> None:
        if t1 - t0 < _DAY_US:
            mid = (t0 + t1) // 2
            t0, t1 = mid - _DAY_US // 2, mid + _DAY_US // 2
        pad = (t1 - t0) // 100
        # within the instants a datetime spells (a record may be as of 0001-01-01 or 9999-12-31)
        self.t0, self.t1 = max(MIN_US, t0 - pad), min(MAX_US, t1 + pad)

    def x(self, us: int) -> float:
        return LEFT + (us - self.t0) / (self.t1 - self.t0) * PLOT

    def bucket(self, us: int) -> int:
        return int((self.x(us) - LEFT) // BUCKET_PX)

    def ticks(self) -> list[tuple[float, str]]:
        """Year, month or day boundaries inside the span, at most about ten, with their labels."""
        try:
            return self._ticks()
        except (OverflowError, ValueError):  # a span reaching the year 9999: no tick past it
            return []

    def _ticks(self) -> list[tuple[float, str]]:
        span = self.t1 - self.t0
        start, end = to_datetime(self.t0), to_datetime(self.t1)
        out: list[tuple[float, str]] = []
        if span > 2 * _YEAR_US:
            for year in range(start.year + 1, end.year + 1):
                out.append((self._at(datetime(year, 1, 1, tzinfo=UTC)), str(year)))
            return out
        if span > 60 * _DAY_US:
            months = (end.year - start.year) * 12 + end.month - start.month
            every = max(1, -(-months // 10))
            y, m = start.year, start.month
            i = 0
            while True:
                m += 1
                if m > 12:
                    y, m = y + 1, 1
                if y > end.year:
                    return out
                when = datetime(y, m, 1, tzinfo=UTC)
                if when > end:
                    return out
                if i % every == 0:
                    out.append((self._at(when), when.strftime("%b %Y" if m == 1 or not out else "%b")))
                i += 1
        hours = span <= 2 * _DAY_US
        step = timedelta(hours=6) if hours else timedelta(days=max(1, -(-(span // _DAY_US) // 8)))
        when = datetime(start.year, start.month, start.day, tzinfo=UTC)
        while when + step <= end:
            when += step
            out.append((self._at(when), when.strftime("%d %b %H:%M" if hours else "%d %b %Y")))
        return out

    def _at(self, when: datetime) -> float:
        return self.x(int(when.timestamp()) * 1_000_000)


def _f(v: float) -> str:
    """A coordinate, short: one decimal, no trailing zero."""
    return f"{v:.1f}".rstrip("0").rstrip(".")


def _svg(height: int, label: str, body: list[str], side: list[str], axis: _Axis, chart: str) -> Markup:
    """A chart, and its labels' column apart: on a phone the chart scrolls in its box and the labels
    stay (CSS sticky), at the same scale (the column is LEFT of WIDTH units wide)."""
    head = (
        f'<div class="tl-track"><svg class="tl-chart" data-chart="{chart}" viewBox="0 0 {WIDTH} {height}" '
        f'role="group" aria-label="{escape(label)}" data-t0="{axis.t0}" data-t1="{axis.t1}" '
        f'data-x0="{LEFT}" data-w="{PLOT}">'
    )
    labels = (
        f'<svg class="tl-labels" viewBox="0 0 {LEFT} {height}" style="width: {LEFT / WIDTH:.4%}" '
        'aria-hidden="true">'
        f'<rect class="bg" width="{LEFT - 2}" height="{height}"/>'
    )
    return Markup(head + "".join(body) + "</svg>" + labels + "".join(side) + "</svg></div>")


def _ticks(axis: _Axis, top: int, bottom: int, labels_at: int) -> list[str]:
    out = []
    for x, text in axis.ticks():
        out.append(f'<line class="g" x1="{_f(x)}" x2="{_f(x)}" y1="{top}" y2="{bottom}"/>')
        if x > WIDTH - 70:  # near the right edge: the label left of its line
            out.append(
                f'<text class="t" x="{_f(x - 3)}" y="{labels_at}" text-anchor="end">{escape(text)}</text>'
            )
        else:
            out.append(f'<text class="t" x="{_f(x + 3)}" y="{labels_at}">{escape(text)}</text>')
    return out


def _cursor(axis: _Axis, at: int | None, top: int, bottom: int) -> str:
    hidden = ' visibility="hidden"' if at is None else ""
    x = _f(axis.x(at)) if at is not None else "0"
    return f'<line class="cur" x1="{x}" x2="{x}" y1="{top}" y2="{bottom}"{hidden}/>'


class _Links:
    """Where a mark sends the reader: the page as of an instant, the changes view, one event."""

    def __init__(self, timeline: Timeline, on_paper_page: bool) -> None:
        # relative links: a page of thousands of marks names its own path once, not in each of them
        # (from /paper/ID/citation-record, `changes` is /paper/ID/changes; from /paper/ID, `ID/changes`)
        here = timeline.arxiv_id.rsplit("/", 1)[-1] + "/" if on_paper_page else ""
        self.record = f"{here}citation-record" if on_paper_page else ""
        self.sub = here
        self.us = [i.at_us for i in timeline.instants]
        self.index = {us: n for n, us in enumerate(self.us)}

    def at(self, i: int) -> str:
        """Instant i as the record spells its as_of."""
        return as_of_text(self.us[i])

    def page(self, at: str) -> str:
        """The record as of an instant (':' needs no escape in a query, and no '+' or space occurs)."""
        return f"{self.record}?as_of={at}"

    def changes(self, first: int, last: int) -> str:
        """What changed from instant first - 1 (or before the record) to instant last, with the events."""
        since = self.at(first - 1) if first > 0 else _BEFORE
        return f"{self.sub}changes?from={quote(since, safe=':')}&to={quote(self.at(last), safe=':')}"


def _event_lanes(
    timeline: Timeline, axis: _Axis, links: _Links, cursor: int | None
) -> tuple[Markup, list[Row]]:
    lanes = [lane for lane in timeline.lanes if not lane.key.startswith("measure:")]
    height = AXIS_H + LANE_H * len(lanes) + 6
    body = _ticks(axis, AXIS_H - 6, height, 14)
    side: list[str] = []
    rows: list[Row] = []
    for n, lane in enumerate(lanes):
        y = AXIS_H + n * LANE_H
        body.append(f'<g class="lane" data-lane="{escape(lane.key)}" aria-label="{escape(lane.label)}">')
        body.append(f'<line class="l" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y + 11}" y2="{y + 11}"/>')
        side.append(f'<text class="n" x="4" y="{y + 15}">{escape(lane.label)}</text>')
        groups: dict[int, list[Mark]] = {}
        for m in lane.marks:
            groups.setdefault(axis.bucket(m.at_us), []).append(m)
        for marks in groups.values():
            body.append(_mark(marks, lane, y, axis, links, rows))
        if not lane.marks:
            body.append(f'<text class="t" x="{LEFT + 4}" y="{y + 15}">nothing yet</text>')
        body.append("</g>")
    body.append(_cursor(axis, cursor, AXIS_H - 6, height))
    label = "What the ledger learned about the paper, lane by lane"
    return _svg(height, label, body, side, axis, "events"), rows


def _mark(marks: list[Mark], lane: Lane, y: int, axis: _Axis, links: _Links, rows: list[Row]) -> str:
    first, last = marks[0], marks[-1]
    i0, i1 = links.index[first.shown_at], links.index[last.shown_at]
    strong = any(m.strong for m in marks)
    early = last.shown_at != last.at_us
    seqs = sorted({s for m in marks for s in m.seqs})
    if len(marks) == 1:
        when = as_of_text(first.at_us)
        what = first.text
        x, w = axis.x(first.at_us) - 1.5, 3.0
    else:
        when = f"{as_of_text(first.at_us)} – {as_of_text(last.at_us)}"
        what = f"{len(marks)} changes; the last: {last.text}"
        x, w = LEFT + axis.bucket(first.at_us) * BUCKET_PX, float(BUCKET_PX)
    if early:
        what += f" (observed before the first snapshot; the record shows it from {links.at(i1)})"
    cls = (
        "s"
        if strong
        else ("e" if early else ("m" if len(marks) == 1 else f"b{min(4, len(marks).bit_length())}"))
    )
    href = links.page(links.at(i1))
    changes = links.changes(i0, i1)
    data_i = str(i1) if i0 == i1 else f"{i0}-{i1}"
    top, h = (y + 3, 16) if strong else (y + 5, 12)
    rows.append(
        Row(
            lane.label,
            when,
            what,
            href,
            changes,
            events_text(seqs),
            f"/evidence?after={seqs[0] - 1}&limit=1" if len(seqs) == 1 else None,
            strong,
        )
    )
    title = escape(f"{when}: {what} ({events_text(seqs)})")
    return (
        f'<a href="{escape(href)}" data-i="{data_i}"><rect class="{cls}" '
        f'x="{_f(x)}" y="{top}" width="{_f(w)}" height="{h}"/><title>{title}</title></a>'
    )


def _steps(points: Sequence[tuple[int, int]], axis: _Axis) -> list[tuple[float, int]]:
    """A step line's points merged per pixel bucket (the value at each bucket's end)."""
    out: list[tuple[float, int]] = []
    last_bucket = None
    for at, value in points:
        b = axis.bucket(at)
        if b == last_bucket:
            out[-1] = (out[-1][0], value)
        else:
            out.append((axis.x(at), value))
            last_bucket = b
    return out


def _coverage(timeline: Timeline, axis: _Axis, cursor: int | None) -> tuple[Markup, list[list[str]]]:
    lane = next(lane for lane in timeline.lanes if lane.key == "resolutions")
    series = {s.name: s for s in lane.series}
    height = AXIS_H + COVERAGE_H + 6
    top, bottom = AXIS_H, AXIS_H + COVERAGE_H
    body = _ticks(axis, top - 6, bottom, 14)
    # the shown references' states at each change, merged per bucket
    instants = sorted({at for s in lane.series for at, _ in s.points})
    values = {g: dict(series[g].points) if g in series else {} for g in GROUPS}
    state = dict.fromkeys(GROUPS, 0)
    columns: list[tuple[float, dict[str, int]]] = []
    last_bucket = None
    times: list[int] = []
    for at in instants:
        for g in GROUPS:
            state[g] = values[g].get(at, state[g])
        snapshot = dict(state)
        b = axis.bucket(at)
        if b == last_bucket:
            columns[-1] = (columns[-1][0], snapshot)
            times[-1] = at
        else:
            columns.append((axis.x(at), snapshot))
            times.append(at)
            last_bucket = b
    table = [
        [as_of_text(at), *(str(c[g]) for g in GROUPS)] for at, (_, c) in zip(times, columns, strict=True)
    ]
    side = [
        f'<text class="n" x="4" y="{top + 14}">Shown references</text>',
        f'<text class="t" x="4" y="{top + 30}">by resolution state</text>',
    ]
    if columns:
        end = WIDTH - RIGHT
        below = [0.0] * len(columns)
        for g in GROUPS:
            tops = []
            for k, (_, snap) in enumerate(columns):
                total = sum(snap.values()) or 1
                tops.append(below[k] + snap[g] / total)
            if any(t > b for t, b in zip(tops, below, strict=True)):
                body.append(f'<path class="c-{g}" d="{_band(columns, below, tops, end, top, bottom)}"/>')
            below = tops
    body.append(_cursor(axis, cursor, top - 6, bottom))
    label = "Resolution coverage of the shown references over time"
    return _svg(height, label, body, side, axis, "coverage"), table


def _band(
    columns: list[tuple[float, dict[str, int]]],
    low: list[float],
    high: list[float],
    end: float,
    top: int,
    bottom: int,
) -> str:
    """A stacked step area between two step lines (fractions of the chart's height)."""

    def y(frac: float) -> str:
        return _f(bottom - frac * (bottom - top))

    xs = [x for x, _ in columns] + [end]
    up = [f"M{_f(xs[0])},{y(low[0])}"]
    for k in range(len(columns)):
        up.append(f"V{y(high[k])}H{_f(xs[k + 1])}")
    down = []
    for k in range(len(columns) - 1, -1, -1):
        down.append(f"V{y(low[k])}H{_f(xs[k])}")
    return "".join(up + down) + "Z"


def _measures(
    timeline: Timeline, axis: _Axis, links: _Links, cursor: int | None
) -> tuple[Markup, list[list[str]]]:
    lanes = [lane for lane in timeline.lanes if lane.key.startswith("measure:")]
    height = AXIS_H + MEASURE_H * max(1, len(lanes)) + 6
    body = _ticks(axis, AXIS_H - 6, height, 14)
    side: list[str] = []
    table: list[list[str]] = []
    if not lanes:
        body.append(
            f'<text class="t" x="{LEFT + 4}" y="{AXIS_H + 24}">'
            "No source-named external measurement is stored.</text>"
        )
    for n, lane in enumerate(lanes):
        y0 = AXIS_H + n * MEASURE_H
        series: Series = lane.series[0]
        steps = _steps(series.points, axis)
        lo = min(v for _, v in series.points)
        hi = max(v for _, v in series.points)
        span = (hi - lo) or 1

        def y(v: int, y0: int = y0, lo: int = lo, span: int = span) -> str:
            return _f(y0 + MEASURE_H - 6 - (v - lo) / span * (MEASURE_H - 14))

        body.append(f'<g class="lane" data-lane="{escape(lane.key)}">')
        source, metric = lane.key.split(":", 2)[1:]
        latest = series.points[-1][1]
        side.append(f'<text class="n" x="4" y="{y0 + 16}">{escape(source)}</text>')
        side.append(f'<text class="t" x="4" y="{y0 + 31}">{escape(metric)}: {latest}</text>')
        side.append(f'<text class="t" x="{LEFT - 6}" y="{y0 + 12}" text-anchor="end">{hi}</text>')
        side.append(f'<text class="t" x="{LEFT - 6}" y="{y0 + MEASURE_H - 4}" text-anchor="end">{lo}</text>')
        d = [f"M{_f(steps[0][0])},{y(steps[0][1])}"]
        for k in range(1, len(steps)):
            d.append(f"H{_f(steps[k][0])}V{y(steps[k][1])}")
        d.append(f"H{WIDTH - RIGHT}")
        body.append(f'<path class="ms ms{n % 4}" d="{"".join(d)}"/>')
        kept: dict[int, Mark] = {}  # the table as the chart draws it: each bucket's last value
        for m in lane.marks:
            kept[axis.bucket(m.at_us)] = m
        for m in kept.values():
            table.append(
                [as_of_text(m.at_us), lane.label, m.text, links.page(links.at(links.index[m.shown_at]))]
            )
        body.append("</g>")
    body.append(_cursor(axis, cursor, AXIS_H - 6, height))
    label = "External citation counts over time, one line per source"
    return _svg(height, label, body, side, axis, "measures"), table


def render_timeline(timeline: Timeline, as_of_us: int | None, *, paper_page: bool = False) -> Rendered:
    """The charts, tables and slider data of `timeline` for the record page (or the paper page), the
    cursor at the last instant at or before `as_of_us` (None: the latest). Marks link to the record as
    of their instant; the slider, and the previous and next change, load this page as of it."""
    instants = timeline.instants
    marks = [m for lane in timeline.lanes for m in lane.marks]
    t0 = min([i.at_us for i in instants[:1]] + [m.at_us for m in marks])
    t1 = max([i.at_us for i in instants[-1:]] + [m.at_us for m in marks])
    axis = _Axis(t0, t1)
    links = _Links(timeline, paper_page)
    base = f"/paper/{timeline.arxiv_id}" + ("" if paper_page else "/citation-record")
    index = len(instants) - 1 if as_of_us is None else timeline.index_at(as_of_us)
    cursor = None if index is None else instants[index].at_us
    events_svg, rows = _event_lanes(timeline, axis, links, cursor)
    coverage_svg, coverage_rows = _coverage(timeline, axis, cursor)
    measures_svg, measure_rows = _measures(timeline, axis, links, cursor)
    rendered = Rendered(
        events_svg,
        coverage_svg,
        measures_svg,
        rows,
        coverage_rows,
        measure_rows,
        encode_instants([i.at_us for i in instants]),
        index,
        len(instants),
        base,
    )
    if index is not None:
        now = instants[index]
        rendered.now = Now(
            at=links.at(index),
            changes=now.changes,
            seqs=[(s, f"/evidence?after={s - 1}&limit=1") for s in now.seqs[:12]],
            more=max(0, len(now.seqs) - 12),
            changes_href=links.changes(index, index),
            exact=as_of_us is None or as_of_us == now.at_us,
        )
        if index > 0:
            rendered.prev_href = f"?as_of={links.at(index - 1)}"
        if index + 1 < len(instants):
            rendered.next_href = f"?as_of={links.at(index + 1)}"
    elif instants:
        rendered.next_href = f"?as_of={links.at(0)}"
    return rendered
