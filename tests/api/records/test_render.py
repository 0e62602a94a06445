"""Tests for the server-side HTML renderer (api/render.py)."""

from __future__ import annotations

import copy
import json
import re
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import msgspec
import pytest

from api.records import render
from api.records.render import render_error_page, render_paper_page
from ledger.model.record_types import Record
from tests.paths import DATA, ROOT


def render_record_page(record: dict, **kw) -> str:
    """The page of a record given as its JSON (the fixture, edited), typed as the routes hand it."""
    return render.render_record_page(msgspec.convert(record, Record), **kw)


# the repository's own copy, else shared/ beside the checkout (where CI lays it too)
FIXTURE_DIRS = [DATA, ROOT.parent / "shared" / "fixtures"]
PAPER_TITLE = (
    "MLP-Offload: Multi-Level, Multi-Path Offloading for LLM Pre-training to Break the GPU Memory Wall"
)
THESIS = (
    "As of 8 August 2026, this Paper Citation Record lists 56 of 56 outbound references and "
    "0 inbound Pith citation observations for arXiv:2509.02480."
)
REFUSAL = "A citation records a reference. It does not transfer a finding from one paper to another."
SECTIONS = {
    "coverage": "Coverage vector",
    "resolution": "Reference resolution",
    "measurements": "External citation measurements",
    "outbound": "Outbound references",
    "inbound": "Pith citing papers",
}


def fixture_path(name: str) -> Path:
    for directory in FIXTURE_DIRS:
        if (directory / name).exists():
            return directory / name
    pytest.fail(f"fixture {name} not found in {FIXTURE_DIRS}")


BLOCK_TAGS = {
    "address", "article", "aside", "blockquote", "br", "dd", "div", "dl", "dt", "footer",
    "form", "h1", "h2", "h3", "h4", "h5", "h6", "header", "hr", "li", "main", "nav", "ol",
    "p", "section", "table", "tbody", "thead", "tr", "ul", "button", "label",
}  # fmt: skip


class _Page(HTMLParser):
    """Collects visible text (lines split at block elements) and element attributes."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.chunks: list[str] = []
        self.hidden = 0
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.h2: list[tuple[str | None, str]] = []  # (enclosing section id, heading text)
        self._section: list[str | None] = []
        self._in_h2: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))
        if tag in ("style", "script", "title", "head"):
            self.hidden += 1
        if tag == "section":
            self._section.append(dict(attrs).get("id"))
        if tag == "h2":
            self._in_h2 = []
        if tag in BLOCK_TAGS:
            self.chunks.append("\n")

    def handle_endtag(self, tag):
        if tag in ("style", "script", "title", "head"):
            self.hidden -= 1
        if tag == "section" and self._section:
            self._section.pop()
        if tag == "h2" and self._in_h2 is not None:
            sid = self._section[-1] if self._section else None
            self.h2.append((sid, " ".join("".join(self._in_h2).split())))
            self._in_h2 = None
        if tag in BLOCK_TAGS:
            self.chunks.append("\n")

    def handle_data(self, data):
        if self.hidden:
            return
        self.chunks.append(re.sub(r"\s+", " ", data))  # source newlines are not line breaks
        if self._in_h2 is not None:
            self._in_h2.append(data)


def parse(html: str) -> _Page:
    page = _Page()
    page.feed(html)
    page.close()
    return page


def visible_lines(html: str) -> list[str]:
    text = "".join(parse(html).chunks)
    return [" ".join(line.split()) for line in text.split("\n") if line.strip()]


def hrefs(html: str) -> list[str]:
    return [href for tag, a in parse(html).elements if tag == "a" and (href := a.get("href"))]


def in_order(lines: list[str], wanted: list[str]) -> bool:
    pos = 0
    for want in wanted:
        try:
            pos = lines.index(want, pos) + 1
        except ValueError:
            return False
    return True


@pytest.fixture(scope="module")
def record() -> dict:
    return json.loads(fixture_path("2509.02480.record.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def html(record) -> str:
    return render_record_page(record, head="1234 sha256:abcdef")


@pytest.fixture(scope="module")
def lines(html) -> list[str]:
    return visible_lines(html)


def obs_by_ref(rec: dict, ref: int) -> dict:
    return next(o for o in rec["outbound"] if o["citation"]["reference_index"] == ref)


def block_of(record: dict, lines: list[str], ref: int, n: int) -> list[str]:
    """The n lines after the heading of reference `ref`'s outbound observation."""
    i = lines.index(f"Observation {obs_by_ref(record, ref)['observation_id']} · outbound")
    return lines[i + 1 : i + 1 + n]


