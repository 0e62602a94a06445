"""The timeline's charts and text alternatives (api/timeline.py), on the sample and a 5,000-event paper."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import msgspec
import pytest

from api.records.render import render_paper_page, render_record_page
from api.records.timeline import BUCKET_PX, PLOT, Rendered, encode_instants, render_timeline
from ledger.model import events as ev
from ledger.model.instants import MAX_US, format_as_of, parse_ts
from ledger.model.record_types import Record
from projections.timeline import Timeline
from service.ledger import Ledger
from tests.api.records.test_render import _layout, visible_lines
from tests.factories import check, citation, notice, oid_of, paper, resolution, ts, work
from tests.timeline_history import PAPER, TOTAL, History, history

FIX_ID = "2509.02480"
MAX_SVG = 200_000


class _Marks(HTMLParser):
    """Every mark of a chart: its lane, class, href, instant indices and title."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.marks: list[dict[str, Any]] = []
        self.lane: str | None = None
        self.current: dict[str, Any] | None = None
        self.in_title = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "g" and "data-lane" in a:
            self.lane = a["data-lane"]
        elif tag == "a" and "data-i" in a:
            first, _, last = str(a["data-i"]).partition("-")
            self.current = {"lane": self.lane, "href": a["href"], "i0": int(first), "i1": int(last or first)}
        elif tag == "rect" and self.current is not None:
            self.current["class"] = a["class"]
        elif tag == "title" and self.current is not None:
            self.in_title = True

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self.current is not None:
            self.marks.append(self.current)
            self.current = None
        elif tag == "title":
            self.in_title = False
        elif tag == "g":
            self.lane = None

    def handle_data(self, data: str) -> None:
        if self.in_title and self.current is not None:
            self.current["title"] = self.current.get("title", "") + data


def marks_of(svg: str) -> list[dict[str, Any]]:
    parser = _Marks()
    parser.feed(svg)
    return parser.marks


@pytest.fixture(scope="module")
def synthetic(
    db_factory: Callable[[Path, str], str], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[Ledger, History]]:
    """A ledger holding the 5,000-event synthetic paper (tests/timeline_history.py)."""
    made = history()
    ledger = Ledger(db_factory(tmp_path_factory.mktemp("synthetic"), "synthetic.db"))
    for i in range(0, len(made.events), 1000):
        ledger.append(made.events[i : i + 1000])
    assert ledger.head().seq == TOTAL
    yield ledger, made
    ledger.close()


@pytest.fixture(scope="module")
def big(synthetic: tuple[Ledger, History]) -> tuple[Timeline, Rendered]:
    timeline, _ = synthetic[0].records.timeline(PAPER)
    return timeline, render_timeline(timeline, None)


def test_thousands_of_events_stay_under_200_kb(big: tuple[Timeline, Rendered]) -> None:
    timeline, rendered = big
    assert len(timeline.instants) > 4000
    assert rendered.size < MAX_SVG, rendered.size
    per_lane: dict[str, int] = {}
    for m in marks_of(rendered.events_svg):
        per_lane[m["lane"]] = per_lane.get(m["lane"], 0) + 1
    # each lane draws at most one mark or band per BUCKET_PX of the plot, whatever its events
    assert max(per_lane.values()) <= PLOT // BUCKET_PX + 1
    assert per_lane["resolutions"] < len(next(x for x in timeline.lanes if x.key == "resolutions").marks)


