"""Hostile input, round two: calendar edges, deep and non-interoperable JSON, damaged gzip, a PostgreSQL URL
without its driver. Each is a 4xx in the JSON error shape (or a one-line CLI error), with nothing written."""

from __future__ import annotations

import gzip
import json
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from api.app import create_app
from api.settings import Settings
from cli.main import main
from ledger.model import ijson
from ledger.model.codec import canonical
from ledger.model.errors import InvalidEvent
from service.ledger import Ledger
from tests.factories import citation, measurement, measurement_json, oid_of, paper, ts, work
from tests.paths import DATA
from tests.service.sources.test_sources_support import SOURCES_DIR, T_INGEST

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

TOKEN = "hostile-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
PAPER = "2509.02480"
AS_OF = "2026-08-08T08:47:00Z"
EDGES = ["9999-12-31T23:59:59-23:59", "0001-01-01T00:00:00+23:59"]
CROSSREF = (SOURCES_DIR / "crossref_work.json").read_bytes()


@pytest.fixture
def client(imported_ledger: Ledger) -> TestClient:
    """The whole app over a ledger holding the real record; server errors come back as answers."""
    app = create_app(Settings(db=imported_ledger.url, tokens=(TOKEN,)))
    return TestClient(app, raise_server_exceptions=False)


def _refused(r: Any, status: int = 422) -> dict[str, Any]:
    assert r.status_code == status, r.text
    body = r.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}, body
    error: dict[str, Any] = body["error"]
    return error


def _unchanged(ledger: Ledger, head: Any) -> None:
    assert ledger.head() == head
    assert ledger.verify().ok


def _measurement_body(**data: Any) -> dict[str, Any]:
    return {"events": [measurement_json(**data)]}


# -- 1. instants at the calendar's edges ----------------------------------------------------------


@pytest.mark.parametrize("edge", EDGES)
@pytest.mark.parametrize(
    "route, param",
    [
        (f"/paper/{PAPER}/citation-record.json", "as_of"),
        (f"/paper/{PAPER}/citation-record.json", "known_at"),
        (f"/paper/{PAPER}/integrity", "as_of"),
        (f"/paper/{PAPER}/changes", "from"),
        (f"/paper/{PAPER}/changes", "to"),
        ("/verify", "known_at"),
    ],
)
def test_an_instant_past_the_calendar_is_422_naming_the_parameter(
    client: TestClient, route: str, param: str, edge: str
) -> None:
    params = {"from": "2026-08-01", param: edge}
    if route == "/verify":
        r = client.post(
            route,
            params={param: edge},
            content=(DATA / "2509.02480.record.json").read_bytes(),
        )
    else:
        r = client.get(route, params=params)
    error = _refused(r)
    assert error["details"]["where"] == param
    assert "outside 0001-01-01T00:00:00Z..9999-12-31T23:59:59.999999Z" in error["message"]


@pytest.mark.parametrize("edge", EDGES)
def test_the_record_page_at_the_calendar_edge_is_a_422_page(client: TestClient, edge: str) -> None:
    r = client.get(f"/paper/{PAPER}/citation-record", params={"as_of": edge})
    assert r.status_code == 422 and "outside 0001-01-01" in r.text


@pytest.mark.parametrize("edge", EDGES)
def test_a_held_record_as_of_the_calendar_edge_is_422(
    client: TestClient, fixture_record: dict[str, Any], edge: str
) -> None:
    held = dict(fixture_record, as_of=edge)
    error = _refused(client.post("/verify", content=json.dumps(held)))
    assert "outside 0001-01-01" in error["message"]


@pytest.mark.parametrize("edge", EDGES)
@pytest.mark.parametrize(
    "args",
    [
        ["record", PAPER, "--as-of", "{edge}"],
        ["diff", PAPER, "{edge}", AS_OF],
        ["diff", PAPER, AS_OF, "{edge}"],
        ["bundle", PAPER, "--as-of", "{edge}", "--out", "b.json"],
    ],
)
def test_the_cli_names_an_instant_past_the_calendar(
    imported_ledger: Ledger, args: list[str], edge: str
) -> None:
    argv = [a.format(edge=edge) for a in args] + ["--db", imported_ledger.url]
    out = CliRunner().invoke(main, argv)
    assert out.exit_code == 2, out.output
    assert "outside 0001-01-01T00:00:00Z..9999-12-31T23:59:59.999999Z" in out.output
    assert out.exception is None or isinstance(out.exception, SystemExit)


