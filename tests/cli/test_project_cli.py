"""`ledger project`: the projector alone, once: every projection brought to the head, where each one
stands printed; a second run has nothing left to do."""

from __future__ import annotations

from click.testing import CliRunner

from cli.main import main
from ledger.storage.projector import PROJECTIONS
from service.ledger import Ledger
from tests.conftest import NewDb
from tests.factories import citation, oid_of, paper, resolution, ts


def test_ledger_project_brings_every_projection_to_the_head(new_db: NewDb) -> None:
    db = new_db()
    ledger = Ledger(db, projector_max_lag=1_000_000)  # its appends leave the projecting to a projector
    try:
        ledger.append([paper("2101.00001", ts(0)), paper("2201.00001", ts(0, 1))])
        ledger.append([citation(oid_of(n), "2201.00001", ts(1, n), n) for n in range(30)])
        ledger.append([resolution(oid_of(n), ts(2, n), cited_arxiv="2101.00001") for n in range(30)])
        head = ledger.head().seq
        assert all(p.position(ledger.store) < head for p in PROJECTIONS)
        got = CliRunner().invoke(main, ["project", "--db", db])
        assert got.exit_code == 0, got.output
        each = ", ".join(f"{p.name} {head}" for p in PROJECTIONS)
        assert got.output == f"projected to seq {head} of head {head}: {each}\n"
        assert ledger.ops.projection_positions() == {p.name: head for p in PROJECTIONS}
        again = CliRunner().invoke(main, ["project", "--db", db])
        assert again.exit_code == 0 and again.output == got.output
    finally:
        ledger.close()
