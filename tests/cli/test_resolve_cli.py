"""`ledger resolve` (cli/resolve.py): a run's summary, --dry-run, a person's resolution, --watch, and
refusals of options that do not go together."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from cli.main import cli_user, main
from service.ledger import Ledger
from tests.api_fixtures import ledger_command
from tests.conftest import NewDb
from tests.factories import Clock, paper, ts
from tests.resolver_doubles import (
    CITED,
    CITING,
    DOI,
    OIDS,
    OTHER,
    live_resolver,
    seed_world,
)

SLICE = Path(__file__).parent.parent / "data" / "resolver-dev-slice"


class Cli:
    """A ledger where CITING cites CITED's title, a DOI the catalogue knows and a title nobody knows,
    and `ledger` run in this process with the test double for the resolver."""

    def __init__(self, db: str) -> None:
        self.db = db
        self.clock = Clock()
        self.ledger = Ledger(db, clock=self.clock)
        seed_world(self.ledger)
        self.resolver = live_resolver(self.ledger.store.read_log(stream=f"paper:{OTHER}", limit=1)[0])
        self.clock.advance(10_000_000)

    def run(self, *args: str, **obj: Any) -> Result:
        self.clock.advance()
        return CliRunner().invoke(main, ["resolve", *args, "--db", self.db],
                                  obj={"resolver": self.resolver, "ledger": self.ledger, **obj})  # fmt: skip


@pytest.fixture
def cli(new_db: NewDb) -> Cli:
    return Cli(new_db())


def test_a_run_prints_what_it_examined_and_changed(cli: Cli) -> None:
    r = cli.run("--paper", CITING)
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert lines[0] == "examined 4, changed 3 (unresolved 1, verified_exact 2), unchanged 1"
    assert lines[1:] == [
        f"  {CITING} [0] {OIDS[0]}: no resolution -> verified_exact -> arXiv:{CITED}",
        f"  {CITING} [1] {OIDS[1]}: no resolution -> verified_exact -> {DOI}",
        f"  {CITING} [2] {OIDS[2]}: no resolution -> unresolved",
    ]
    again = cli.run("--all")
    assert again.output == "examined 2, changed 0 (none), unchanged 2\n"


def test_a_dry_run_appends_nothing(cli: Cli) -> None:
    head = cli.ledger.head()
    r = cli.run("--all", "--dry-run")
    assert r.exit_code == 0 and r.output.startswith("examined 4, would change 3 (")
    assert cli.ledger.head() == head


def test_a_person_resolves_and_the_resolver_keeps_it(cli: Cli) -> None:
    r = cli.run("--observation", OIDS[1], "--none", "--by", "Ada Lovelace")
    assert r.exit_code == 0, r.output
    seq = cli.ledger.head().seq
    assert r.output == f"resolved {OIDS[1]} by person:Ada Lovelace (seq {seq})\n"
    out = cli.run("--paper", CITING).output
    assert OIDS[1] not in out and out.startswith("examined 3, changed 2")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((), "give --paper ID (repeatable) or --all"),
        (("--all", "--paper", CITING), "give --paper ID (repeatable) or --all"),
        (("--paper", CITING, "--watch"), "--watch goes with --all"),
        (("--all", "--watch", "--dry-run"), "--watch goes with --all"),
        (("--all", "--doi", DOI), "need --observation"),
        (("--observation", OIDS[0], "--all", "--by", "A", "--none"), "a person's resolution takes"),
        (("--observation", OIDS[0], "--by", "A"), "--doi/--arxiv/--none: give exactly one"),
        (("--observation", OIDS[0], "--none"), "--by: a person's resolution needs --by NAME"),
        (("--paper", "2999.00001"), "no paper '2999.00001'"),
        (("--paper", "not-an-id"), "--paper"),
    ],
)
def test_options_that_do_not_go_together_are_refused_and_nothing_written(
    cli: Cli, args: tuple[str, ...], message: str
) -> None:
    head = cli.ledger.head()
    r = cli.run(*args)
    assert r.exit_code == 1 and message in r.output, r.output
    assert cli.ledger.head() == head


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (("--none",), "error: --by: a person's resolution needs --by NAME (the person's name)"),
        (("--by", "A"), "error: --doi/--arxiv/--none: give exactly one (--none: the reference names no"),
        (("--by", "A", "--none", "--doi", DOI), "error: --doi/--arxiv/--none: give exactly one"),
        (("--by", "A", "--doi", "not a doi"), "error: --doi: a DOI: 10.<prefix>/<suffix>"),
        (("--by", "A", "--arxiv", "x"), "error: --arxiv: bad arXiv id 'x'"),
        (("--by", " ", "--none"), "error: --by: a person's name, 1 to 100 characters"),
        (("--by", "A\x07", "--none"), "error: --by: a person's name holds no control"),
    ],
)
def test_a_persons_refusals_name_the_flags_not_the_apis_fields(
    cli: Cli, args: tuple[str, ...], said: str
) -> None:
    head = cli.ledger.head()
    r = cli.run("--observation", OIDS[0], *[a.replace("\\x07", "\x07") for a in args])
    assert r.exit_code == 1 and r.output.startswith(said), r.output
    for field in ("error: by:", "error: doi:", "arxiv_id", "observation_id", "doi, arxiv_id and none"):
        assert field not in r.output
    assert cli.ledger.head() == head


def test_an_unknown_observation_is_refused_naming_the_flag(cli: Cli) -> None:
    r = cli.run("--observation", str(uuid.UUID(int=99)), "--by", "A", "--none")
    assert r.exit_code == 1 and r.output.startswith("error: --observation: no observation"), r.output
    r = cli.run("--explain", str(uuid.UUID(int=99)))
    assert r.exit_code == 1 and r.output.startswith("error: --explain: no observation"), r.output
    r = cli.run("--explain", OIDS[0], "--all")
    assert r.exit_code == 1 and "--explain: takes an observation id and no other option" in r.output


@pytest.mark.process
def test_explain_says_in_words_how_the_real_resolver_decided(new_db: NewDb) -> None:
    db = new_db()

    def ledger(*args: str) -> str:
        done = subprocess.run(
            [*ledger_command(), *args, "--db", db], capture_output=True, text=True, timeout=120
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    ledger("import", str(SLICE / "refs.ndjson"))
    ledger("ingest", "works", str(SLICE / "works.ndjson"), "--observed-at", "2026-09-01T00:00:00Z")
    ledger("resolve", "--paper", "2601.00001")
    lines = ledger("resolve", "--explain", "54fe237b-9e7a-59a7-8127-7021cdb0f188").splitlines()
    assert lines[1:8] == [
        "As given (the reference as its source gave it):",
        "  Adams, D. J. (1976). Calculating the low temperature vapour line by Monte Carlo. Molecular "
        "Physics, 32(3), 647–657.",
        "Status: verified exact",
        "Resolved by: this ledger's resolver (method sbmv+guards, version 3)",
        "Method: title, first author and year agree (the title word for word), and no other work has all "
        "three",
        lines[6],
        lines[7],
    ]
    assert (
        lines[6].startswith("Score: ") and " of 117 points; a match found by searching needs 52" in lines[6]
    )
    assert "  AGREED    year: found in the text | 1976" in lines
    assert "  ABSENT    DOI: - | 10.1080/00268977600102101 (not found in the reference)" in lines
    [runner] = [line for line in lines if line.startswith("Runner-up: ")]
    assert runner.startswith(
        "Runner-up: “Calculating the high-temperature vapour line by Monte Carlo” (1979)"
    )
    assert "points below the chosen work" in runner
    wrong = ledger("resolve", "--explain", "907a1ba3-b5b6-50e5-b0f1-65391f6fa2eb").splitlines()
    assert "  DISAGREED year: another in the text | 1976" in wrong


def test_watch_resolves_again_after_the_catalogue_grows_and_stops_on_ctrl_c(cli: Cli) -> None:
    steps = iter(["grow", "idle", "stop"])

    def wait() -> bool:
        step = next(steps)
        if step == "grow":
            cli.ledger.append([paper("2101.00004", ts(5), title="Accessed: 2025-06")])
        if step == "stop":
            raise KeyboardInterrupt
        return False

    r = cli.run("--all", "--watch", watch_wait=wait)
    assert r.exit_code == 0, r.output
    summaries = [line for line in r.output.splitlines() if line.startswith("examined")]
    assert summaries == [
        "examined 4, changed 3 (unresolved 1, verified_exact 2), unchanged 1",
        "examined 2, changed 1 (verified_exact 1), unchanged 1",
    ]
    assert "stopped" in r.output


@pytest.mark.process
def test_the_program_refuses_an_unknown_paper_naming_it(new_db: NewDb) -> None:
    db = new_db()
    Ledger(db).append([paper(CITING, ts(0))])
    done = subprocess.run([*ledger_command(), "resolve", "--paper", "2999.00001", "--db", db],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert done.returncode == 1 and done.stderr == "error: --paper: no paper '2999.00001' in this ledger\n"


def test_the_resolvers_and_a_persons_appends_are_recorded_as_the_cli_users(cli: Cli) -> None:
    assert cli.run("--paper", CITING).exit_code == 0
    assert cli.run("--observation", OIDS[2], "--none", "--by", "Ada Lovelace").exit_code == 0
    rows = cli.ledger.store.writers.rows_between(1, 2**62)
    assert [(r.writer, r.via) for r in rows] == [(f"cli:{cli_user()}", "ledger resolve")] * 2
    assert rows[-1].last_seq == cli.ledger.head().seq
