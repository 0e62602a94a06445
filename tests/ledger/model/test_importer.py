"""Import: the record decomposition, digest checks, self-contradiction, NDJSON and batch files."""

from __future__ import annotations

import copy
import json
from typing import TYPE_CHECKING, Any

import pytest

from ledger.model import events as ev
from ledger.model.codec import canonical, digest
from ledger.model.errors import InvalidEvent
from ledger.model.importer import parse_input, record_to_batch
from service.ledger import Ledger

if TYPE_CHECKING:
    from tests.conftest import NewDb


def _redigest(rec: dict[str, Any]) -> dict[str, Any]:
    """Recompute every digest so only the rule under test can refuse the record."""
    for lane in ("outbound", "inbound"):
        for o in rec[lane]:
            o["observation_digest"] = digest({k: v for k, v in o.items() if k != "observation_digest"})
    rec["context_digest"] = digest({k: v for k, v in rec.items() if k not in ("as_of", "context_digest")})
    return rec


def test_decomposition_counts_and_order(fixture_record: dict[str, Any]) -> None:
    batch = record_to_batch(fixture_record)
    kinds = [type(e).__name__ for e in batch.events]
    assert kinds[0] == "PaperObserved"
    assert kinds.count("CitationObserved") == 56 and kinds.count("ResolutionObserved") == 56
    assert kinds[-2:] == ["StandingChecked", "StandingChecked"]
    checks = [e for e in batch.events[-2:] if isinstance(e, ev.StandingChecked)]
    # sorted by instant: retraction_watch (06:31:55) before crossref (06:32:00)
    assert [c.data.source for c in checks] == ["retraction_watch", "crossref"]
    measured = [o for o in fixture_record["outbound"] if o["standing_notice"]["state"] == "measured"]
    assert checks[0].data.work_ids == sorted({o["citation"]["cited_work"]["work_id"] for o in measured})
    # 16 cited paper snapshots + the paper itself (the citing_paper block is not written twice)
    assert kinds.count("PaperObserved") == 18 - 1 + 1


def test_raw_parse_work_rides_on_citation_resolved_work_on_resolution(fixture_record: dict[str, Any]) -> None:
    batch = record_to_batch(fixture_record)
    by_place = dict(zip(batch.places, batch.events, strict=True))

    def cited_work(place: str) -> ev.CitedWork | None:
        event = by_place[place]
        assert isinstance(
            event, ev.CitationObserved if place.endswith(".citation") else ev.ResolutionObserved
        )
        return event.data.cited_work

    raw = next(
        i
        for i, o in enumerate(fixture_record["outbound"])
        if o["citation"]["cited_work"]["snapshot_observed_at"] == o["citation"]["source_observed_at"]
    )
    bound = next(
        i
        for i, o in enumerate(fixture_record["outbound"])
        if o["citation"]["cited_work"]["snapshot_observed_at"] != o["citation"]["source_observed_at"]
    )
    assert cited_work(f"outbound[{raw}].citation") is not None
    assert cited_work(f"outbound[{raw}].resolution") is None
    assert cited_work(f"outbound[{bound}].citation") is None
    assert cited_work(f"outbound[{bound}].resolution") is not None


def test_reimport_appends_nothing(imported_ledger: Ledger, fixture_bytes: bytes) -> None:
    head = imported_ledger.head()
    result = imported_ledger.import_bytes(fixture_bytes)
    assert result.appended == 0 and result.duplicates == 132
    assert imported_ledger.head() == head


@pytest.mark.parametrize(
    "path",
    [
        ("outbound", 3, "citation", "title-edit"),
        ("context", None, None, "thesis-edit"),
    ],
)
def test_altered_record_refused_unless_forced(
    fresh_ledger: Ledger, fixture_record: dict[str, Any], path: tuple[Any, ...]
) -> None:
    rec = copy.deepcopy(fixture_record)
    if path[0] == "outbound":
        rec["outbound"][3]["citation"]["cited_work"]["title"] = "Altered"
        where = r"outbound\[3\]\.observation_digest"
    else:
        rec["thesis"] = rec["thesis"].replace("56 of 56", "55 of 56")
        where = "context_digest"
    with pytest.raises(InvalidEvent, match=where + ".*altered"):
        fresh_ledger.import_bytes(canonical(rec))
    assert fresh_ledger.head().seq == 0
    assert fresh_ledger.import_bytes(canonical(rec), force=True).appended == 132