def test_an_event_observed_past_the_calendar_is_refused(fresh_ledger: Ledger) -> None:
    with pytest.raises(InvalidEvent, match=r"events\[0\]\.observed_at: .* outside 0001-01-01"):
        fresh_ledger.append([paper("2101.00001", EDGES[1])])


# -- 1. bodies nested deeper than any record -------------------------------------------------------


DEEP = [
    b'{"events":' + b"[" * 1000 + b"]" * 1000 + b"}",
    b'{"events":[{"type":"paper.observed","observed_at":"2026-01-01T00:00:00Z","data":'
    + b'{"a":' * 100_000
    + b"1"
    + b"}" * 100_000
    + b"}]}",
    b"[" * 65 + b"]" * 65,
]


@pytest.mark.parametrize("body", DEEP, ids=["array-1000", "object-100000", "array-65"])
@pytest.mark.parametrize(
    "route",
    ["/events", "/records", "/verify", f"/ingest/crossref?observed_at={T_INGEST}"],
)
def test_a_deep_body_is_422(client: TestClient, imported_ledger: Ledger, route: str, body: bytes) -> None:
    head = imported_ledger.head()
    error = _refused(client.post(route, content=body, headers=AUTH))
    assert "nested" in error["message"] or "not a Crossref" in error["message"]
    _unchanged(imported_ledger, head)


def test_64_levels_are_still_json(client: TestClient) -> None:
    assert ijson.loads(b"[" * 64 + b"]" * 64) is not None
    error = _refused(client.post("/events", content=b"[" * 64 + b"]" * 64, headers=AUTH))
    assert "nested" not in error["message"]


# -- 1. a gzip body that ends early ----------------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        b"\x1f\x8b\x08\x00garbage",
        gzip.compress(CROSSREF)[:-12],  # cut before its end-of-stream marker
        gzip.compress(CROSSREF)[:-8] + b"\x00" * 8,  # a wrong CRC
    ],
    ids=["garbage", "truncated", "bad-crc"],
)
def test_a_damaged_gzip_body_is_422(client: TestClient, imported_ledger: Ledger, body: bytes) -> None:
    head = imported_ledger.head()
    r = client.post("/ingest/crossref", params={"observed_at": T_INGEST}, content=body, headers=AUTH)
    error = _refused(r)
    assert error["details"]["where"] == "file"
    _unchanged(imported_ledger, head)


def test_a_gzip_bomb_of_one_value_is_422_not_memory(client: TestClient, imported_ledger: Ledger) -> None:
    """40 MB of one title, 40 kB gzipped: refused once it expands past 100 times its size, not read to
    the end (a value past 32 MiB is refused too, for a body compressed less)."""
    bomb = gzip.compress(b'{"message": {"title": "' + b"a" * (40 * 1024 * 1024) + b'"}}')
    assert len(bomb) < 100_000
    head = imported_ledger.head()
    r = client.post("/ingest/crossref", params={"observed_at": T_INGEST}, content=bomb, headers=AUTH)
    error = _refused(r)
    assert "expands more than 100 times its size" in error["message"]
    assert "LEDGER_MAX_EXPANSION" in error["message"]
    _unchanged(imported_ledger, head)


# -- 3. Interoperable JSON (ledger-v1.md): refused on every write route and in ledger import --------

# (name, the body's event JSON with one thing wrong, the place named)
NOT_IJSON = [
    ("duplicate-key", '"value": 5, "value": 6', "events[0].data.value", "duplicate object key"),
    ("two-to-the-64", '"value": 18446744073709551616', "events[0].data.value", "2^53-1"),
    ("two-to-the-53", '"value": 9007199254740992', "events[0].data.value", "2^53-1"),
    ("minus-two-to-the-53", '"value": -9007199254740992', "events[0].data.value", "2^53-1"),
    ("nul-in-string", '"value": 4, "source": "open\\u0000alex"', "events[0].data.source", "U+0000"),
    ("lone-surrogate", '"value": 4, "source": "open\\ud800alex"', "events[0].data.source", "surrogate"),
    ("nan", '"value": NaN', "events[0].data.value", "NaN"),
]


def _events_text(fragment: str) -> str:
    body = _measurement_body()
    text = json.dumps(body).replace('"value": 4', fragment, 1)
    if "source" in fragment:
        text = text.replace('"source": "openalex", ', "", 1)
    return text


