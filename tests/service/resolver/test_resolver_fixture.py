"""The resolver's acceptance on the shared real record (issue 30, "Targets"): the record imported, a small
Crossref works file ingested, `resolve` run through the Ledger facade with the ledger's own matcher, and
what a resolution must and must not change checked on the ledger's real catalogue.

Two citing papers: 2509.02480, the shared fixture as imported (its unresolved references name arXiv
papers the record itself holds); and 2506.06472, "a record like it" (tests/data/../fixtures
2506.06472.citation-record.txt), whose reference lines are appended as citations carrying the Crossref
reference object (`reference.unstructured`), word for word as that record prints them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ledger.model.codec import decode_data
from ledger.model.events import CitationData, CitationObserved, ResolutionData
from ledger.model.instants import format_recorded
from ledger.model.works import Reference
from service.alerts import alerts as al
from service.alerts.watch_spec import parse_watch
from service.ledger import Ledger
from service.resolver.defaults import default_resolver
from service.resolver.run import Summary, resolve
from service.sources import SourceFile, ingest
from service.sources.works import NAME, ingest_works
from tests.conftest import FIXTURE_ID, FIXTURE_PATH, NewDb
from tests.factories import Clock, oid_of, paper
from tests.paths import DATA

WORKS = DATA / "works" / "fixture-cited-works.ndjson"
RETRACTIONS = DATA / "works" / "fixture-retractions.csv"
LIKE = "2506.06472"  # the record like it
WORKS_AT = "2026-11-01T00:00:00Z"

# fixture references whose identifier (an arXiv id in the text, or the paper the record links) names a
# paper the record holds: reference_index -> arXiv id
BY_IDENTIFIER = {
    9: "2407.20018",
    15: "2411.01142",
    17: "1412.6980",
    20: "2404.16645",
    22: "2403.06504",
    23: "2412.19437",
    27: "1710.03740",
    33: "1909.08053",
    45: "2211.05100",
    49: "2205.01068",
    51: "2303.18223",
    54: "2210.02414",  # "arXiv:2210.02414 [cs.CL] https://arxiv.org/abs/2210.02414"
    2022: "2211.09085",
    2023: "2307.09288",
    2024: "2405.18710",
}
# reference 28 links Gopher (2112.11446) but its title slot holds an author list ("Rae, Sebastian
# Borgeaud, ..., et al"); the arXiv catalogue entry has no authors to explain those names
GOPHER = 28

# the record like it: reference line -> the DOI or arXiv id it must resolve to (None: stays unresolved)
LINES: list[tuple[str, str | None]] = [
    (
        "Swapadvisor: Pushingdeeplearningbeyondthegpu memory limit via smart swapping.",
        "10.5555/3373376.3378530",
    ),
    (
        "Zero- infinity: Breaking the gpu memory wall for extreme scale deep learning.",
        "10.5555/3458817.3476205",
    ),
    ("{Zero-offload}: Democratizing{billion-scale}model training.", "10.5555/atc21.ren"),
    (
        "Smart-infinity: Fastlargelanguagemodeltrainingusingnear-storageprocessingonarealsystem.",
        "10.5555/hpca57654.2024.00034",
    ),
    (
        "Gpipe: Efficient training of giant neural networks using pipeline parallelism.Advances in neural "
        "information processing systems, 32, 2019.",
        "10.5555/neurips.2019.gpipe",
    ),
    ("Deepum: Tensormigrationandprefetchinginunified memory.", "10.5555/3575693.3575736"),
    ("LoHan: Low-Cost High-Performance Framework to Fine-Tune 100B Model on a Consumer GPU.", "2403.06504"),
    ("Accessed: 2025-06", None),
    ("Exxact.https://www.exxactcorp.com/, 2025.", None),
    ("Samyam Rajbhandari, Olatunji Ruwase, Jeff Rasley, Shaden Smith, and Yuxiong He.", None),
    ("Chien-Chin Huang, Gu Jin, and Jinyang Li.", None),
]
# a title of three common words and nothing else: the whole reference is the work's whole title
SHORT_TITLE = ("Mixed Precision Training.", "1710.03740")  # a paper the ledger holds as paper.observed
RESOLVED = ("verified_exact", "verified_fuzzy")


class World:
    """The fixture imported, the record like it appended, the works ingested: nothing resolved yet."""

    def __init__(self, db: str) -> None:
        self.clock = Clock()
        self.ledger = Ledger(db, clock=self.clock)
        self.ledger.import_bytes(FIXTURE_PATH.read_bytes())
        at = "2026-08-07T06:00:33.427109Z"
        like: list[Any] = [paper(LIKE, at, title="Cost-Efficient LLM Training with Lifetime-Aware Tensor "
                                                 "Offloading via GPUDirect Storage")]  # fmt: skip
        for n, (line, _) in enumerate([*LINES, SHORT_TITLE]):
            data = CitationData(oid_of(900 + n), LIKE, n + 1, "pdf_text", None, Reference(unstructured=line))
            like.append(CitationObserved(observed_at=at, data=data))
        self.ledger.append(like)
        self.clock.advance()
        summary = ingest_works(self.ledger, SourceFile(NAME, WORKS.read_bytes(), WORKS_AT))
        assert summary.to_dict()["appended"] == 6
        self.clock.advance()

    def resolve(self) -> Summary:
        self.clock.advance()
        r = default_resolver()
        return resolve(self.ledger, [FIXTURE_ID, LIKE], decide=r.decide, catalogue=r.catalogue(self.ledger),
                       method=r.method)  # fmt: skip

    def latest(self) -> dict[str, tuple[int, ResolutionData]]:
        """Each observation's latest resolution, with its seq."""
        out: dict[str, tuple[int, ResolutionData]] = {}
        for e in self.ledger.store.read_log(type="resolution.observed"):
            d = decode_data(e.type, e.data)
            out[d.observation_id] = (e.seq, d)
        return out

    def outbound(self, arxiv_id: str) -> dict[int, Any]:
        """The record's outbound observations by reference index."""
        record, _, _ = self.ledger.record(arxiv_id)
        return {o.citation.reference_index: o for o in record.outbound}