def known_by_pith_id(ref: int, version: str, title: str, year: int, observed: str) -> list[str]:
    """The first lines of an unresolved reference with no parsed title whose cited work's Pith id
    names a paper the ledger holds (`version`: its arXiv id and version)."""
    arxiv_id = version.split()[0]
    return [
        f"This paper cites reference {ref} (no title parsed).",
        f"{PAPER_TITLE} → {title}",
        f"Reference {ref}",
        f"Cited work as observed: Pith id {arxiv_id} · year {year} · observed {observed}",
        f"Cited paper: arXiv:{version}, {title} (known by the cited work's Pith id)",
        f"Resolution: unresolved; no resolver link, observed {observed}",
    ]


# --- the real fixture ------------------------------------------------------------------


def test_header_lines_in_order(lines):
    assert lines[0] == "Paper Citation Record · LEDGER"
    assert lines[1] == PAPER_TITLE
    assert lines[2:6] == [THESIS, REFUSAL, "pith.paper-citation-record.v1", "2509.02480 v1"]


def test_sections_have_ids_headings_and_order(html, lines):
    assert parse(html).h2 == list(SECTIONS.items())
    assert in_order(lines, list(SECTIONS.values()))


def test_coverage_vector(lines):
    start, end = lines.index("Coverage vector"), lines.index("Reference resolution")
    assert lines[start + 1 : end] == [
        "measured 56 of 56 reference resolution",
        "Typed states for the displayed outbound observations.",
        "Source: paper_references, paper_reference_links, observed 2026-08-05T11:38:43.594150Z",
        "measured 56 of 56 standing notices",
        "One-hop event checks from named stored sources.",
        "Source: scholarly_work_events, retraction_status_cache, observed 2026-08-08T06:32:00.761636+00:00",
        "measured 0 of 0 inbound itemization",
        "Pith citing papers itemized under the disclosed page cap.",
        "Source: paper_references, paper_reference_links",
        "measured 0 of 1 external citation measurements",
        "A source-named dated measurement, never combined with another source.",
        "Source: cited_works",
    ]


def test_reference_resolution_rows(lines):
    start = lines.index("Reference resolution")
    assert lines[start + 1 : start + 8] == [
        "56 of 56 outbound references displayed",
        "verified exact1",
        "verified fuzzy8",
        "unresolved47",
        "parse uncertain0",
        "malformed identifier0",
        "metadata mismatch0",
    ]
    assert not any(line.startswith("pending") for line in lines)


def test_empty_measurements_and_inbound(lines):
    i = lines.index("External citation measurements")
    assert lines[i + 1] == "No source-named external measurement is stored."
    i = lines.index("Pith citing papers")
    assert lines[i + 1] == "No inbound Pith citation observations are available."


def test_every_observation_rendered_in_order_with_its_id(record, html, lines):
    ids = [o["observation_id"] for o in record["outbound"]]
    assert len(ids) == 56
    assert in_order(lines, [f"Observation {i} · outbound" for i in ids])
    element_ids = {a.get("id") for _, a in parse(html).elements}
    assert set(ids) <= element_ids


def test_observation_blocks(record, lines):
    survey = "Efficient Training of Large Language Models on Distributed Infrastructures: A Survey"
    assert block_of(record, lines, 9, 10) == [
        *known_by_pith_id(9, "2407.20018 v1", survey, 2024, "2026-08-05T11:38:37.916772Z"),
        "As the source gave it: its resolution names no method.",
        "Note: the source contradicts itself: it links this reference to arXiv:2407.20018, yet calls it "
        "unresolved, names no resolver and parsed no title. The link is the source's; no resolver of this "
        "ledger has checked it.",
        "Source-reported events for the cited work",
        "Unavailable: canonical work link unavailable.",
    ]
    title = obs_by_ref(record, 34)["citation"]["cited_work"]["title"]
    assert block_of(record, lines, 34, 10) == [
        f"This paper cites {title}.",
        f"{PAPER_TITLE} → {title}",
        "Reference 34",
        "Cited work as observed: arXiv 2310.04610 · Pith id 2310.04610 · venue cs.AI · year 2023 · "
        "metadata source pith · work id 42ed2db3-bd24-44d5-b099-4e813676067d · "
        "observed 2026-08-05T11:38:43.814682Z",
        f"Cited paper: arXiv:2310.04610 v2, {title} (known by the cited work's Pith id)",
        "Resolution: verified exact; local_arxiv, observed 2026-08-05T11:38:43.894727Z",
        "As the source gave it: local_arxiv, the source matched this reference to a paper of its own copy "
        "of arXiv.",
        "Source-reported events for the cited work",
        "No event found in the named queried sources as of 2026-08-08T06:32:00.761636+00:00.",
        "Checked: crossref at 2026-08-08T06:32:00.761636+00:00, "
        "retraction_watch at 2026-08-08T06:31:55.24221+00:00.",
    ]
    assert lines.count("Unavailable: canonical work link unavailable.") == 19
    assert lines.count("Resolution: unresolved; raw_fallback, observed 2026-08-05T11:38:53.151038Z")


