"""`ledger stats`: rows per table and the head, on the backend under test."""

from __future__ import annotations

import json

from click.testing import CliRunner

from cli.main import main
from service.ledger import Ledger


def test_stats_counts_the_events_and_names_the_head(imported_ledger: Ledger) -> None:
    out = CliRunner().invoke(main, ["stats", "--json", "--db", imported_ledger.url])
    assert out.exit_code == 0, out.output
    figures = json.loads(out.output)
    head = imported_ledger.head()
    assert figures["head"] == {"seq": head.seq, "hash": head.hash}
    assert figures["tables"]["events"] == 132
    tables = figures["tables"]
    held = len(list(imported_ledger.store.iter_check_works()))
    assert sum(n for name, n in tables.items() if name.startswith("check_works")) == held
    text = CliRunner().invoke(main, ["stats", "--db", imported_ledger.url]).output
    assert f"head seq {head.seq} hash {head.hash}" in text
    assert any(line.split() == ["events", "132"] for line in text.splitlines())


def test_stats_of_an_empty_ledger(fresh_ledger: Ledger) -> None:
    out = CliRunner().invoke(main, ["stats", "--json", "--db", fresh_ledger.url])
    assert out.exit_code == 0, out.output
    assert json.loads(out.output)["tables"]["events"] == 0