@pytest.fixture
def world(new_db: NewDb) -> World:
    return World(new_db())


def _key(d: ResolutionData) -> str | None:
    w = d.cited_work
    return None if w is None else (w.doi or w.arxiv_id)


def test_every_reference_whose_identifier_names_a_known_work_is_verified_exact(world: World) -> None:
    before = world.outbound(FIXTURE_ID)
    assert {i: before[i].resolution.status for i in BY_IDENTIFIER} == dict.fromkeys(
        BY_IDENTIFIER, "unresolved"
    )
    world.resolve()
    after = world.outbound(FIXTURE_ID)
    got = {i: (after[i].resolution.status, after[i].citation.cited_paper.arxiv_id) for i in BY_IDENTIFIER}
    assert got == {i: ("verified_exact", a) for i, a in BY_IDENTIFIER.items()}
    assert all(after[i].resolution.resolver_source == "citation-ledger/" + default_resolver().method
               for i in BY_IDENTIFIER)  # fmt: skip


def test_an_identifier_whose_title_slot_holds_authors_is_still_verified_exact(world: World) -> None:
    world.resolve()
    o = world.outbound(FIXTURE_ID)[GOPHER]
    assert (o.resolution.status, o.citation.cited_paper.arxiv_id) == ("verified_exact", "2112.11446")


def test_what_the_fixture_leaves_untouched_stays_as_it_was(world: World) -> None:
    """Pith's verified answers (author lists and venues among them) are not the resolver's to revisit; its
    unresolved references holding only a year stay unresolved."""
    before = world.outbound(FIXTURE_ID)
    world.resolve()
    after = world.outbound(FIXTURE_ID)
    for i, o in before.items():
        if i in BY_IDENTIFIER or i == GOPHER:
            continue
        assert (after[i].resolution.status, after[i].resolution.resolver_source) == (
            o.resolution.status,
            o.resolution.resolver_source,
        ), i


CASES = [
    *[pytest.param(n, line, key, id=f"{n}") for n, (line, key) in enumerate(LINES)],
    pytest.param(len(LINES), *SHORT_TITLE, id="short-title"),
]