def test_an_unresolved_reference_says_what_its_observation_holds(record, html, lines):
    """Reference 33 has no parsed title and no resolver link, yet its cited work carries a Pith id
    the ledger knows as Megatron-LM: the block says so, and links the cited paper."""
    megatron = "Megatron-LM: Training Multi-Billion Parameter Language Models Using Model Parallelism"
    assert block_of(record, lines, 33, 6) == known_by_pith_id(
        33, "1909.08053 v4", megatron, 2019, "2026-08-05T11:38:40.899514Z"
    )
    assert hrefs(html).count("/paper/1909.08053") == 2


def test_the_citing_and_the_cited_title_never_run_together(record, lines):
    for o in record["outbound"]:
        i = lines.index(f"Observation {o['observation_id']} · outbound")
        assert lines[i + 2].startswith(f"{PAPER_TITLE} → "), lines[i + 2]


def test_links_form_and_head(record, html, lines):
    links = hrefs(html)
    assert "/paper/2509.02480/citation-record.json?as_of=2026-08-08T08%3A47%3A00Z" in links
    assert "/paper/2509.02480/integrity?as_of=2026-08-08T08%3A47%3A00Z" in links
    assert "/evidence" in links
    cited = {o["links"]["cited_paper"] for o in record["outbound"] if "cited_paper" in o["links"]}
    assert len(cited) == 17 and cited <= set(links)
    elements = parse(html).elements
    form = next(a for tag, a in elements if tag == "form")
    assert form["action"] == "/paper/2509.02480/citation-record"
    assert form.get("method", "get").lower() == "get"
    field = next(a for tag, a in elements if tag == "input" and a.get("name") == "as_of")
    assert field["type"] == "text" and field["placeholder"] == "YYYY-MM-DD or RFC 3339"
    assert "Show record as of" in lines
    changes = [a for tag, a in elements if tag == "form"][1]
    assert changes["action"] == "/paper/2509.02480/changes"
    hidden = next(a for tag, a in elements if tag == "input" and a.get("name") == "to")
    assert hidden["value"] == "2026-08-08T08:47:00Z"
    assert "What changed since" in lines
    assert "Ledger head: 1234 sha256:abcdef" in lines
    assert any("2026-08-08T08:47:00Z" in line for line in lines[:12])


def test_no_head_line_without_head(record):
    assert not any(line.startswith("Ledger head") for line in visible_lines(render_record_page(record)))


def test_standalone_and_mobile_ready(html):
    elements = parse(html).elements
    assert (
        "meta",
        {"name": "viewport", "content": "width=device-width, initial-scale=1"},
    ) in elements
    assert not any(tag in ("script", "link", "img", "iframe") for tag, _ in elements)
    assert "overflow-wrap: anywhere" in html and "max-width" in html
    assert "http://" not in html.split("<body>")[0] and "https://" not in html.split("<body>")[0]


