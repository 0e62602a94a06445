"""A Retraction Watch file is the whole database: one that is broken or shrunk is refused whole.

A header alone (a download cut short), a row that cannot be read, a quote that swallows the rows after
it, or fewer than half the rows of the last file accepted: accepting any of them would write "checked,
no notice" over every real notice. Each is refused with nothing written, through `ledger ingest` and
through a real `ledger serve`; the retraction ingested before stays in the record and the Atom feed.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli.main import main
from service.ledger import Ledger
from service.sources import Refused, SourceFile, ingest, parse_source
from tests import raw
from tests.api_fixtures import Server, running_server
from tests.conftest import FIXTURE_ID, FIXTURE_PATH, NewDb, examples
from tests.old_layout import build_old_ledger, version_before
from tests.service.sources.test_sources_support import SOURCES_DIR

RW = (SOURCES_DIR / "retraction_watch.csv").read_bytes()
HEADER = RW.split(b"\n", 1)[0] + b"\n"  # with the export's BOM and trailing empty column
ROWS = list(csv.reader(io.StringIO(RW.decode("utf-8-sig"), newline="")))[1:]
REAL_ROW = ROWS[0]  # Record ID 48213: the retraction of the work the fixture's observation cites
T1, T2 = "2026-09-01T12:00:00Z", "2026-09-02T12:00:00Z"
OID = "ce9ea7f7-381d-48ca-ab94-cb46c01aba5f"  # the fixture's observation citing that work
TOKEN = "refusals-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def _csv(rows: list[list[str]], end: str = "\n") -> bytes:
    out = io.StringIO()
    csv.writer(out, lineterminator=end).writerows(rows)
    return out.getvalue().encode()


NAMES = HEADER.decode("utf-8-sig").strip().split(",")


def _filler(i: int) -> list[str]:
    """A readable row shaped like the fixture's that matches no work and needs no quote."""
    row = list(REAL_ROW)
    for name, value in (("Record ID", str(70000 + i)), ("Institution", "Nowhere"), ("Title", "No quotes")):
        row[NAMES.index(name)] = value
    row[NAMES.index("OriginalPaperDOI")] = f"10.5555/filler.{i}"
    return row


FILLER = _csv([_filler(i) for i in range(6)])
REAL = _csv([REAL_ROW])
UNCLOSED_TITLE = (
    b'99998,"An unclosed title,(B/T) Computer Science;,x,y,z,w,A. Nobody,,,1/1/2020,,0,,10.5555/x,0,'
    b"Retraction,+R;,No,,\n"
)
NOTES_OPEN = (
    b'99997,Notes left open,S,I,J,P,C,A,,,1/1/2020,,0,,10.5555/y,0,Retraction,+R;,No,"Notes never closed\n'
)

# (body, rule, line of the row named (line 1 is the header), why)
BROKEN = [
    pytest.param(HEADER, "no_readable_row", None, "a header alone", id="header-only"),
    pytest.param(HEADER + b"\n\n,,,\n", "no_readable_row", None, "a header alone", id="blank-lines-only"),
    pytest.param(
        HEADER + b"99999,A row cut short,Subject\n" + REAL + FILLER,
        "unreadable_row",
        2,
        "3 fields where the header has 21",
        id="short-row",
    ),
    pytest.param(
        HEADER + REAL + _csv([[*REAL_ROW, "extra"]]) + FILLER,
        "unreadable_row",
        3,
        "22 fields where the header has 21",
        id="long-row",
    ),
    pytest.param(
        HEADER + REAL + FILLER.replace(b"10.5555/filler.2", b"10.5555/filler.\xff2"),
        "unreadable_row",
        5,
        "OriginalPaperDOI holds bytes that are not UTF-8",
        id="doi-not-utf8",
    ),
    # the unclosed quote reads on to the next quote, in the real row below: not CSV there
    pytest.param(
        HEADER + UNCLOSED_TITLE + REAL + FILLER,
        "unreadable_row",
        2,
        "expected after",
        id="quote-runs-into-next",
    ),
    # no quote after it: the rest of the file would be one field
    pytest.param(
        HEADER + REAL + UNCLOSED_TITLE + FILLER,
        "unreadable_row",
        3,
        "unexpected end of data",
        id="quote-swallows-rest",
    ),
    # a lone quote further down closes it, with the header's number of fields: the rows are inside
    pytest.param(
        HEADER + REAL + NOTES_OPEN + FILLER + b'",\n',
        "unreadable_row",
        3,
        "field 20 (Notes) runs on over other rows",
        id="quote-closed-later",
    ),
]


