"""Hypothesis-made malformed records and envelopes through `ledger import`, POST /records and POST /events.

Whatever the input: no crash and no 5xx; every refusal in the error shape (HTTP) or as one "refused,
nothing written" line (CLI), with the ledger head unchanged; after whatever was accepted, the chain
still verifies.
RELIABILITY_FULL=1 raises the number of examples (RELIABILITY.md).
"""

from __future__ import annotations

import copy
import json
import os
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from click.testing import CliRunner
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from api.app import create_app
from api.docs import EVENT_EXAMPLES
from api.settings import Settings
from api.state import state_of
from cli.main import main
from service.ledger import Ledger
from tests.conftest import examples
from tests.paths import DATA

if TYPE_CHECKING:
    from tests.conftest import NewDb

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

FULL = os.environ.get("RELIABILITY_FULL") == "1"
RECORD = json.loads((DATA / "2509.02480.record.json").read_bytes())
TOKEN = "fuzz-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
FUZZ = settings(
    max_examples=1500 if FULL else examples(40),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    database=None,
)

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats()  # NaN and infinities become invalid JSON tokens: refused as any other bad body
    | st.text(max_size=20)
    | st.sampled_from(["", "\ud800", "0" * 300, "2026-13-45T25:61:61Z", "2509.02480v2", "x" * 20_000])
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


@st.composite
def mutated(draw: st.DrawFn, original: Any) -> Any:
    """`original` with one to three places changed: a key dropped or added, a value replaced, a list
    element repeated or removed."""
    value = copy.deepcopy(original)
    for _ in range(draw(st.integers(1, 3))):
        parent: Any = None
        key: Any = None
        node = value
        # walk down a random path, stopping anywhere
        while isinstance(node, dict | list) and node and draw(st.integers(0, 4)) > 0:
            keys = list(node) if isinstance(node, dict) else list(range(len(node)))
            parent, key = node, draw(st.sampled_from(keys))
            node = node[key]
        op = draw(st.sampled_from(["replace", "drop", "add", "repeat"]))
        if parent is None:
            value = draw(json_values) if op == "replace" else value
        elif op == "replace":
            parent[key] = draw(json_values)
        elif op == "drop":
            del parent[key]
        elif op == "add" and isinstance(parent, dict):
            parent[draw(st.text(min_size=1, max_size=8))] = draw(json_values)
        elif isinstance(parent, list):
            parent.insert(key, copy.deepcopy(parent[key]))
    return value


def raw_body(value: Any, cut: int | None) -> bytes:
    """The JSON bytes, sometimes cut short (a broken upload)."""
    raw = json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")
    return raw[:cut] if cut is not None else raw


def _error_shape(response: Any) -> None:
    body = response.json()
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message", "details"}, body


def _check_http(client: TestClient, path: str, raw: bytes) -> int:
    ledger: Ledger = state_of(client.app).ledger
    before = ledger.head()
    r = client.post(path, content=raw, headers={**AUTH, "content-type": "application/json"})
    assert r.status_code in (200, 201, 409, 413, 422), (r.status_code, r.text[:500])
    if r.status_code >= 400:
        _error_shape(r)
        assert ledger.head() == before, f"refused ({r.status_code}) but the head moved"
    else:  # whatever got in keeps the chain whole
        assert ledger.verify().ok
    event(f"HTTP {r.status_code}")
    return r.status_code


@FUZZ
@given(record=mutated(RECORD), force=st.booleans(), cut=st.none() | st.integers(0, 4000))
def test_malformed_records_over_http(new_db: NewDb, record: Any, force: bool, cut: int | None) -> None:
    client = _client(new_db)
    _check_http(client, f"/records?force={str(force).lower()}", raw_body(record, cut))


@FUZZ
@given(event=st.sampled_from(sorted(EVENT_EXAMPLES)).flatmap(lambda t: mutated(EVENT_EXAMPLES[t])))
def test_malformed_envelopes_over_http(new_db: NewDb, event: Any) -> None:
    client = _client(new_db)
    _check_http(client, "/events", raw_body({"events": [EVENT_EXAMPLES["paper.observed"], event]}, None))


@FUZZ
@given(record=mutated(RECORD), cut=st.none() | st.integers(0, 4000), force=st.booleans())
def test_malformed_records_through_ledger_import(
    new_db: NewDb, tmp_path: Path, record: Any, cut: int | None, force: bool
) -> None:
    _check_import(_cli_db(new_db), tmp_path, raw_body(record, cut), force)


@FUZZ
@given(
    events=st.lists(
        st.sampled_from(sorted(EVENT_EXAMPLES)).flatmap(lambda t: mutated(EVENT_EXAMPLES[t])), max_size=4
    )
)
def test_malformed_ndjson_through_ledger_import(new_db: NewDb, tmp_path: Path, events: list[Any]) -> None:
    lines = [EVENT_EXAMPLES["paper.observed"], *events]
    _check_import(_cli_db(new_db), tmp_path, b"\n".join(raw_body(e, None) for e in lines) + b"\n", False)


_CLIENTS: dict[Any, TestClient] = {}
_CLI_DBS: dict[Any, str] = {}


def _client(new_db: NewDb) -> TestClient:
    # one app per test (hypothesis reuses function-scoped fixtures across examples): accepted writes
    # accumulate in its ledger
    if new_db not in _CLIENTS:
        _CLIENTS[new_db] = TestClient(create_app(Settings(db=new_db("http.db"), tokens=(TOKEN,))))
    return _CLIENTS[new_db]


def _cli_db(new_db: NewDb) -> str:
    # one ledger per test, as for _client
    if new_db not in _CLI_DBS:
        _CLI_DBS[new_db] = new_db("cli.db")
    return _CLI_DBS[new_db]


def _check_import(db: str, tmp_path: Path, raw: bytes, force: bool) -> None:
    source = tmp_path / "input.json"
    source.write_bytes(raw)
    before = _head(db)
    args = ["import", str(source), "--db", db, *(["--force"] if force else [])]
    result = CliRunner().invoke(main, args)
    assert result.exit_code in (0, 1), (result.exit_code, result.output, result.exception)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    if result.exit_code == 1:
        assert "refused, nothing written" in result.output, result.output
        assert _head(db) == before
    else:
        ledger = Ledger(db)
        try:
            assert ledger.verify().ok
        finally:
            ledger.close()
    event(f"exit {result.exit_code}")


def _head(db: str) -> Any:
    ledger = Ledger(db)
    try:
        return ledger.head()
    finally:
        ledger.close()