def _shape(line: str) -> str:
    """Classify a visible line, so the real page's layout can be compared with ours."""
    patterns = [
        (r"Paper Citation Record · LEDGER", "kicker"),
        (r"As of \d{1,2} [A-Z][a-z]+ \d{4}, this Paper Citation Record lists .*\.", "thesis"),
        (re.escape(REFUSAL), "refusal"),
        (r"pith\.paper-citation-record\.v1", "schema"),
        (r"\d{4}\.\d{4,5} v\d+", "id-version"),
        ("|".join(SECTIONS.values()), "heading"),
        (r"\d+ of \d+ outbound references displayed", "displayed"),
        (r"\w+ \d+ of \d+ [a-z ]+", "lane"),
        (r"[A-Z][^:]* (observations|sources|cap|source)\.", "note"),
        (r"Source: .*", "lane-source"),
        (r"[a-z ]+\d+", "state-row"),
        (r"No source-named external measurement is stored\.", "no-measurement"),
        (r"Observation \S+ · outbound", "observation"),
        (r"This paper cites .*", "cites"),
        (r"Reference \d+", "reference"),
        (r"Resolution: .*", "resolution"),
        (r"Source-reported events for the cited work", "events-heading"),
        (r"(No event found|Unavailable:|Not yet queried:|\d+ events? found).*", "notice"),
        (r"No inbound Pith citation observations are available\.", "no-inbound"),
        (r"Checked: .*|Record as of .*|Ledger head: .*|Context digest: .*", "extra"),
        # what the observation holds beyond the real page's text (the raw cited work, the cited paper)
        (r"Cited work as observed: .*|Cited paper: .*", "extra"),
        # the notes for a librarian: whose the lines are, contradictions, the ledger's own resolution
        (r"(As the source gave it|Note|The ledger's own resolution): .*", "extra"),
        (r"Each reference is shown as its source gave it\..*", "extra"),
        (
            r"Record JSON|Integrity report|Evidence log|Paper snapshots|Show record as of"
            r"|What changed since",
            "extra",
        ),
    ]
    for pattern, name in patterns:
        if re.fullmatch(pattern, line):
            return name
    return "text"


def _layout(lines: list[str]) -> list[str]:
    """Shapes with extras dropped and observation blocks folded to the first one."""
    shapes = [s for s in map(_shape, lines) if s != "extra"]
    first = shapes.index("observation")
    end = shapes.index("heading", first)
    block = shapes[first : shapes.index("observation", first + 1)]
    return shapes[:first] + block + shapes[end:]


def test_layout_follows_the_real_page_text(lines):
    real = fixture_path("2506.06472.citation-record.txt").read_text(encoding="utf-8")
    real_lines = [" ".join(line.split()) for line in real.splitlines() if line.strip()]
    assert _layout(lines) == _layout(real_lines)


# --- synthetic variants ----------------------------------------------------------------


def _set(ref: int, **changes):
    """An edit of outbound observation `ref`: dotted paths -> values."""

    def edit(rec: dict) -> None:
        obs = obs_by_ref(rec, ref)
        for dotted, value in changes.items():
            *parents, last = dotted.split("__")
            target = obs
            for key in parents:
                target = target[key]
            target[last] = value

    return edit


def _pending(rec: dict) -> None:
    _set(3, resolution={"observed_at": None, "resolver_source": None, "status": "pending"})(rec)
    rec["reference_resolution"]["state_counts"]["pending"] = 1


NOTICE: dict[str, Any] = {
    "kind": "expression_of_concern",
    "notice_date": None,
    "notice_doi": None,
    "observed_at": "2026-08-08T06:32:00.761636+00:00",
    "raw_type": "expression-of-concern",
    "reasons": [],
    "record_id": None,
    "source": "crossref",
    "url": None,
    "work_id": "w",
}
RETRACTION = dict(
    NOTICE,
    kind="retraction",
    source="retraction_watch",
    notice_date="2024-01-02",
    notice_doi="10.1234/ret.1",
    url="https://example.org/notice",
    reasons=["Duplication of data", "Concerns about results"],
)


def _notices(*events):
    return _set(
        3,
        standing_notice__events=list(events),
        standing_notice__observation=f"{len(events)} event(s) found in the named queried sources.",
    )


def _inbound(citing: dict | None, link: str):
    def edit(rec: dict) -> None:
        obs = copy.deepcopy(obs_by_ref(rec, 34))
        obs["observation_id"] = "11111111-2222-3333-4444-555555555555"
        obs["citation"]["citing_paper"] = citing
        obs["citation"]["reference_index"] = 7
        obs["links"]["citing_paper"] = link
        rec["inbound"] = [obs]

    return edit


