"""The resolve flow (service/resolver/run.py, person.py, jobs.py): what is selected, what is appended,
and what a resolution changes downstream (the record, inbound lists, standing checks, alerts)."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ledger.model.codec import canonical, decode_data
from ledger.model.errors import InvalidEvent, NotFound
from ledger.model.events import ResolutionData
from ledger.model.importer import parse_input
from ledger.model.instants import format_recorded, read_instant
from ledger.model.resolving import Decision
from ledger.model.works import Evidence
from ledger.storage.works_store import works_matching
from service.alerts import alerts as al
from service.alerts.watch_spec import parse_watch
from service.ledger import Ledger
from service.resolver import jobs
from service.resolver.person import choice, resolve_by_person
from service.resolver.run import WORK_ID_NAMESPACE, Summary, arxiv_paper, resolve
from service.sources import SourceFile, ingest
from tests.conftest import NewDb, examples
from tests.factories import Clock, check, citation, notice, paper, ts
from tests.paths import DATA
from tests.resolver_doubles import (
    CITED,
    CITING,
    DOI,
    METHOD,
    OIDS,
    OTHER,
    ListCatalogue,
    cited,
    decide,
    doi_work,
    known_work,
    paper_works,
    seed_world,
)
from tests.waiting import wait_until

FIXTURE = DATA / "2509.02480.record.json"


class World:
    """A ledger where CITING cites: the title of CITED (an arXiv paper the ledger holds), a DOI the
    catalogue knows, a title nobody knows, and OTHER's DOI-less work by an unresolved resolution."""

    def __init__(self, db: str) -> None:
        self.clock = Clock()
        self.ledger = Ledger(db, clock=self.clock)
        seed_world(self.ledger)
        # the DOI's work stands at a catalogue event of its own
        first = self.ledger.store.read_log(limit=1)[0]
        self.catalogue = ListCatalogue([*paper_works(self.ledger), known_work(first)])
        self.clock.advance(10_000_000)

    def resolve(self, papers: list[str] | None = None, dry_run: bool = False) -> Summary:
        self.clock.advance()
        return resolve(self.ledger, papers, decide=decide, catalogue=self.catalogue, method=METHOD,
                       dry_run=dry_run)  # fmt: skip

    def resolutions(self) -> dict[str, ResolutionData]:
        out = {}
        for e in self.ledger.store.read_log(type="resolution.observed"):
            d = decode_data(e.type, e.data)
            out[d.observation_id] = d
        return out


@pytest.fixture
def world(new_db: NewDb) -> World:
    return World(new_db("resolve.db"))


def test_a_run_resolves_what_the_catalogue_knows_and_says_how(world: World) -> None:
    s = world.resolve([CITING])
    assert (s.examined, s.unchanged, s.appended) == (4, 1, 3)
    assert s.changed() == {"unresolved": 1, "verified_exact": 2}
    got = world.resolutions()
    by_title = got[OIDS[0]]
    assert by_title.status == "verified_exact" and by_title.resolver_source == "citation-ledger/" + METHOD
    assert by_title.cited_arxiv_id == CITED and by_title.cited_work is not None
    assert by_title.cited_work.arxiv_id == CITED and by_title.cited_work.metadata_source == "arxiv"
    assert by_title.cited_work.work_id == str(
        uuid.uuid5(WORK_ID_NAMESPACE, f"https://doi.org/10.48550/arxiv.{CITED}")
    )
    by_doi = got[OIDS[1]]
    assert by_doi.cited_work is not None and by_doi.cited_work.doi == DOI and by_doi.cited_arxiv_id is None
    assert by_doi.cited_work.venue == "J. Tests" and by_doi.cited_work.snapshot_observed_at == ts(0)
    assert by_doi.cited_work.work_id == str(uuid.uuid5(uuid.NAMESPACE_URL, f"https://doi.org/{DOI}"))
    assert isinstance(by_doi.evidence, Evidence) and by_doi.evidence.method == "identifier"
    assert got[OIDS[2]].status == "unresolved" and got[OIDS[2]].cited_work is None
    assert got[OIDS[3]].resolver_source == "no resolver link"  # unresolved before, unresolved now: kept
    e = world.ledger.store.read_log(type="resolution.observed")[-1]
    assert read_instant(e.observed_at, "observed_at", world.clock.us) == world.clock.us