def test_marks_at_the_right_instants(
    big: tuple[Timeline, Rendered], synthetic: tuple[Ledger, History]
) -> None:
    timeline, rendered = big
    made = synthetic[1]
    marks = marks_of(rendered.events_svg)
    strong = {m["href"] for m in marks if m["class"] == "s"}
    assert {m["lane"] for m in marks if m["class"] == "s"} == {"notices"}
    for kind, at in made.notice_first.items():
        assert f"?as_of={format_as_of(parse_ts(at))}" in strong, kind
    gone = [m for m in marks if m["lane"] == "notices" and m["class"] != "s"]
    assert [m["href"] for m in gone] == [
        f"?as_of={format_as_of(parse_ts(made.notice_gone['expression_of_concern']))}"
    ]
    assert "no longer lists the expression of concern" in gone[0]["title"]
    snapshots = [m["href"] for m in marks if m["lane"] == "snapshots"]
    versions = [
        format_as_of(parse_ts(e.observed_at))
        for e in made.events
        if isinstance(e, ev.PaperObserved) and e.data.arxiv_id == PAPER
    ]
    assert snapshots == [f"?as_of={v}" for v in versions]


def test_every_instant_is_drawn_in_each_lane_it_touched(big: tuple[Timeline, Rendered]) -> None:
    timeline, rendered = big
    covered: dict[str, list[tuple[int, int]]] = {}
    for m in marks_of(rendered.events_svg) + marks_of(rendered.measures_svg):
        covered.setdefault(m["lane"], []).append((m["i0"], m["i1"]))
        assert m["href"] == f"?as_of={timeline.instants[m['i1']].at}"
    for n, instant in enumerate(timeline.instants):
        for lane in instant.lanes:
            if lane.startswith("measure:"):
                continue  # drawn as a line, merged per pixel (the table lists each bucket)
            assert any(a <= n <= b for a, b in covered[lane]), (lane, instant.at)


def test_text_alternatives(big: tuple[Timeline, Rendered]) -> None:
    timeline, rendered = big
    page = render_record_page(_record(), head="1 x", timeline=rendered)
    assert page.count("<details>") == 3
    assert len(rendered.event_rows) == len(marks_of(rendered.events_svg))
    measure = [row for row in rendered.measure_rows if row[1] == "openalex cited_by_count"]
    assert 0 < len(measure) <= PLOT // BUCKET_PX + 1
    assert rendered.coverage_rows[-1][1:] == [
        str(p[-1][1]) for p in (s.points for s in timeline.lanes[2].series)
    ]


def _record() -> Record:
    from tests.conftest import FIXTURE_PATH

    return msgspec.json.decode(FIXTURE_PATH.read_bytes(), type=Record)


def test_the_sample_record_page_keeps_its_layout(imported_ledger: Ledger) -> None:
    as_of = parse_ts("2026-08-08T08:47:00Z")
    timeline, record, *_ = imported_ledger.records.timeline_and_record(FIX_ID, as_of)
    assert record is not None
    rendered = render_timeline(timeline, parse_ts(record.as_of))
    page = render_record_page(record, head="1 x", timeline=rendered)
    start, end = page.index('<section id="timeline"'), page.index("</section>", page.index('id="tl-data"'))
    without = page[:start] + page[end + len("</section>") :]
    assert _layout(visible_lines(without)) == _layout(visible_lines(render_record_page(record, head="1 x")))
    timeline_lines = visible_lines(page[start:end])
    assert "Timeline" in timeline_lines
    assert "The last change at or before this instant, at 2026-08-08T06:32:00.761636Z (change 3 of 3):" in (
        timeline_lines
    )
    # the cursor is on the last change at or before as_of, and nothing comes from another host
    assert rendered.index == 2 and rendered.now is not None and rendered.now["exact"] is False
    assert not re.search(r"<(script|link|img|iframe)[^>]*\bsrc=", page)
    assert not re.search(r'\b(href|src)="(https?:)?//', page.replace('href="https://doi.org/', ""))


def test_one_event(fresh_ledger: Ledger) -> None:
    fresh_ledger.append([paper("2101.00001", ts(0))])
    timeline, record, *_ = fresh_ledger.records.timeline_and_record("2101.00001")
    rendered = render_timeline(timeline, None)
    marks = marks_of(rendered.events_svg)
    assert [(m["lane"], m["href"]) for m in marks] == [("snapshots", f"?as_of={timeline.instants[0].at}")]
    assert rendered.prev_href is None and rendered.next_href is None and rendered.count == 1
    assert "nothing yet" in rendered.events_svg
    page = render_paper_page("2101.00001", [], {}, timeline=rendered, record=record, as_of=record.as_of)  # type: ignore[union-attr]
    assert record is not None and record.thesis in page