CITING = {
    "arxiv_id": "2601.00001",
    "last_updated": "2026-01-01T00:00:00Z",
    "snapshot_observed_at": "2026-08-01T00:00:00Z",
    "submitted_at": "2026-01-01T00:00:00Z",
    "title": "A Citing Paper",
    "version": 2,
}
MEASUREMENT = {
    "metric": "cited_by_count",
    "observed_at": "2026-08-01T00:00:00Z",
    "query_url": "https://api.openalex.org/works/doi:10.48550/arxiv.2509.02480",
    "source": "openalex",
    "source_release": "2026-07",
    "value": 42,
}

EDGE_CASES = {
    "pending": (
        _pending,
        ["Resolution: pending (not yet resolved)", "pending1"],
        ["Resolution: pending;"],
    ),
    "no-cited-work": (
        _set(3, citation__cited_work=None),
        [
            "This paper cites reference 3 (no title parsed).",
            f"{PAPER_TITLE} → reference 3",
            "Cited work as observed: none (the reference was not parsed into a work)",
        ],
        [],
    ),
    "blank-title": (
        _set(3, citation__cited_work__title="   "),
        ["This paper cites reference 3 (no title parsed)."],
        [],
    ),
    "work-with-doi-and-blank-venue": (
        _set(3, citation__cited_work__doi="10.1234/x.5", citation__cited_work__venue=" "),
        [
            "Cited work as observed: DOI 10.1234/x.5 · year 2025 · metadata source raw_reference · "
            "work id 1552d9fa-e260-495c-ab0c-7074b9dadb19 · observed 2026-08-05T11:38:52.436826Z"
        ],
        ["Cited work as observed: DOI 10.1234/x.5 · venue"],
    ),
    "title-question": (
        _set(3, citation__cited_work__title="Is attention all you need?"),
        [
            "This paper cites Is attention all you need?",
            f"{PAPER_TITLE} → Is attention all you need?",
        ],
        ["This paper cites Is attention all you need?."],
    ),
    "title-exclaim": (
        _set(3, citation__cited_work__title="Scale!"),
        ["This paper cites Scale!"],
        ["This paper cites Scale!."],
    ),
    "title-period": (
        _set(3, citation__cited_work__title="Deep learning."),
        ["This paper cites Deep learning."],
        ["This paper cites Deep learning.."],
    ),
    "title-plain": (
        _set(3, citation__cited_work__title="Deep learning"),
        ["This paper cites Deep learning.", f"{PAPER_TITLE} → Deep learning"],
        [],
    ),
    "notice-unknown-date": (
        _notices(NOTICE),
        ["expression of concern reported by crossref on an unknown date, notice without DOI."],
        [],
    ),
    "notice-dated": (
        _notices(NOTICE, RETRACTION),
        [
            "retraction reported by retraction_watch on 2024-01-02, notice 10.1234/ret.1.",
            "Reasons: Duplication of data; Concerns about results",
            "2 event(s) found in the named queried sources.",
        ],
        [],
    ),
    "not-yet-queried": (
        _set(
            3,
            standing_notice={
                "events": [],
                "reason": "not_yet_queried",
                "source_receipts": [],
                "state": "unavailable",
            },
        ),
        ["Not yet queried: no named source has checked this work yet."],
        [],
    ),
    "measurement": (
        lambda rec: rec.update(external_citation_measurements=[MEASUREMENT]),
        [
            "openalex: 42 (cited_by_count), observed 2026-08-01T00:00:00Z",
            "Source release: 2026-07 · Query",
        ],
        ["No source-named external measurement is stored."],
    ),
    "inbound-with-citing-paper": (
        _inbound(CITING, "/paper/2601.00001"),
        [
            "Observation 11111111-2222-3333-4444-555555555555 · inbound",
            "A Citing Paper cites this paper.",
            "Reference 7",
            "Resolution: verified exact; local_arxiv, observed 2026-08-05T11:38:43.894727Z",
        ],
        ["No inbound Pith citation observations are available."],
    ),
    "inbound-without-citing-paper": (
        _inbound(None, "/paper/2601.00002"),
        ["arXiv:2601.00002 cites this paper."],
        ["No inbound Pith citation observations are available."],
    ),
}


@pytest.mark.parametrize("case", list(EDGE_CASES), ids=list(EDGE_CASES))
def test_edge_cases(record, case):
    edit, present, absent = EDGE_CASES[case]
    rec = copy.deepcopy(record)
    edit(rec)
    got = visible_lines(render_record_page(rec))
    for line in present:
        assert line in got
    for line in absent:
        assert not any(g.startswith(line) for g in got)