def test_a_rerun_appends_nothing(world: World) -> None:
    world.resolve()
    head = world.ledger.head()
    again = world.resolve()
    assert world.ledger.head() == head
    assert (again.examined, again.appended, again.changes) == (2, 0, [])  # the verified two are not revisited


def test_a_dry_run_writes_nothing_and_says_what_would_change(world: World) -> None:
    head = world.ledger.head()
    s = world.resolve(dry_run=True)
    assert world.ledger.head() == head and s.appended == 0
    assert sorted((c.observation_id, c.after) for c in s.changes) == [
        (OIDS[0], "verified_exact"), (OIDS[1], "verified_exact"), (OIDS[2], "unresolved")]  # fmt: skip


def test_the_record_before_a_resolution_is_byte_identical_after_it(world: World) -> None:
    instants = [
        read_instant(ts(1), "t", world.clock.us),
        read_instant(ts(2), "t", world.clock.us),
        world.clock.us,
    ]
    before = [world.ledger.record_bytes(CITING, t)[0] for t in instants]
    world.resolve()
    assert [world.ledger.record_bytes(CITING, t)[0] for t in instants] == before
    now = world.ledger.record_bytes(CITING)[0]
    assert now != before[-1] and b"catalogue_seq" not in now and b"runner_up" not in now
    assert b"citation-ledger/" + METHOD.encode() in now


def test_a_person_is_never_overridden(world: World) -> None:
    resolve_by_person(world.ledger, OIDS[0], choice("Ada Lovelace", clear=True), world.catalogue)
    resolve_by_person(world.ledger, OIDS[2], choice("Ada Lovelace", doi="https://doi.org/10.1000/Known"),
                      world.catalogue)  # fmt: skip
    world.resolve()
    got = world.resolutions()
    cleared, picked = got[OIDS[0]], got[OIDS[2]]
    assert cleared.resolver_source == "person:Ada Lovelace" and cleared.status == "unresolved"
    assert cleared.cited_work is not None and cleared.cited_work.work_id is None
    assert picked.status == "verified_exact" and picked.cited_work is not None
    assert picked.cited_work.doi == DOI and picked.resolver_source == "person:Ada Lovelace"


def test_a_person_naming_a_work_the_catalogue_does_not_know_gets_a_fuzzy_match(world: World) -> None:
    resolve_by_person(world.ledger, OIDS[2], choice("Bo", arxiv_id="arXiv:2401.00009v2"), world.catalogue)
    got = world.resolutions()[OIDS[2]]
    assert got.status == "verified_fuzzy" and got.cited_arxiv_id == "2401.00009"
    assert got.cited_work is not None and got.cited_work.title == "Accessed: 2025-06"


@pytest.mark.parametrize(
    ("args", "field"),
    [
        ({"by": ""}, "by"),
        ({"by": "x\x00"}, "by"),
        ({"by": "x" * 101}, "by"),
        ({"by": "x"}, "doi"),
        ({"by": "x", "doi": "10.1/a", "clear": True}, "doi"),
        ({"by": "x", "doi": "nonsense"}, "doi"),
        ({"by": "x", "arxiv_id": "nonsense"}, "arxiv_id"),
    ],
)
def test_a_person_choice_is_refused_naming_the_field(args: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidEvent) as caught:
        choice(**args)
    assert caught.value.where == field


def test_a_person_names_an_observation_that_exists(world: World) -> None:
    with pytest.raises(NotFound, match="no observation"):
        resolve_by_person(world.ledger, str(uuid.UUID(int=99)), choice("Bo", clear=True), world.catalogue)


def test_unknown_papers_are_refused_and_nothing_written(world: World) -> None:
    head = world.ledger.head()
    with pytest.raises(InvalidEvent, match="2999.00001") as caught:
        world.resolve([CITING, "2999.00001"])
    assert caught.value.where == "papers" and world.ledger.head() == head


def test_the_cited_arxiv_paper_lists_the_citing_paper_as_inbound(world: World) -> None:
    record, _, _ = world.ledger.record(CITED)
    assert record.inbound == []
    world.resolve()
    record, _, _ = world.ledger.record(CITED)
    citing = [(o.observation_id, o.citation.citing_paper) for o in record.inbound]
    assert [(oid, None if p is None else p.arxiv_id) for oid, p in citing] == [(OIDS[0], CITING)]