def _retraction_in(record: dict[str, Any]) -> bool:
    [o] = [o for o in record["outbound"] if o["observation_id"] == OID]
    return any(
        e["kind"] == "retraction" and e["record_id"] == "48213" for e in o["standing_notice"]["events"]
    )


def _receipts(db: str) -> list[tuple[Any, ...]]:
    return raw.rows(
        db,
        "SELECT source, observed_at, sha256, bytes, rows_read, rows_matched, appended, seq "
        "FROM ingest_receipts ORDER BY id",
    )


# -- `ledger ingest` ------------------------------------------------------------------------------


def _cli(db: str, *args: str) -> Result:
    return CliRunner().invoke(main, [*args, "--db", db])


def _ingest(db: str, body: bytes, at: str, tmp_path: Path, *flags: str) -> Result:
    path = tmp_path / f"rw-{hashlib.sha256(body).hexdigest()[:8]}.csv"
    path.write_bytes(body)
    return _cli(db, "ingest", "retraction-watch", str(path), "--observed-at", at, *flags)


@pytest.fixture
def db(new_db: NewDb, tmp_path: Path) -> str:
    """A ledger holding the fixture record and the fixture's Retraction Watch file, accepted at T1."""
    path = new_db()
    assert _cli(path, "import", str(FIXTURE_PATH)).exit_code == 0
    first = _ingest(path, RW, T1, tmp_path)
    assert first.exit_code == 0, first.output
    return path


def _still_retracted(db: str) -> None:
    record = json.loads(_cli(db, "record", FIXTURE_ID).stdout)
    assert _retraction_in(record)


def test_a_normal_file_is_accepted_with_its_receipt(db: str, tmp_path: Path) -> None:
    head = Ledger(db).head()
    assert _receipts(db) == [
        ("retraction-watch", T1, hashlib.sha256(RW).hexdigest(), len(RW), 11, 1, 1, head.seq)
    ]
    again = _ingest(db, RW, T1, tmp_path)
    assert again.exit_code == 0 and "nothing new appended" in again.stdout
    # acknowledged again: a receipt of its own, naming the event already there
    assert _receipts(db)[1][-2:] == (0, head.seq) and Ledger(db).head() == head
    _still_retracted(db)


@pytest.mark.parametrize(("body", "rule", "line", "why"), BROKEN)
def test_a_broken_file_is_refused_whole_even_forced(
    db: str, tmp_path: Path, body: bytes, rule: str, line: int | None, why: str
) -> None:
    head, receipts = Ledger(db).head(), _receipts(db)
    r = _ingest(db, body, T2, tmp_path, "--force")
    assert r.exit_code == 1
    [message] = r.stderr.splitlines()
    assert "refused, nothing written" in message and rule in message and "force does not lift" in message
    assert why in message
    assert (f"line {line}:" in message) == (line is not None), message
    assert Ledger(db).head() == head and _receipts(db) == receipts
    _still_retracted(db)