def test_notice_links(record):
    rec = copy.deepcopy(record)
    _notices(RETRACTION, dict(NOTICE, url="javascript:alert(1)"))(rec)
    html = render_record_page(rec)
    links = hrefs(html)
    assert "https://example.org/notice" in links
    assert "https://doi.org/10.1234/ret.1" in links
    assert not any("javascript" in link for link in links)


def test_inbound_links_to_citing_paper(record):
    rec = copy.deepcopy(record)
    _inbound(None, "/paper/2601.00002")(rec)
    html = render_record_page(rec)
    assert "/paper/2601.00002" in hrefs(html)
    assert "11111111-2222-3333-4444-555555555555" in {a.get("id") for _, a in parse(html).elements}


EVIL = "<script>alert('x')</script> & \"quotes\""


@pytest.mark.parametrize(
    "edit",
    [
        lambda rec: rec["paper"].update(title=EVIL),
        _set(3, citation__cited_work__title=EVIL),
        lambda rec: rec.update(external_citation_measurements=[dict(MEASUREMENT, source=EVIL)]),
    ],
    ids=["paper-title", "cited-title", "measurement-source"],
)
def test_html_is_escaped(record, edit):
    rec = copy.deepcopy(record)
    edit(rec)
    html = render_record_page(rec)
    assert "<script>" not in html
    assert "&lt;script&gt;" in html
    assert any(EVIL in line for line in visible_lines(html))


# --- paper and error pages -------------------------------------------------------------

SNAPSHOTS = [
    {
        "arxiv_id": "2509.02480",
        "title": "MLP-Offload (v2 title)",
        "primary_category": None,
        "submitted_at": "2025-09-02T16:30:49Z",
        "last_updated": "2025-10-01T00:00:00Z",
        "version": 2,
        "observed_at": "2026-08-08T06:31:55.24221+00:00",
        "seq": 9,
    },
    {
        "arxiv_id": "2509.02480",
        "title": PAPER_TITLE,
        "primary_category": "cs.DC",
        "submitted_at": "2025-09-02T16:30:49Z",
        "last_updated": "2025-09-02T16:30:49Z",
        "version": 1,
        "observed_at": "2026-08-07T16:39:03.985890Z",
        "seq": 1,
    },
]
PAPER_LINKS = {
    "html": "/paper/2509.02480/citation-record",
    "json": "/paper/2509.02480/citation-record.json",
    "integrity": "/paper/2509.02480/integrity",
}


def test_paper_page():
    html = render_paper_page("2509.02480", SNAPSHOTS, PAPER_LINKS)
    lines = visible_lines(html)
    assert lines[1] == "MLP-Offload (v2 title)"  # the latest snapshot's title
    assert "arXiv:2509.02480" in lines
    assert in_order(
        lines,
        [
            f"2026-08-07T16:39:03.985890Z v1 {PAPER_TITLE} 2025-09-02T16:30:49Z 2025-09-02T16:30:49Z cs.DC",
            "2026-08-08T06:31:55.24221+00:00 v2 MLP-Offload (v2 title) 2025-09-02T16:30:49Z "
            "2025-10-01T00:00:00Z not observed",
        ],
    )
    assert set(PAPER_LINKS.values()) <= set(hrefs(html))


def test_paper_page_escapes_and_handles_no_snapshot():
    html = render_paper_page("2509.02480", [dict(SNAPSHOTS[0], title=EVIL)], PAPER_LINKS)
    assert "<script>" not in html and EVIL in visible_lines(html)[1]
    lines = visible_lines(render_paper_page("2509.02480", [], PAPER_LINKS))
    assert lines[1] == "arXiv:2509.02480"
    assert "No snapshot of this paper is stored." in lines


@pytest.mark.parametrize(
    ("status", "heading"),
    [(404, "404 Not Found"), (422, "422 Unprocessable Entity"), (599, "599 Error")],
)
def test_error_page(status, heading):
    html = render_error_page(status, "No snapshot of <2509.02480> as of 2020-01-01.")
    lines = visible_lines(html)
    assert heading in lines
    assert "No snapshot of <2509.02480> as of 2020-01-01." in lines
    assert "<2509.02480>" not in html


def test_a_cited_works_doi_links_to_its_resolver(record):
    rec = copy.deepcopy(record)
    _set(3, citation__cited_work__doi="10.1234/x.5")(rec)
    assert "https://doi.org/10.1234/x.5" in hrefs(render_record_page(rec))
