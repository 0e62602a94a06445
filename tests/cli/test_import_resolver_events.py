"""`ledger import` of resolutions that claim the ledger's own resolver or a person: refused by default,
naming the line (or the record's place) and the flag, with nothing written, even when the claim is on
a line past the first batch; taken with `--keep-resolver-events` (moving a ledger), each write recorded
as the CLI user's."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import msgspec
import pytest
from click.testing import CliRunner

from cli.main import cli_user, main
from ledger.model.codec import event_to_dict
from ledger.model.events import Event
from service.ledger import Ledger
from tests import factories as fx
from tests.conftest import FIXTURE_PATH, NewDb

FLAG = "--keep-resolver-events"


def _ndjson(path: Path, resolver: str, papers: int = 6) -> Path:
    """Papers each citing the one before and resolved to it; the last resolution names `resolver`."""
    events: list[Event] = []
    for i in range(papers):
        pid = f"2101.{i + 1:05d}"
        events.append(fx.paper(pid, fx.ts(i), title=f"Paper {i}"))
        if i:
            oid = fx.oid_of(i)
            events.append(fx.citation(oid, pid, fx.ts(i, 1)))
            source = resolver if i == papers - 1 else "local_arxiv"
            events.append(fx.resolution(oid, fx.ts(i, 2), cited_arxiv=f"2101.{i:05d}", resolver=source))
    path.write_bytes(b"".join(msgspec.json.encode(event_to_dict(e)) + b"\n" for e in events))
    return path


def _import(db: str, *args: str) -> tuple[int, str]:
    r = CliRunner().invoke(main, ["import", *args, "--db", db, "--batch-size", "2"])
    return r.exit_code, r.output


@pytest.mark.parametrize("resolver", ["citation-ledger/title-author-year/1", "person:Ada Lovelace"])
def test_an_ndjson_file_claiming_the_resolver_is_refused_whole_without_the_flag(
    new_db: NewDb, tmp_path: Path, resolver: str
) -> None:
    path = _ndjson(tmp_path / "moved.ndjson", resolver)
    db = new_db()
    code, out = _import(db, str(path))
    assert code == 1
    # the last line claims it; the file is refused before its first batch of two is written
    assert f"{path}: refused, nothing written: line 16.data.resolver_source: " in out
    assert FLAG in out
    ledger = Ledger(db)
    try:
        assert ledger.head().seq == 0 and ledger.store.writers.rows_between(1, 2**62) == []
    finally:
        ledger.close()


def test_the_flag_takes_them_and_each_batch_names_the_cli_user(new_db: NewDb, tmp_path: Path) -> None:
    path = _ndjson(tmp_path / "moved.ndjson", "citation-ledger/title-author-year/1")
    db = new_db()
    code, out = _import(db, str(path), FLAG)
    assert code == 0, out
    assert f"{path}: 16 appended, 0 duplicate (head seq 16)" in out
    ledger = Ledger(db)
    try:
        rows = ledger.store.writers.rows_between(1, 2**62)
        assert [(r.first_seq, r.last_seq) for r in rows] == [(s, s + 1) for s in range(1, 17, 2)]
        assert {(r.writer, r.via) for r in rows} == {(f"cli:{cli_user()}", "ledger import")}
    finally:
        ledger.close()


def test_a_record_claiming_a_person_is_refused_naming_its_place_and_taken_with_the_flag(
    new_db: NewDb, tmp_path: Path
) -> None:
    record = copy.deepcopy(json.loads(FIXTURE_PATH.read_bytes()))
    record["outbound"][4]["resolution"]["resolver_source"] = "person:Mallory"
    path = tmp_path / "record.json"
    path.write_text(json.dumps(record))
    db = new_db()
    code, out = _import(db, str(path), "--force")
    assert code == 1 and "outbound[4].resolution.resolver_source: 'person:Mallory' claims a person" in out
    assert FLAG in out
    code, out = _import(db, str(path), "--force", FLAG)
    assert code == 0 and " appended, 0 duplicate" in out, out


def test_a_works_ingest_is_recorded_as_the_cli_users(new_db: NewDb) -> None:
    db = new_db()
    works = Path(__file__).parent.parent / "data" / "works" / "crossref-works.json"
    r = CliRunner().invoke(
        main, ["ingest", "works", str(works), "--observed-at", "2026-11-01T00:00:00Z", "--db", db]
    )
    assert r.exit_code == 0, r.output
    ledger = Ledger(db)
    try:
        rows = ledger.store.writers.rows_between(1, 2**62)
        assert [(r.first_seq, r.last_seq, r.writer, r.via) for r in rows] == [
            (1, 2, f"cli:{cli_user()}", "ledger ingest")
        ]
    finally:
        ledger.close()