def test_standing_checks_cover_the_newly_resolved_doi(world: World) -> None:
    before = works_matching(world.ledger.store, [DOI], world.ledger.clock.now_us())
    world.resolve()
    after = works_matching(world.ledger.store, [DOI], world.ledger.clock.now_us())
    assert before == {DOI: []} and after == {
        DOI: [str(uuid.uuid5(uuid.NAMESPACE_URL, f"https://doi.org/{DOI}"))]
    }


def test_a_work_the_ledger_holds_keeps_its_work_id(world: World) -> None:
    world.ledger.append(
        [citation(str(uuid.UUID(int=50)), OTHER, ts(3), 0, cited("A known work", DOI, "w-held"))]
    )
    world.resolve()
    got = world.resolutions()[OIDS[1]]
    assert got.cited_work is not None and got.cited_work.work_id == "w-held"


def test_a_watch_on_the_citing_paper_is_alerted_for_a_notice_the_resolved_work_has(world: World) -> None:
    world.ledger.append([
        citation(str(uuid.UUID(int=50)), OTHER, ts(3), 0, cited("A known work", DOI, "w-held")),
        check("retraction_watch", ts(4), ["w-held"], [notice("w-held")]),
    ])  # fmt: skip
    watch, covered = al.add_watch(world.ledger.store, world.ledger.clock, parse_watch({"arxiv_id": CITING}))
    assert "w-held" not in covered
    assert world.ledger.store.alerts.alerts(watch.id, 0, 100) == []
    world.resolve()
    alerts = [json.loads(a.body) for a in world.ledger.store.alerts.alerts(watch.id, 0, 100)]
    assert [(a["work"]["work_id"], a["notice"]["kind"]) for a in alerts] == [("w-held", "retraction")]
    resolved = next(
        e.seq for e in world.ledger.store.read_log(type="resolution.observed") if OIDS[1].encode() in e.data
    )
    assert alerts[0]["event"]["type"] == "standing.checked" and alerts[0]["event"]["seq"] < resolved
    assert alerts[0]["known_before"] == {"seq": alerts[0]["event"]["seq"], "resolution_seq": resolved}


def test_evidence_is_absent_when_absent_so_old_events_keep_their_bytes() -> None:
    old = ResolutionData(OIDS[0], "unresolved", "no resolver link", None, None)
    expected = (
        b'{"cited_arxiv_id":null,"cited_work":null,"observation_id":"' + OIDS[0].encode()
        + b'","resolver_source":"no resolver link","status":"unresolved"}'
    )  # fmt: skip
    assert canonical(old) == expected
    batch = parse_input(FIXTURE.read_bytes())
    resolutions = [e for e in batch.events if type(e.data) is ResolutionData]
    assert resolutions and all(b"evidence" not in canonical(e.data) for e in resolutions)
    for e in resolutions:
        raw = canonical(e.data)
        assert canonical(decode_data("resolution.observed", raw)) == raw


def test_the_watch_resolves_again_only_after_the_catalogue_grows(world: World) -> None:
    runs: list[Summary] = []
    polls = iter([False, False, "grow", False, True])

    def wait() -> bool:
        step = next(polls)
        if step == "grow":
            world.ledger.append([paper("2101.00004", ts(5), title="Accessed: 2025-06")])
            world.catalogue.works = paper_works(world.ledger)
            return False
        return bool(step)

    n = jobs.watch(world.ledger, lambda: world.resolve(), runs.append, wait)
    assert n == 2 and [r.appended for r in runs] == [3, 1]
    assert world.resolutions()[OIDS[2]].cited_arxiv_id == "2101.00004"


OWNER = "a" * 64  # a token's sha256, as the API keys jobs by
ALL = {"all": True, "dry_run": False}


def test_jobs_run_one_at_a_time_and_keep_a_bounded_number(new_db: NewDb) -> None:
    started: list[Any] = []
    db = new_db()
    kept = jobs.Jobs(Ledger(db), keep=2, spawn=started.append)
    first, new = kept.start(lambda: Summary(examined=1), OWNER, ALL)
    second, again = kept.start(lambda: Summary(examined=2), OWNER, ALL)
    assert new == "new" and again == "running" and second == first and first.state == "running"
    started.pop()()
    done = kept.get(first.id, OWNER)
    assert done is not None and done.state == "done" and done.summary is not None
    assert done.summary["examined"] == 1 and done.finished_at is not None

    def broken() -> Summary:
        raise InvalidEvent("papers", "no such paper")

    failed, _ = kept.start(broken, OWNER, ALL)
    started.pop()()
    got = kept.get(failed.id, OWNER)
    assert got is not None and got.state == "failed" and got.error is not None
    assert got.error["code"] == "invalid"
    third, _ = kept.start(lambda: Summary(), OWNER, ALL)
    started.pop()()
    assert kept.get(first.id, OWNER) is None and kept.get(third.id, OWNER) is not None  # the oldest went


