"""A reference the resolver cannot read is that reference's outcome, never the run's: `unresolved` with
the reason in the evidence's optional `error`, and not examined again by the same version. And what a
run examines (resolver-v1.md "Resolving"): the statuses it revisits, and its own answers made under
another version, never another source's or a person's."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Sequence
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from msgspec import UNSET

from cli.main import main
from ledger.model.codec import canonical, decode_data
from ledger.model.events import ResolutionData, ResolutionObserved
from ledger.model.resolving import Decision, RefInput
from ledger.model.works import Evidence, Reference
from service.ledger import Ledger
from service.resolver import bounds, match
from service.resolver.parse import SettingError, text_cap
from service.resolver.run import RESOLVER_PREFIX, Summary, pending, resolve
from tests.conftest import NewDb
from tests.factories import Clock, citation, resolution, ts
from tests.resolver_doubles import CITING, METHOD, OIDS, cited, decide, seed_world
from tests.service.resolver.catalogue_fake import FakeCatalogue
from tests.service.resolver.sample_works import BERT, CATALOGUE
from tests.service.resolver.test_resolver_run import World

# the reference of the issue: a page range of 4,400 digits, past Python's limit for int()
DIGITS = "pp. " + "7" * 4400 + "-8"
SOURCE = RESOLVER_PREFIX + METHOD
LIMIT = "Exceeds the limit (4300 digits) for integer string conversion"


def test_a_page_range_of_thousands_of_digits_is_read_not_raised() -> None:
    line = "Smith J. A known work. J. Tests 1, 3 (2020)."
    refs = [RefInput(OIDS[0], Reference(unstructured=DIGITS), None),
            RefInput(OIDS[1], Reference(unstructured=line), None)]  # fmt: skip
    decisions = match.resolve_many(refs, FakeCatalogue(CATALOGUE))
    assert [d.status for d in decisions][0] == "unresolved"
    assert all(isinstance(d.evidence, Evidence) for d in decisions)


def test_a_reference_whose_reading_raises_is_unresolved_with_the_reason(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    real = match.read

    def read(inp: RefInput) -> Any:
        if inp.observation_id == OIDS[1]:
            raise ValueError(LIMIT)
        return real(inp)

    monkeypatch.setattr(match, "read", read)
    line = f"Devlin J, Chang M, Lee K, Toutanova K. {BERT.title}. arXiv preprint, {BERT.year}."
    refs = [RefInput(oid, Reference(unstructured=line), None) for oid in OIDS[:3]]
    alone = match.resolve_many([refs[0]], FakeCatalogue(CATALOGUE))
    decisions = match.resolve_many(refs, FakeCatalogue(CATALOGUE))
    assert decisions[0] == decisions[2] == alone[0]  # the others as if it were not there
    assert alone[0].status in ("verified_exact", "verified_fuzzy")
    failed = decisions[1]
    assert (failed.status, failed.work) == ("unresolved", None)
    assert (
        failed.evidence.error == "ValueError: Exceeds the limit (4300 digits) for integer string conversion"
    )


class Poisoned:
    """The doubles' matcher, raising for the whole batch whenever the batch holds `poison` (as an
    exception in any one reference would), and counting how often it was asked about it."""

    def __init__(self, poison: str, error: Exception | None = None) -> None:
        self.poison = poison
        self.error = error or RuntimeError("the matcher cannot read this reference")
        self.asked = 0

    def __call__(self, refs: Sequence[RefInput], catalogue: Any) -> list[Decision]:
        if any(r.observation_id == self.poison for r in refs):
            self.asked += 1
            raise self.error
        return decide(refs, catalogue)


def _run(world: World, matcher: Any, method: str = METHOD) -> Summary:
    world.clock.advance()
    return resolve(world.ledger, None, decide=matcher, catalogue=world.catalogue, method=method)


def test_one_reference_raising_fails_itself_never_the_run(world: World) -> None:
    poisoned = Poisoned(OIDS[2])
    s = _run(world, poisoned)
    assert (s.examined, s.appended) == (4, 3)
    got = world.resolutions()
    assert [got[o].status for o in OIDS[:2]] == ["verified_exact", "verified_exact"]
    bad = got[OIDS[2]]
    assert (bad.status, bad.cited_work, bad.resolver_source) == ("unresolved", None, SOURCE)
    assert isinstance(bad.evidence, Evidence)
    assert bad.evidence.error == "RuntimeError: the matcher cannot read this reference"
    assert poisoned.asked >= 1
    # the next run of the same version does not examine it again (nor the verified two)
    asked = poisoned.asked
    again = _run(world, poisoned)
    assert (again.examined, again.appended, poisoned.asked) == (1, 0, asked)
    # another version does, and records that it could read it
    newer = _run(world, decide, method="double/2")
    assert OIDS[2] in {c.observation_id for c in newer.changes}
    fresh = world.resolutions()[OIDS[2]]
    assert isinstance(fresh.evidence, Evidence) and fresh.evidence.error is UNSET


def test_a_failure_of_the_database_ends_the_run_and_writes_nothing(world: World) -> None:
    head = world.ledger.head()
    with pytest.raises(sqlite3.OperationalError, match="disk I/O error"):
        _run(world, Poisoned(OIDS[2], sqlite3.OperationalError("disk I/O error")))
    assert world.ledger.head() == head


@pytest.mark.parametrize(
    "stop",
    [
        pytest.param(bounds.Cancelled("the resolve was stopped: its client went away"), id="client-gone"),
        pytest.param(bounds.OverBudget(10, 5.0), id="over-budget"),
        pytest.param(bounds.Busy(2, 5.0), id="no-slot"),
    ],
)
def test_a_run_told_to_stop_ends_and_no_reference_is_failed(world: World, stop: Exception) -> None:
    # a stop of the run meets every reference alike: failing each one instead would keep them from
    # being examined again until the version changes
    head, before = world.ledger.head(), world.resolutions()
    with pytest.raises(type(stop)):
        _run(world, Poisoned(OIDS[2], stop))
    assert world.ledger.head() == head
    assert world.resolutions() == before


def test_a_failure_is_written_as_an_optional_key_and_old_evidence_keeps_its_bytes() -> None:
    plain = Evidence("search-validate", None, 0, [], [], None)
    assert b"error" not in canonical(plain)
    expected = b'{"agreed":[],"catalogue_seq":null,"disagreed":[],"method":"search-validate",'
    assert canonical(plain) == expected + b'"runner_up":null,"score":0}'
    data = ResolutionData(
        OIDS[0], "unresolved", SOURCE, None, None, Evidence("error", None, 0, [], [], None, "E: x")
    )
    raw = canonical(data)
    assert b'"error":"E: x"' in raw and canonical(decode_data("resolution.observed", raw)) == raw


# what a run of SOURCE examines, by the latest resolution of an observation
OLDER, OTHER_METHOD = RESOLVER_PREFIX + "double/0", RESOLVER_PREFIX + "other/1"
SELECTED = [
    pytest.param(None, True, id="none yet"),
    pytest.param(("verified_exact", OLDER, False), True, id="own answer, older version"),
    pytest.param(("unresolved", OLDER, True), True, id="own failure, older version"),
    pytest.param(("verified_fuzzy", OTHER_METHOD, False), True, id="own prefix, other method"),
    pytest.param(("verified_exact", SOURCE, False), False, id="own answer, this version"),
    pytest.param(("unresolved", SOURCE, False), True, id="own unresolved, this version"),
    pytest.param(("metadata_mismatch", SOURCE, False), True, id="own mismatch, this version"),
    pytest.param(("unresolved", SOURCE, True), False, id="own failure, this version"),
    pytest.param(("verified_exact", "local_arxiv", False), False, id="another source's verified"),
    pytest.param(("unresolved", "no resolver link", False), True, id="another source's unresolved"),
    pytest.param(("verified_exact", "person:Ada", False), False, id="a person's verified"),
    pytest.param(("unresolved", "person:Ada", False), False, id="a person's unresolved"),
]


@pytest.mark.parametrize(("latest", "examined"), SELECTED)
def test_a_run_examines_its_own_older_answers_never_another_sources(
    new_db: NewDb, latest: tuple[str, str, bool] | None, examined: bool
) -> None:
    ledger = Ledger(new_db(), clock=Clock())
    seed_world(ledger)
    oid = str(uuid.UUID(int=99))
    events: list[Any] = [citation(oid, CITING, ts(3), 9, cited("A line"))]
    if latest is not None:
        status, source, error = latest
        if error:
            evidence = Evidence("error", None, 0, [], [], None, "RuntimeError: x")
            data = ResolutionData(oid, status, source, None, None, evidence)  # type: ignore[arg-type]
            events.append(ResolutionObserved(observed_at=ts(4), data=data))
        else:
            events.append(resolution(oid, ts(4), status, resolver=source, cited=cited("A line")))
    ledger.append(events, resolver_events=True)  # as the resolver or a person's route appends them
    chosen = {p.observation_id for p in pending(ledger, [CITING], ledger.clock.now_us(), SOURCE)}
    assert (oid in chosen) == examined


@pytest.fixture
def world(new_db: NewDb) -> World:
    return World(new_db("resolve.db"))


@pytest.mark.parametrize(("raw", "cap"), [(None, 4096), ("", 4096), ("256", 256), (" 10000 ", 10000)])
def test_the_text_cap_is_a_setting_with_a_default(raw: str | None, cap: int) -> None:
    assert text_cap(raw, match.ENV_MAX_TEXT, match.DEFAULT_MAX_TEXT) == cap


@pytest.mark.parametrize("raw", ["abc", "255", "0", "-5", "1e4", "9" * 40])
def test_a_text_cap_that_is_no_cap_is_refused_naming_the_setting(raw: str) -> None:
    with pytest.raises(SettingError, match="LEDGER_RESOLVER_MAX_TEXT must be a whole number"):
        text_cap(raw, match.ENV_MAX_TEXT, match.DEFAULT_MAX_TEXT)


def test_a_reference_is_read_up_to_the_cap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(match, "max_text", lambda: 300)
    title = BERT.title or ""
    late = RefInput(OIDS[0], Reference(unstructured=" " * 300 + title), None)
    early = RefInput(OIDS[1], Reference(unstructured=title + " " * 300), None)
    assert len(match.reference_text(late)[0]) == 300 and title not in match.reference_text(late)[0]
    decisions = match.resolve_many([late, early], FakeCatalogue(CATALOGUE))
    assert [d.work for d in decisions] == [None, BERT]


def test_a_bad_setting_ends_the_run_not_each_reference(world: World, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(match.ENV_MAX_TEXT, "12")
    match.max_text.cache_clear()
    try:
        head = world.ledger.head()
        with pytest.raises(SettingError, match="LEDGER_RESOLVER_MAX_TEXT"):
            _run(world, match.resolve_many)
        assert world.ledger.head() == head
    finally:
        monkeypatch.delenv(match.ENV_MAX_TEXT)
        match.max_text.cache_clear()


def test_the_cli_says_a_bad_setting_in_one_line(monkeypatch: pytest.MonkeyPatch, new_db: NewDb) -> None:
    monkeypatch.setenv(match.ENV_MAX_TEXT, "abc")
    match.max_text.cache_clear()
    try:
        db = new_db()
        seed_world(Ledger(db))
        got = CliRunner().invoke(main, ["resolve", "--all", "--db", db])
        assert got.exit_code == 1 and got.output.strip().splitlines() == [
            "Error: LEDGER_RESOLVER_MAX_TEXT must be a whole number of characters, at least 256, got 'abc'"
        ]
    finally:
        monkeypatch.delenv(match.ENV_MAX_TEXT)
        match.max_text.cache_clear()


HOSTILE_PIECES = [
    " ", "\n", "\t", "|", "7", "77777", "-", "\u2013", "pp. ", "doi:", "10.1234/", "arxiv", "arXiv:", "abs/",
    "(", ")", "]", "O", "l", "accessed", "part ", "II", ": ", "et al", "\u0663", "\u00ad", "\u202e", "\x00",
    "\ud7ff", "ſ", "K", "\u0130", "Correction to: ", "vol. 12, no. 3, pp. 123-130", " (2019)",
]  # fmt: skip
hostile_texts = st.one_of(
    st.text(max_size=300),
    st.lists(st.sampled_from(HOSTILE_PIECES), max_size=60).map("".join),
    st.tuples(st.sampled_from(HOSTILE_PIECES), st.integers(1, 3000)).map(lambda t: t[0] * t[1]),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(hostile_texts, min_size=1, max_size=4))
def test_no_reference_text_makes_the_matcher_raise(lines: list[str]) -> None:
    refs = [
        RefInput(str(uuid.UUID(int=n)), Reference(unstructured=line), None) for n, line in enumerate(lines)
    ]
    decisions = match.resolve_many(refs, FakeCatalogue(CATALOGUE))
    assert len(decisions) == len(refs)
    assert all(d.evidence.error is UNSET for d in decisions), [d.evidence.error for d in decisions]