def test_under_half_the_rows_is_refused_unless_forced(db: str, tmp_path: Path) -> None:
    head = Ledger(db).head()
    small = HEADER + _csv(ROWS[:5])  # 5 rows where the last file accepted had 11
    r = _ingest(db, small, T2, tmp_path)
    assert r.exit_code == 1
    [message] = r.stderr.splitlines()
    assert "under_half_the_last" in message and "5 rows" in message and "the 11 of the last" in message
    assert "--force or ?force=true accepts it" in message
    assert Ledger(db).head() == head
    _still_retracted(db)
    forced = _ingest(db, small, T2, tmp_path, "--force")
    assert forced.exit_code == 0, forced.output
    after = Ledger(db).head()
    assert after.seq == head.seq + 1
    assert _receipts(db)[-1] == (
        "retraction-watch", T2, hashlib.sha256(small).hexdigest(), len(small), 5, 1, 1, after.seq
    )  # fmt: skip
    _still_retracted(db)  # the real row was in the smaller file too
    # half of the last accepted (now 5) is the mark: 3 rows pass, 2 do not
    assert _ingest(db, HEADER + _csv(ROWS[:3]), "2026-09-03T12:00:00Z", tmp_path).exit_code == 0
    assert _ingest(db, HEADER + _csv(ROWS[:1]), "2026-09-04T12:00:00Z", tmp_path).exit_code == 1


def test_sources_that_are_not_the_whole_database_are_not_compared(db: str, tmp_path: Path) -> None:
    works = SOURCES_DIR / "crossref_works.json"
    for path in (works, SOURCES_DIR / "crossref_work.json"):  # five items, then one
        r = _cli(db, "ingest", "crossref", str(path), "--observed-at", T2)
        assert r.exit_code == 0, r.output
    assert [row[0] for row in _receipts(db)] == ["retraction-watch", "crossref", "crossref"]
    assert _receipts(db)[1][2:4] == (hashlib.sha256(works.read_bytes()).hexdigest(), works.stat().st_size)


# -- POST /ingest/retraction-watch on a real server ---------------------------------------------


@pytest.fixture(scope="module")
def server(db_factory: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, str]]:
    """One `ledger serve` for the module over the sample record, the fixture's file accepted at T1."""
    directory = tmp_path_factory.mktemp("refusals")
    db = db_factory(directory)
    with running_server(db, env={"LEDGER_TOKENS": TOKEN}, cwd=directory) as s:
        first = _post(s, RW, T1)
        assert first.status_code == 201, first.text
        yield s, db


def _post(server: Server, body: bytes, at: str, **params: str) -> httpx.Response:
    return httpx.post(
        f"{server.base}/ingest/retraction-watch",
        params={"observed_at": at, **params},
        content=body,
        headers=AUTH,
        timeout=30,
    )


def _head(server: Server) -> Any:
    return httpx.get(f"{server.base}/healthz", timeout=10).json()["head"]


def _still_retracted_served(server: Server) -> None:
    record = httpx.get(f"{server.base}/paper/{FIXTURE_ID}/citation-record.json", timeout=10)
    assert record.status_code == 200 and _retraction_in(record.json())
    feed = httpx.get(f"{server.base}/paper/{FIXTURE_ID}/alerts.atom", timeout=10)
    assert feed.status_code == 200 and "<title>retraction of" in feed.text


@pytest.mark.parametrize(("body", "rule", "line", "why"), BROKEN)
def test_the_server_refuses_a_broken_file_with_422(
    server: tuple[Server, str], body: bytes, rule: str, line: int | None, why: str
) -> None:
    s, db = server
    head, receipts = _head(s), _receipts(db)
    r = _post(s, body, T2)
    assert r.status_code == 422, r.text
    error = r.json()["error"]
    assert error["code"] == "invalid" and "refused" in error["message"] and why in error["message"]
    details = error["details"]
    assert (details["where"], details["rule"], details["line"], details["forceable"]) == (
        "file",
        rule,
        line,
        False,
    )
    assert _head(s) == head and _receipts(db) == receipts
    _still_retracted_served(s)