def test_every_process_over_a_ledger_answers_for_its_jobs_and_runs_one_at_a_time(new_db: NewDb) -> None:
    """Two server processes (two Ledgers over one database): a job started by one is polled from the
    other, and the other cannot start a second while it runs."""
    db = new_db()
    started: list[Any] = []
    one, other = jobs.Jobs(Ledger(db), spawn=started.append), jobs.Jobs(Ledger(db), spawn=started.append)
    job, _ = one.start(lambda: Summary(examined=7), OWNER, ALL)
    polled = other.get(job.id, OWNER)
    assert polled is not None and polled.state == "running"
    same, new = other.start(lambda: Summary(), OWNER, ALL)
    assert new == "running" and same.id == job.id and len(started) == 1
    started.pop()()
    polled = other.get(job.id, OWNER)
    assert polled is not None and polled.state == "done" and polled.summary is not None
    assert polled.summary["examined"] == 7


def test_a_job_whose_process_stopped_fails_and_lets_the_next_run(new_db: NewDb) -> None:
    """A process killed mid-job stops beating its row: past STALE_S the job is failed, saying so."""
    db, clock = new_db(), Clock()
    started: list[Any] = []
    killed = jobs.Jobs(Ledger(db, clock=clock), spawn=started.append)
    job, _ = killed.start(lambda: Summary(), OWNER, ALL)
    started.clear()  # the process died before its thread ran: nothing will finish or beat this job
    later = jobs.Jobs(Ledger(db, clock=clock), spawn=started.append)
    clock.advance(round(jobs.STALE_S * 1e6) - 1)
    assert later.start(lambda: Summary(), OWNER, ALL)[0].id == job.id  # not yet stale: still the one running
    clock.advance(2)
    fresh, new = later.start(lambda: Summary(), OWNER, ALL)
    assert new == "new" and fresh.id != job.id
    gone = later.get(job.id, OWNER)
    assert gone is not None and gone.state == "failed" and gone.error is not None
    assert gone.error["code"] == "stopped"


def test_a_running_job_beats_while_its_run_lasts(new_db: NewDb) -> None:
    """The thread running a job beats its row, so no other process takes it for stopped."""
    db, clock = new_db(), Clock()
    ledger = Ledger(db, clock=clock)
    started: list[Any] = []
    runner = jobs.Jobs(ledger, spawn=started.append, beat_s=0.01)
    jid: list[str] = []

    def long_run() -> Summary:
        # past the staleness limit, in the test's clock: the run is still going, and says so
        at = clock.advance(round(jobs.STALE_S * 1e6) * 2)
        wait_until(lambda: _beat_of(ledger, jid[0]) == at, "the job's row beaten at the new instant")
        taken, new = jobs.Jobs(Ledger(db, clock=clock)).start(lambda: Summary(), OWNER, ALL)
        assert new == "running" and taken.id == jid[0]  # another process sees it running, not stopped
        return Summary()

    job, _ = runner.start(long_run, OWNER, ALL)
    jid.append(job.id)
    started.pop()()
    done = runner.get(job.id, OWNER)
    assert done is not None and done.state == "done"


def _beat_of(ledger: Ledger, job_id: str) -> int | None:
    row = ledger.store.jobs.job(job_id, OWNER)
    return None if row is None else row.beat_us


# -- rules, over any answers a matcher may give ---------------------------------------------------

_ANSWERS = st.tuples(
    st.sampled_from(
        ["verified_exact", "verified_fuzzy", "unresolved", "metadata_mismatch", "parse_uncertain"]
    ),
    st.sampled_from([None, "paper", "doi"]),
)


def _scripted(answers: list[tuple[str, str | None]], works: dict[str, Any]) -> Any:
    """A matcher answering each observation (by its index in OIDS) as scripted."""

    def decide_scripted(inputs: Any, catalogue: Any) -> list[Decision]:
        out = []
        for ref in inputs:
            status, which = answers[OIDS.index(ref.observation_id)]
            work = None if which is None else works[which]
            seq = None if work is None else work.seq
            out.append(Decision(status, work, Evidence("scripted", seq, 1, [], [], None)))  # type: ignore[arg-type]
        return out

    return decide_scripted