@pytest.mark.parametrize("name, fragment, where, reason", NOT_IJSON, ids=[n[0] for n in NOT_IJSON])
def test_post_events_refuses_what_is_not_ijson(
    client: TestClient, imported_ledger: Ledger, name: str, fragment: str, where: str, reason: str
) -> None:
    head = imported_ledger.head()
    error = _refused(client.post("/events", content=_events_text(fragment), headers=AUTH))
    assert error["details"]["where"] == where, error
    assert reason in error["message"]
    _unchanged(imported_ledger, head)


@pytest.mark.parametrize("name, fragment, where, reason", NOT_IJSON, ids=[n[0] for n in NOT_IJSON])
def test_ledger_import_refuses_ndjson_that_is_not_ijson(
    imported_ledger: Ledger, tmp_path: Path, name: str, fragment: str, where: str, reason: str
) -> None:
    line = json.dumps(_measurement_body()["events"][0])
    bad = _events_text(fragment)
    bad_line = bad[len('{"events": [') : -2]
    path = tmp_path / "events.ndjson"
    path.write_text(
        line.replace('"observed_at": "2026-11-01T00:00:00Z"', '"observed_at": "2026-11-02T00:00:00Z"')
        + "\n"
        + bad_line
        + "\n"
    )
    head = imported_ledger.head()
    out = CliRunner().invoke(main, ["import", str(path), "--db", imported_ledger.url])
    assert out.exit_code != 0 and "refused, nothing written" in out.output, out.output
    assert f"line 2.{where.removeprefix('events[0].')}" in out.output and reason in out.output
    _unchanged(imported_ledger, head)


def test_2_to_the_53_minus_1_is_the_largest_integer_taken(client: TestClient) -> None:
    r = client.post("/events", content=_events_text('"value": 9007199254740991'), headers=AUTH)
    assert r.status_code == 201, r.text


def test_an_escaped_backslash_before_u0000_is_not_a_nul(client: TestClient, imported_ledger: Ledger) -> None:
    r = client.post("/events", content=json.dumps(_measurement_body(source="open\\u0000alex")), headers=AUTH)
    assert r.status_code == 201, r.text
    assert imported_ledger.store.read_log(imported_ledger.head().seq - 1)[0].data.count(b"\\\\u0000") == 1


def test_post_records_refuses_a_duplicate_key_by_its_record_place(
    client: TestClient, imported_ledger: Ledger, fixture_bytes: bytes
) -> None:
    text = fixture_bytes.decode().replace(
        '"reference_index":1,', '"reference_index":1,"reference_index":2,', 1
    )
    assert text != fixture_bytes.decode()
    head = imported_ledger.head()
    error = _refused(client.post("/records", content=text, headers=AUTH))
    assert error["details"]["where"].endswith(".reference_index") and "duplicate" in error["message"]
    _unchanged(imported_ledger, head)


def test_post_verify_refuses_a_duplicate_key(client: TestClient, fixture_bytes: bytes) -> None:
    text = fixture_bytes.decode().replace('"as_of":', '"as_of":"2026-08-08T08:47:00Z","as_of":', 1)
    error = _refused(client.post("/verify", content=text))
    assert error["details"]["where"] == "as_of"


@pytest.mark.parametrize(
    "event, where",
    [
        (measurement(PAPER, ts(1), 2**53), "events[0].data.value"),
        (paper("2101.00001", ts(1), title="nul\x00here"), "events[0].data.title"),
        (paper("2101.00001", ts(1), version=2**60), "events[0].data.version"),
        (citation(oid_of(1), "2101.00001", ts(1), index=2**53), "events[0].data.reference_index"),
        (
            citation(oid_of(1), "2101.00001", ts(1), cited=work("w\x00", ts(1))),
            "events[0].data.cited_work.work_id",
        ),
    ],
    ids=["big-value", "nul-title", "big-version", "big-index", "nul-work-id"],
)
def test_events_built_in_code_are_held_to_the_same_rules(
    fresh_ledger: Ledger, event: Any, where: str
) -> None:
    """Source adapters build events from files, not from a parsed body: the append checks them too."""
    with pytest.raises(InvalidEvent) as refused:
        fresh_ledger.append([event])
    assert refused.value.where == where
    assert fresh_ledger.head().seq == 0