def _break(rec: dict[str, Any], case: str) -> None:
    o = rec["outbound"][2]
    if case == "pending-with-observed_at":
        o["resolution"]["status"] = "pending"
    elif case == "pending-with-resolver":
        o["resolution"].update(status="pending", observed_at=None)
    elif case == "notice-not-among-receipts":
        o["standing_notice"]["events"] = [_notice(o, "crossref", "2020-01-01T00:00:00Z")]
    elif case == "same-notice-twice":
        receipt = o["standing_notice"]["source_receipts"][0]
        n = _notice(o, receipt["source"], receipt["observed_at"])
        o["standing_notice"]["events"] = [n, dict(n)]
    elif case == "bad-status":
        o["resolution"]["status"] = "verified_maybe"
    elif case == "float-index":
        o["citation"]["reference_index"] = 2.0
    elif case == "bad-timestamp":
        o["citation"]["source_observed_at"] = "2026-08-05 11:38:36"
    elif case == "unknown-field":
        o["citation"]["extra"] = 1
    elif case == "bad-uuid":
        o["observation_id"] = o["observation_id"].upper()


def _notice(o: dict[str, Any], source: str, at: str) -> dict[str, Any]:
    return {
        "work_id": o["citation"]["cited_work"]["work_id"],
        "kind": "retraction",
        "notice_doi": None,
        "record_id": None,
        "raw_type": "Retraction",
        "reasons": [],
        "notice_date": None,
        "url": None,
        "observed_at": at,
        "source": source,
    }


@pytest.mark.parametrize(
    ("case", "where"),
    [
        ("pending-with-observed_at", r"outbound\[2\]\.resolution\.observed_at"),
        ("pending-with-resolver", r"outbound\[2\]\.resolution\.resolver_source"),
        (
            "notice-not-among-receipts",
            r"outbound\[2\]\.standing_notice\.events\[0\]: .*not among the receipts",
        ),
        ("same-notice-twice", r"outbound\[2\]\.standing_notice\.events\[1\]: the same notice"),
        ("bad-status", r"outbound\[2\]\.resolution\.status"),
        ("float-index", r"outbound\[2\]\.citation\.reference_index: floats"),
        ("bad-timestamp", r"outbound\[2\]\.citation\.source_observed_at"),
        ("unknown-field", r"outbound\[2\]\.citation\.extra: contains unknown field"),
        ("bad-uuid", r"outbound\[2\]\.observation_id: bad UUID"),
    ],
)
def test_contradictory_or_malformed_record_refused_with_place(
    fresh_ledger: Ledger, fixture_record: dict[str, Any], case: str, where: str
) -> None:
    rec = copy.deepcopy(fixture_record)
    _break(rec, case)
    raw = json.dumps(_redigest(rec) if case != "float-index" else rec).encode()
    with pytest.raises(InvalidEvent, match=where):
        fresh_ledger.import_bytes(raw)
    assert fresh_ledger.head().seq == 0


def test_ndjson_envelopes(new_db: NewDb, imported_ledger: Ledger) -> None:
    fresh_ledger = Ledger(new_db("other.db"))
    lines = []
    for e in imported_ledger.store.read_log():
        lines.append(
            json.dumps(
                {
                    "type": e.type,
                    "observed_at": e.observed_at,
                    "data": json.loads(e.data),
                    "event_id": e.event_id,
                }
            )
        )
    raw = ("\n".join(lines) + "\n\n").encode()
    assert fresh_ledger.import_bytes(raw).appended == len(lines)
    t = 1_800_000_000_000_000
    a = imported_ledger.record_bytes("2509.02480", t)[0]
    b = fresh_ledger.record_bytes("2509.02480", t)[0]
    assert a == b


def test_ndjson_error_names_line(fresh_ledger: Ledger) -> None:
    raw = b'{"type": "paper.observed", "observed_at": "2026-01-01T00:00:00Z"}\n{nope\n'
    with pytest.raises(InvalidEvent, match=r"line 1\.data: missing required field"):
        fresh_ledger.import_bytes(raw)
    with pytest.raises(InvalidEvent, match=r"line 2: not valid JSON"):
        parse_input(json.dumps(_ENV).encode() + b"\n{nope\n")
    assert fresh_ledger.head().seq == 0


_ENV = {
    "type": "paper.observed",
    "observed_at": "2026-01-01T00:00:00Z",
    "data": {
        "arxiv_id": "2101.00001",
        "title": "T",
        "primary_category": None,
        "submitted_at": "2025-01-01T00:00:00Z",
        "last_updated": "2025-01-01T00:00:00Z",
        "version": 1,
    },
}


def test_batch_object_and_list(fresh_ledger: Ledger) -> None:
    env = _ENV
    assert len(parse_input(json.dumps([env, env]).encode()).events) == 2
    batch = parse_input(json.dumps({"events": [env], "expected_versions": {"paper:2101.00001": 0}}).encode())
    assert batch.expected_versions == {"paper:2101.00001": 0}
    assert fresh_ledger.append_batch(batch).appended == 1
    with pytest.raises(InvalidEvent, match="expected_versions"):
        parse_input(json.dumps({"events": [env], "expected_versions": {"paper:x": "1"}}).encode())