@pytest.mark.parametrize(("n", "line", "expected"), CASES)
def test_readable_titles_resolve_and_lines_without_one_stay_unresolved(
    world: World, n: int, line: str, expected: str | None
) -> None:
    world.resolve()
    latest = world.latest()
    got = latest.get(oid_of(900 + n))
    if expected is None:
        assert got is None or (got[1].status, got[1].cited_work) == ("unresolved", None), line
    else:
        assert got is not None and (got[1].status in RESOLVED, _key(got[1])) == (True, expected), line


def test_an_arxiv_id_in_the_text_is_verified_exact_not_fuzzy(world: World) -> None:
    world.resolve()
    _, d = world.latest()[world.outbound(FIXTURE_ID)[54].observation_id]
    assert (d.status, d.cited_arxiv_id, d.evidence.method) == ("verified_exact", "2210.02414", "identifier")  # type: ignore[union-attr]


def test_the_record_before_the_resolution_is_byte_identical_and_now_shows_the_match(world: World) -> None:
    instant = world.ledger.clock.now_us()
    before = {p: world.ledger.record_bytes(p, instant)[0] for p in (FIXTURE_ID, LIKE)}
    summary = world.resolve()
    assert summary.appended > 0
    assert {p: world.ledger.record_bytes(p, instant)[0] for p in (FIXTURE_ID, LIKE)} == before
    now = json.loads(world.ledger.record_bytes(LIKE)[0])
    shown = {o["citation"]["reference_index"]: o for o in now["outbound"]}
    swap = shown[1]
    assert swap["resolution"]["status"] in RESOLVED
    assert swap["citation"]["cited_work"]["doi"] == "10.5555/3373376.3378530"
    assert swap["citation"]["cited_work"]["title"].startswith("SwapAdvisor")
    assert now["reference_resolution"] != json.loads(before[LIKE])["reference_resolution"]


def test_a_second_run_appends_nothing(world: World) -> None:
    world.resolve()
    head = world.ledger.head()
    again = world.resolve()
    assert (again.appended, again.changes, world.ledger.head()) == (0, [], head)


def _inbound(world: World, cited: str) -> dict[str | None, str]:
    record, _, _ = world.ledger.record(cited)
    return {getattr(o.citation.citing_paper, "arxiv_id", None): o.resolution.status for o in record.inbound}


def test_the_cited_arxiv_paper_lists_the_citing_paper_as_inbound(world: World) -> None:
    """2403.06504 (LoHan) is cited by the fixture (reference 22, linked by the import though unresolved)
    and by the record like it (by its title alone, so fuzzy): after the resolution it lists both."""
    assert _inbound(world, "2403.06504") == {FIXTURE_ID: "unresolved"}
    world.resolve()
    assert _inbound(world, "2403.06504") == {FIXTURE_ID: "verified_exact", LIKE: "verified_fuzzy"}


@pytest.mark.parametrize(
    ("citing", "observation", "record_id"),
    # the invented notices of tests/data/works/fixture-retractions.csv: SwapAdvisor's DOI, 2407.20018's
    [(LIKE, oid_of(900), "90001"), (FIXTURE_ID, None, "90002")],
)
def test_a_watch_on_the_citing_paper_is_alerted_when_the_resolved_work_is_retracted(
    world: World, citing: str, observation: str | None, record_id: str
) -> None:
    watch, _ = al.add_watch(world.ledger.store, world.ledger.clock, parse_watch({"arxiv_id": citing}))
    oid = observation or world.outbound(FIXTURE_ID)[9].observation_id
    world.resolve()
    seq, d = world.latest()[oid]
    assert d.cited_work is not None
    work_id = d.cited_work.work_id
    assert world.ledger.store.alerts.alerts(watch.id, 0, 100) == []
    csv = RETRACTIONS.read_bytes()
    ingest(world.ledger, SourceFile("retraction-watch", csv, format_recorded(world.clock.advance())))
    alerts = [json.loads(a.body) for a in world.ledger.store.alerts.alerts(watch.id, 0, 100)]
    mine = [a for a in alerts if a["work"]["work_id"] == work_id]
    assert [(a["notice"]["kind"], a["event"]["type"]) for a in mine] == [("retraction", "standing.checked")]
    assert mine[0]["event"]["seq"] > seq
    assert mine[0]["notice"]["record_id"] == record_id
    assert [c["observation_id"] for c in mine[0]["citing"]] == [oid]