@pytest.mark.parametrize(
    "text",
    ['{"a": 1.5, "b": }', '{"a": 9007199254740992, "b"', '{"a": NaN, ', '{"a": 1, "a": 2, "b": [}'],
    ids=["float-then-cut", "big-int-then-cut", "nan-then-cut", "duplicate-then-cut"],
)
def test_a_refused_value_before_a_syntax_error_is_still_not_json(text: str) -> None:
    """The fast parse stops at the first refused value; the text after it must still be JSON."""
    with pytest.raises(InvalidEvent, match="^body: not valid JSON"):
        ijson.loads(text, "body")


@pytest.mark.parametrize(
    "stored, place",
    [
        ('{"a":"x","b":"y\\u0000"}', "b"),
        ('{"k\\u0000":1}', "'k\\x00'"),
        # an escaped backslash before "u0000", and a big integer: both storable
        ('{"a":"\\\\u0000","b":18446744073709551616}', None),
        ('{"a":1}', None),
    ],
)
def test_nul_place_names_only_a_real_u0000(stored: str, place: str | None) -> None:
    """What `ledger migrate` and the append ask of stored bytes: U+0000 only, whatever else is there."""
    assert ijson.nul_place(stored) == place
    assert ijson.nul_place(stored.encode()) == place


def test_one_parse_names_the_first_problem_in_document_order() -> None:
    with pytest.raises(InvalidEvent, match=r"^a\[1\]\.b: a duplicate"):
        ijson.loads('{"a":[1,{"b":2,"b":3}],"c":1.5}')
    with pytest.raises(InvalidEvent, match=r"^c: floats"):
        ijson.loads('{"a":[1,{"b":2}],"c":1.5,"d":"\\u0000"}')
    with pytest.raises(InvalidEvent, match="not UTF-8"):
        ijson.loads(b'{"a":"\xff"}')
    # a surrogate pair is one character, not a lone surrogate
    assert ijson.loads('"\\ud83d\\ude00"') == "\U0001f600"
    # brackets inside strings are not nesting
    assert ijson.loads(json.dumps({"a": "[" * 100 + "{" * 100, "b": ["]" * 70]}))


# -- 3. `ledger migrate` to PostgreSQL stops before copying, naming the seqs ----------------------


def test_migrate_to_postgresql_names_every_event_it_cannot_store(
    tmp_path: Path, pg_cluster: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An older SQLite ledger may hold U+0000; PostgreSQL text cannot: nothing is copied, each seq named."""
    source = Ledger(tmp_path / "old.db")
    import ledger.storage.append as append_module

    with monkeypatch.context() as m:  # as appended before the rule existed
        m.setattr(append_module, "check_ijson_data", lambda *a: None)
        source.append([paper("2101.00001", ts(1))])
        source.append([paper("2101.00001", ts(2), title="a\x00b"), paper("2101.00002", ts(2), title="c\x00")])
        source.append([paper("2101.00003", ts(3))])
    assert source.verify().ok  # stored events that break the rule stay verifiable
    target = pg_cluster.create_db()
    out = CliRunner().invoke(main, ["migrate", "--from", str(source.path), "--to", target])
    assert out.exit_code == 1, out.output
    assert "2 stored event(s) hold the character U+0000" in out.output and "seq 2, 3;" in out.output
    assert out.exception is None or isinstance(out.exception, SystemExit)
    assert Ledger(target).head().seq == 0


def test_a_postgresql_url_without_the_driver_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "psycopg", None)  # import psycopg -> ImportError
    out = CliRunner().invoke(main, ["record", PAPER, "--db", "postgresql://nobody@127.0.0.1:9/none"])
    assert out.exit_code == 1
    assert "pip install 'citation-ledger[postgresql]'" in out.output
    assert out.exception is None or isinstance(out.exception, SystemExit)


def test_the_stored_bytes_are_the_same_on_every_backend(fresh_ledger: Ledger) -> None:
    """What is taken is exactly what both backends store: the canonical bytes, hashed once."""
    result = fresh_ledger.append([measurement(PAPER, ts(1), ijson.MAX_SAFE_INTEGER)])
    stored = fresh_ledger.store.read_log()[0]
    assert stored.data == canonical(measurement(PAPER, ts(1), ijson.MAX_SAFE_INTEGER).data)
    assert stored.hash == result.head.hash