@pytest.mark.parametrize("force", [False, True])
@pytest.mark.parametrize("redigest", [False, True])
def test_an_edited_paper_id_is_refused_naming_the_field(
    fresh_ledger: Ledger, fixture_record: dict[str, Any], force: bool, redigest: bool
) -> None:
    """Each citation carries its own citing paper: a changed paper.arxiv_id would make an empty record."""
    rec = copy.deepcopy(fixture_record)
    rec["paper"]["arxiv_id"] = "2509.99999"
    raw = json.dumps(_redigest(rec) if redigest else rec).encode()
    with pytest.raises(
        InvalidEvent, match=r"^outbound\[0\]\.citation\.citing_paper\.arxiv_id: .*'2509\.99999'"
    ):
        fresh_ledger.import_bytes(raw, force=force)
    assert fresh_ledger.head().seq == 0


def test_an_outbound_link_to_another_paper_is_refused(
    fresh_ledger: Ledger, fixture_record: dict[str, Any]
) -> None:
    """With no citing_paper block, links.citing_paper names the citing paper and must be this one."""
    rec = copy.deepcopy(fixture_record)
    o = rec["outbound"][3]
    o["citation"]["citing_paper"] = None
    o["links"]["citing_paper"] = "/paper/2401.00001"
    with pytest.raises(InvalidEvent, match=r"^outbound\[3\]\.links\.citing_paper: names paper '2401\.00001'"):
        fresh_ledger.import_bytes(json.dumps(_redigest(rec)).encode())
    assert fresh_ledger.head().seq == 0


@pytest.mark.parametrize(
    ("body", "found"),
    [
        (b'{"title": "A paper", "authors": []}', "found a JSON object with keys 'authors', 'title'"),
        (
            b'{\n  "arxiv_id": "2509.02480",\n  "refs": []\n}\n',
            "found a JSON object with keys 'arxiv_id', 'refs'",
        ),
        (b"{}", "found an empty JSON object"),
        (b'"2509.02480"', "found a JSON string '2509.02480'"),
        (b"42", "found a JSON number 42"),
    ],
)
def test_a_file_that_is_not_a_record_says_what_was_expected(
    fresh_ledger: Ledger, body: bytes, found: str
) -> None:
    with pytest.raises(InvalidEvent) as caught:
        fresh_ledger.import_bytes(body)
    message = caught.value.message
    assert message.startswith(
        "expected a record (a JSON object whose schema is 'pith.paper-citation-record.v1')"
    )
    assert "or NDJSON envelopes" in message and message.endswith(found)
    assert fresh_ledger.head().seq == 0


def test_another_schema_is_named(fresh_ledger: Ledger) -> None:
    with pytest.raises(
        InvalidEvent, match=r"^schema: expected 'pith\.paper-citation-record\.v1' \(a record\), found 'v2'"
    ):
        fresh_ledger.import_bytes(b'{"schema": "v2"}')


def test_ledger_import_names_the_edited_field(
    new_db: NewDb, fixture_record: dict[str, Any], tmp_path
) -> None:
    """The command a user runs prints the field and writes nothing, --force or not."""
    from click.testing import CliRunner

    from cli.main import main

    rec = copy.deepcopy(fixture_record)
    rec["paper"]["arxiv_id"] = "2509.99999"
    edited = tmp_path / "edited.json"
    edited.write_text(json.dumps(rec))
    db = new_db()
    for force in ([], ["--force"]):
        result = CliRunner().invoke(main, ["import", *force, str(edited), "--db", db])
        assert result.exit_code == 1
        assert (
            "refused, nothing written: outbound[0].citation.citing_paper.arxiv_id: names paper"
            in result.output
        )
    assert "head seq 0" in result.output


def test_ledger_sample_prints_the_shipped_record_which_imports(new_db: NewDb) -> None:
    """A reader in an empty folder gets the sample record from the package, byte for byte."""
    from click.testing import CliRunner

    from cli.main import main
    from tests.conftest import FIXTURE_PATH

    printed = CliRunner().invoke(main, ["sample"]).stdout_bytes
    assert printed == FIXTURE_PATH.read_bytes()
    ledger = Ledger(new_db())
    assert ledger.import_bytes(printed).appended == 132
    ledger.close()


@pytest.mark.parametrize(
    ("cap", "value"), [("database_statements", 7), ("inbound", 50), ("outbound", 1000), ("outbound", "100")]
)
def test_caps_other_than_the_specs_are_refused_naming_the_cap(
    fixture_record: dict[str, Any], cap: str, value: Any
) -> None:
    """record-v1.md fixes the caps; a record that claims others is not one this ledger would build."""
    rec = copy.deepcopy(fixture_record)
    rec["caps"][cap] = value
    with pytest.raises(InvalidEvent, match=rf"^caps\.{cap}: "):
        record_to_batch(_redigest(rec))