@settings(
    max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(first=st.lists(_ANSWERS, min_size=4, max_size=4), later=st.lists(_ANSWERS, min_size=4, max_size=4),
       person=st.sampled_from(OIDS))  # fmt: skip
def test_any_answers_keep_the_rules(
    tmp_path_factory: pytest.TempPathFactory, first: list[Any], later: list[Any], person: str
) -> None:
    """Whatever the matcher answers: a re-run with the same answers appends nothing, a person's
    resolution is never changed, the record before a run is unchanged by it, and only an answer that
    differs from the latest resolution is appended."""
    w = World(str(tmp_path_factory.mktemp("rules") / "rules.db"))
    works = {"paper": w.catalogue.works[1], "doi": w.catalogue.works[-1]}

    def run(answers: list[Any]) -> Summary:
        w.clock.advance()
        return resolve(w.ledger, None, decide=_scripted(answers, works), catalogue=w.catalogue, method=METHOD)

    run(first)
    head = w.ledger.head()
    assert run(first).appended == 0 and w.ledger.head() == head
    resolve_by_person(w.ledger, person, choice("Ada", clear=True), w.catalogue)
    mine = w.resolutions()[person]
    t = w.clock.us
    before = w.ledger.record_bytes(CITING, t)[0]
    latest = w.resolutions()
    s = run(later)
    assert w.resolutions()[person] == mine
    assert w.ledger.record_bytes(CITING, t)[0] == before
    for c in s.changes:
        old = latest.get(c.observation_id)
        new = c.event.data
        assert old is None or (old.status, old.cited_work and old.cited_work.work_id) != (
            new.status, new.cited_work and new.cited_work.work_id)  # fmt: skip
        assert old is None or old.status not in ("verified_exact", "verified_fuzzy")
    w.ledger.close()


@pytest.mark.parametrize(
    ("source", "doi", "arxiv_id", "expected"),
    [
        ("arxiv", None, "2101.00002", "2101.00002"),
        ("crossref", "10.48550/arXiv.2101.00002", "2101.00002", "2101.00002"),
        ("crossref", "10.1109/sc41405.2020.00024", "1910.02054", None),  # a journal version and its preprint
        ("crossref", "10.1000/x", None, None),
    ],
)
def test_only_an_arxiv_paper_is_a_cited_arxiv_id(
    source: str, doi: str | None, arxiv_id: str | None, expected: str | None
) -> None:
    work = doi_work(1, ts(0), doi or "", "T")._replace(source=source, doi=doi, arxiv_id=arxiv_id)
    assert arxiv_paper(work) == expected


def test_a_source_checked_after_the_resolution_covers_the_resolved_doi(world: World) -> None:
    """sources-v1.md: the resolved DOI is a key a Retraction Watch ingest matches on; before the
    resolution the reference had no DOI of its own, so no check covered it."""
    rw_doi = "10.5555/j.cell.2019.05.031"  # a retracted paper of tests/data/sources/retraction_watch.csv
    oid = str(uuid.UUID(int=60))
    world.ledger.append(
        [citation(oid, CITING, ts(3), 9, cited("Spatial transcriptomic atlas of an invented organ"))]
    )
    first = world.ledger.store.read_log(limit=1)[0]
    world.catalogue.works.append(
        doi_work(first.seq, first.observed_at, rw_doi, "Spatial transcriptomic atlas of an invented organ")
    )
    watch, _ = al.add_watch(world.ledger.store, world.ledger.clock, parse_watch({"arxiv_id": CITING}))
    world.resolve()
    work_id = world.resolutions()[oid].cited_work.work_id  # type: ignore[union-attr]
    csv = (FIXTURE.parent / "sources" / "retraction_watch.csv").read_bytes()
    ingest(world.ledger, SourceFile("retraction-watch", csv, format_recorded(world.clock.advance())))
    check_ = decode_data("standing.checked", world.ledger.store.read_log(type="standing.checked")[-1].data)
    assert {n.kind for n in check_.notices if n.work_id == work_id} >= {"retraction"}
    alerts = [json.loads(a.body) for a in world.ledger.store.alerts.alerts(watch.id, 0, 100)]
    assert work_id in {a["work"]["work_id"] for a in alerts}