def test_the_server_takes_a_smaller_file_only_with_force(server: tuple[Server, str]) -> None:
    s, db = server
    head = _head(s)
    small = HEADER + _csv(ROWS[:5])
    r = _post(s, small, T2)
    assert r.status_code == 422, r.text
    details = r.json()["error"]["details"]
    assert (details["rule"], details["forceable"]) == ("under_half_the_last", True)
    assert "?force=true" in details["reason"]
    assert _head(s) == head
    _still_retracted_served(s)
    forced = _post(s, small, T2, force="true")
    assert forced.status_code == 201, forced.text
    assert forced.json()["read"] == 5 and _head(s)["seq"] == head["seq"] + 1
    assert _receipts(db)[-1][4:] == (5, 1, 1, head["seq"] + 1)
    _still_retracted_served(s)


# -- what is still read: the rules refuse broken files, not the export's own quirks ------------

_NO_TRAILING = HEADER.rstrip(b"\n").removesuffix(b",") + b"\n"


@pytest.mark.parametrize(
    ("body", "read"),
    [
        pytest.param(RW, 11, id="fixture-with-a-note-over-two-lines"),
        pytest.param(HEADER + _csv([REAL_ROW[:-1], *ROWS[1:3]]), 3, id="trailing-column-left-out"),
        pytest.param(
            _NO_TRAILING + _csv([r[:-1] for r in ROWS[:2]] + [ROWS[2]]), 3, id="trailing-column-added"
        ),
        pytest.param(
            HEADER + REAL + FILLER.replace(b"No quotes", b"Caf\xe9 au lait"), 7, id="latin1-in-title"
        ),
        pytest.param(HEADER + REAL + b"\n\n" + FILLER + b",,,\n", 7, id="blank-lines-between"),
        pytest.param(HEADER.replace(b"\n", b"\r\n") + REAL.replace(b"\n", b"\r\n"), 1, id="crlf"),
    ],
)
def test_rows_the_rules_still_read(fresh_ledger: Ledger, body: bytes, read: int) -> None:
    fresh_ledger.import_bytes(FIXTURE_PATH.read_bytes())
    parsed = parse_source(fresh_ledger, SourceFile("retraction-watch", body, T1))
    assert parsed.summary.read == read and parsed.summary.matched == 1


_TEXT = st.text(alphabet=st.sampled_from(['"', ",", "\n", "\r", "a", "é", " ", ";", "+"]), max_size=12)


@settings(
    max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(notes=st.lists(_TEXT.filter(lambda t: t.count(",") < len(NAMES) - 2), min_size=1, max_size=8))
def test_any_file_a_csv_writer_writes_is_read_whole(fresh_ledger: Ledger, notes: list[str]) -> None:
    """Quotes, commas and line breaks in fields, as a writer quotes them, never make a row unreadable
    (the writer's own line end, CRLF: a bare CR left unquoted is a broken file, and is refused)."""
    rows = [_filler(i) for i in range(len(notes))]
    for row, note in zip(rows, notes, strict=True):
        row[NAMES.index("Title")] = row[NAMES.index("Notes")] = note
    parsed = parse_source(fresh_ledger, SourceFile("retraction-watch", HEADER + _csv(rows, "\r\n"), T1))
    assert parsed.summary.read == len(rows)


def test_the_receipts_step_upgrades_an_existing_ledger(imported_ledger: Ledger, new_db: NewDb) -> None:
    old = new_db("old.db")
    build_old_ledger(old, version_before(old, "ingest_receipts"), imported_ledger)
    ledger = Ledger(old)  # migrates the older schema
    summary = ingest(ledger, SourceFile("retraction-watch", RW, T1))
    assert summary.appended == 1 and _receipts(old) == [
        ("retraction-watch", T1, hashlib.sha256(RW).hexdigest(), len(RW), 11, 1, 1, ledger.head().seq)
    ]
    with pytest.raises(Refused, match="no_readable_row"):
        ingest(ledger, SourceFile("retraction-watch", HEADER, T2))