def test_before_the_first_snapshot(fresh_ledger: Ledger) -> None:
    fresh_ledger.append([paper("2101.00001", ts(5))])
    timeline, record, *_ = fresh_ledger.records.timeline_and_record("2101.00001", parse_ts(ts(1)))
    assert record is None
    rendered = render_timeline(timeline, parse_ts(ts(1)))
    assert rendered.index is None and rendered.next_href == f"?as_of={timeline.instants[0].at}"
    page = render_paper_page(
        "2101.00001", [], {}, timeline=rendered, record=None, as_of=format_as_of(parse_ts(ts(1)))
    )
    assert "No record yet at this instant" in page and "its record begins at its first snapshot" in page


def test_links_from_the_paper_page(fresh_ledger: Ledger) -> None:
    fresh_ledger.append([paper("hep-th/9901001", ts(0)), paper("hep-th/9901001", ts(43_200), version=2)])
    timeline, _ = fresh_ledger.records.timeline("hep-th/9901001")
    rendered = render_timeline(timeline, None, paper_page=True)
    # relative to /paper/hep-th/9901001: the record and the changes view of that paper
    assert {m["href"] for m in marks_of(rendered.events_svg)} == {
        f"9901001/citation-record?as_of={i.at}" for i in timeline.instants
    }
    assert rendered.event_rows[0].changes_href.startswith("9901001/changes?from=0001-01-01T00:00:00Z&to=")
    assert rendered.prev_href == f"?as_of={timeline.instants[0].at}"
    assert rendered.base == "/paper/hep-th/9901001"


def test_hostile_text_is_escaped(fresh_ledger: Ledger) -> None:
    evil = '<script>alert("x")</script>'
    w = work("w-1", ts(1), title=evil)
    fresh_ledger.append(
        [
            paper("2101.00001", ts(0)),
            citation(oid_of(1), "2101.00001", ts(1), 0, w),
            resolution(oid_of(1), ts(2), cited=w),
            check("crossref", ts(3), ["w-1"], [notice("w-1")]),
        ]
    )
    timeline, record, *_ = fresh_ledger.records.timeline_and_record("2101.00001")
    page = render_record_page(record, timeline=render_timeline(timeline, None))  # type: ignore[arg-type]
    assert evil not in page and "&lt;script&gt;" in page


@pytest.mark.parametrize(
    "instants",
    [
        ["2026-08-07T16:39:03.985890Z", "2026-08-07T16:39:04Z", "2026-08-09T00:00:00.000001Z"],
        ["0001-01-01T00:00:00Z", "1969-12-31T23:59:59.5Z", "9999-12-31T23:59:59.999999Z"],
        [],
    ],
)
def test_the_slider_instants_come_back_exactly(instants: list[str]) -> None:
    us = [parse_ts(t) for t in instants]
    encoded = encode_instants(us)
    back, secs = [], 0
    for part in encoded.split(",") if encoded else []:  # as the page's script reads them
        whole, _, micro = part.partition(".")
        secs += int(whole, 16)
        back.append(secs * 1_000_000 + (int(micro, 16) if micro else 0))
    assert back == us


def test_a_single_instant_spans_a_day() -> None:
    from api.records.timeline import _Axis

    axis = _Axis(parse_ts(ts(0)), parse_ts(ts(0)))
    assert axis.t1 - axis.t0 > 86_400_000_000
    assert 0 < axis.x(parse_ts(ts(0))) - 160 < PLOT
    for t0, t1 in [(parse_ts("0001-01-01T00:00:00Z"),) * 2, (MAX_US, MAX_US)]:
        edge = _Axis(t0, t1)
        assert edge.ticks() is not None  # no overflow at the ends of the calendar
