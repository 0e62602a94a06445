"""Integers too long or too large for what reads them: past Python's 4,300-digit int() limit in a body,
a checkpoint or a file, past SQL's int64 in a query parameter or a header, past what the witness keeps.
Each is a clear 4xx in the JSON error shape naming the field (or one line and exit 1 from the CLI);
nothing is written."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from click.testing import CliRunner, Result
from hypothesis import given, settings
from hypothesis import strategies as st

from api.app import create_app
from api.log.proofs import MAX_NOTE_BYTES
from api.settings import Settings
from cli.main import main
from ledger.model import ijson
from ledger.model.errors import InvalidEvent
from ledger.tlog.checkpoint import Checkpoint, Signer, load_or_create_key
from service.ledger import Ledger
from tests.api.test_api import TestClient, ledger_of, measurement
from tests.api_fixtures import free_port
from tests.conftest import NewDb, examples
from tests.e2e.test_witness_process import witness_process
from tests.service.proofs.test_witness import LOG, body

TOKEN = "hostile-numbers-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
ORIGIN = "hostile.example/ledger"
ROOT = bytes(range(32))
TIMEOUT = 30
# past Python's int max str digits (4,300), and far past it
DIGITS = [pytest.param(4301, id="4301-digits"), pytest.param(100_000, id="100000-digits")]
TOO_BIG = "integers must be within +-(2^53-1)"
SQL_MAX = 2**63 - 1
MAX_TREE_SIZE = 2**64 - 1  # u64, as RFC 6962 and tlog-checkpoint have it


def _number(digits: int, sign: str) -> str:
    return sign + "9" * digits


@pytest.fixture(
    params=[(d, s) for s in ("", "-") for d in (4301, 100_000)],
    ids=lambda p: f"{'negative' if p[1] else 'positive'}-{p[0]}-digits",
)
def huge(request: pytest.FixtureRequest) -> str:
    """A huge integer's text: past Python's int max str digits, or far past it; positive or negative."""
    return _number(*request.param)


def _note(signer: Signer, size: str) -> str:
    """A checkpoint note of `size` (as spelled) signed with the ledger's own key."""
    return signer.sign_note(f"{signer.name}\n{size}\n{base64.b64encode(ROOT).decode()}\n")


@pytest.fixture
def served(new_db: NewDb, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[TestClient, Signer]:
    """The API over an empty ledger, with a signing key the tests can sign with too.

    In process: through `ledger serve`, a body past 16 KiB may be refused first as a request head over
    its limit (api/server.py counts what arrives with the head), which is not what these tests are about.
    """
    key = tmp_path / "ledger.key"
    monkeypatch.setenv("LEDGER_KEY_FILE", str(key))
    monkeypatch.setenv("LEDGER_ORIGIN", ORIGIN)
    signer = load_or_create_key(key, ORIGIN)
    return TestClient(create_app(Settings(db=new_db(), tokens=(TOKEN,)))), signer


def _error(answer: Any, status: int) -> dict[str, Any]:
    assert answer.status_code == status, answer.text[:500]
    assert answer.headers["content-type"].startswith("application/json")
    error: dict[str, Any] = answer.json()["error"]
    assert set(error) == {"code", "message", "details"}
    return error


# -- bodies: the one I-JSON parser ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "headers", "make", "where"),
    [
        pytest.param("/verify", {}, lambda n: f'{{"paper":{{"year":{n}}}}}', "paper.year", id="verify"),
        pytest.param(
            "/events",
            AUTH,
            lambda n: json.dumps({"events": [measurement()]}).replace('"value": 4', f'"value": {n}'),
            "events[0].data.value",
            id="events",
        ),
    ],
)
def test_a_body_with_a_huge_integer_is_a_422_naming_it(
    served: tuple[TestClient, Signer], path: str, headers: dict[str, str], make: Any, where: str,
    huge: str,
) -> None:  # fmt: skip
    client, _ = served
    answer = client.post(path, content=make(huge).encode(), headers=headers)
    error = _error(answer, 422)
    assert error["details"]["where"] == where and TOO_BIG in error["message"]
    assert ledger_of(client).head().seq == 0


def test_a_checkpoint_with_a_huge_size_is_refused_naming_the_note(
    served: tuple[TestClient, Signer], huge: str
) -> None:
    client, signer = served
    note = _note(signer, huge)
    answer = client.post("/checkpoint/check", content=note.encode())
    if len(note) > MAX_NOTE_BYTES:
        assert _error(answer, 413)["code"] == "payload_too_large"
        return
    error = _error(answer, 422)
    reason = "is not a decimal number" if huge.startswith("-") else "is above 2^64-1"
    assert error["details"]["where"] == "note" and reason in error["message"], error


def test_a_checkpoint_of_the_largest_size_is_held_as_truncated(served: tuple[TestClient, Signer]) -> None:
    client, signer = served
    for size in (2**63, MAX_TREE_SIZE):
        answer = client.post("/checkpoint/check", content=_note(signer, str(size)).encode())
        assert answer.status_code == 200 and answer.json()["status"] == "truncated", answer.text
    answer = client.post("/checkpoint/check", content=_note(signer, str(MAX_TREE_SIZE + 1)).encode())
    assert "is above 2^64-1" in _error(answer, 422)["message"]


@settings(max_examples=examples(200), deadline=None)
@given(
    sign=st.sampled_from(["", "-"]),
    digits=st.one_of(
        st.integers(0, 10**20).map(str),
        # long digit strings, cheap to build: a leading digit, then one digit repeated
        st.builds(
            lambda a, b, n: str(a) + str(b) * n,
            st.integers(1, 9),
            st.integers(0, 9),
            st.integers(15, 100_000),
        ),
    ),
)
def test_any_integer_is_read_or_refused_by_the_rule_never_a_crash(sign: str, digits: str) -> None:
    safe = len(digits) <= 16 and int(digits) <= ijson.MAX_SAFE_INTEGER
    try:
        value = ijson.loads(f'{{"n":{sign}{digits}}}')
    except InvalidEvent as e:
        assert not safe and (e.where, e.reason) == ("n", ijson.BIG_INTEGER)
    else:
        assert safe and value == {"n": int(sign + digits)}


@pytest.mark.parametrize("source", ["crossref", "openalex", "semantic-scholar", "opencitations"])
def test_a_source_file_with_a_huge_integer_is_a_422_naming_the_file(
    served: tuple[TestClient, Signer], source: str, huge: str
) -> None:
    client, _ = served
    text = f'[{{"count":{huge}}}]' if source == "opencitations" else f'{{"count":{huge}}}'
    params = {"observed_at": "2026-09-01T12:00:00Z"}
    if source == "opencitations":
        params["id"] = "doi:10.48550/arXiv.2310.04610"
    answer = client.post(f"/ingest/{source}", params=params, content=text.encode(), headers=AUTH)
    error = _error(answer, 422)
    assert error["details"]["where"] == "file" and "more than 4300 digits" in error["message"], error
    assert ledger_of(client).head().seq == 0


# -- query parameters and headers that reach SQL --------------------------------------------------


def _watch(client: TestClient) -> str:
    made = client.post("/watches", json={"works": ["arxiv:2310.04610"]}, headers=AUTH)
    assert made.status_code == 201, made.text
    return str(made.json()["id"])


@pytest.mark.parametrize("route", ["alerts", "deliveries"])
@pytest.mark.parametrize(
    "after",
    [
        pytest.param(str(2**63), id="2^63"),
        pytest.param(str(2**64), id="2^64"),
        pytest.param("-" + str(2**63), id="-2^63"),
        pytest.param("9" * 4301, id="4301-digits"),
        pytest.param("9" * 60_000, id="60000-digits"),  # httpx refuses a URL past 64 KiB
    ],
)
def test_after_past_sql_int64_is_a_422_on_the_watch_routes(
    served: tuple[TestClient, Signer], route: str, after: str
) -> None:
    client, _ = served
    watch_id = _watch(client)
    answer = client.get(f"/watches/{watch_id}/{route}", params={"after": after}, headers=AUTH)
    assert _error(answer, 422)["details"]["where"] == "query.after"
    ok = client.get(f"/watches/{watch_id}/{route}", params={"after": str(SQL_MAX)}, headers=AUTH)
    assert ok.status_code == 200 and ok.json()["next"] is None


@pytest.mark.parametrize("value", [str(2**63), "9" * 4301])
def test_last_event_id_past_sql_int64_is_a_422_on_both_streams(
    served: tuple[TestClient, Signer], value: str
) -> None:
    client, _ = served
    for path in ("/evidence/stream", f"/watches/{_watch(client)}/alerts/stream"):
        answer = client.get(path, headers={**AUTH, "Last-Event-ID": value})
        assert _error(answer, 422)["details"]["where"] == "Last-Event-ID", path


# -- the CLI: one line, exit 1, no traceback ------------------------------------------------------


def _one_line_refusal(result: Result, words: str) -> None:
    assert isinstance(result.exception, SystemExit), result.exception
    assert result.exit_code == 1 and "Traceback" not in result.output, result.output[-2000:]
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and words in lines[0], result.stderr[-2000:]


def test_ledger_import_refuses_a_huge_integer_in_one_line(new_db: NewDb, tmp_path: Path, huge: str) -> None:
    db = new_db()
    line = json.dumps(measurement()).replace('"value": 4', f'"value": {huge}')
    path = tmp_path / "big.ndjson"
    path.write_text(line + "\n")
    result = CliRunner().invoke(main, ["import", str(path), "--db", db])
    _one_line_refusal(result, TOO_BIG)
    assert Ledger(db).head().seq == 0


def test_ledger_verify_refuses_a_held_checkpoint_with_a_huge_size(
    new_db: NewDb, tmp_path: Path, huge: str
) -> None:
    db = new_db()
    Ledger(db).close()  # an empty ledger: `verify` reads one, never makes one
    key = tmp_path / "ledger.key"
    note = tmp_path / "held.note"
    note.write_text(_note(load_or_create_key(key, ORIGIN), huge))
    result = CliRunner(env={"LEDGER_KEY_FILE": str(key)}).invoke(
        main, ["verify", "--db", db, "--checkpoint", str(note)]
    )
    _one_line_refusal(result, "is not a decimal number" if huge.startswith("-") else "is above 2^64-1")


def test_ledger_verify_refuses_a_held_checkpoint_that_is_not_utf8(new_db: NewDb, tmp_path: Path) -> None:
    db = new_db()
    Ledger(db).close()  # an empty ledger: `verify` reads one, never makes one
    note = tmp_path / "held.note"
    note.write_bytes(b"origin\n\xff\xfe\n")
    result = CliRunner().invoke(main, ["verify", "--db", db, "--checkpoint", str(note)])
    _one_line_refusal(result, "--checkpoint: the file is not UTF-8")


# -- the witness: sizes past what it keeps --------------------------------------------------------


@pytest.mark.process  # a `ledger witness serve`
def test_the_witness_refuses_a_first_checkpoint_past_what_it_keeps(tmp_path: Path) -> None:
    port = free_port()

    def post(size: int) -> httpx.Response:
        signed = LOG.sign_note(Checkpoint(LOG.name, size, ROOT).text())
        return httpx.post(f"http://127.0.0.1:{port}/add-checkpoint", content=body(0, [], signed),
                          timeout=TIMEOUT)  # fmt: skip

    with witness_process(tmp_path, port):
        for size, words in [
            (2**63 + 1, "is above 2^63-1, the largest this witness keeps"),
            (2**64 - 1, "is above 2^63-1, the largest this witness keeps"),
            (2**64, "is above 2^64-1"),
        ]:
            answer = post(size)
            assert (answer.status_code, answer.headers["content-type"]) == (400, "text/plain; charset=utf-8")
            assert words in answer.text, answer.text
        # nothing was kept: a first checkpoint of a real size is still taken from size 0
        assert post(5).status_code == 200


@pytest.mark.parametrize("after", [str(2**63), str(2**64), "9" * 4301])
def test_ledger_events_refuses_an_after_past_sql_int64(new_db: NewDb, after: str) -> None:
    result = CliRunner().invoke(main, ["events", "--db", new_db(), "--after", after])
    assert isinstance(result.exception, SystemExit) and result.exit_code == 2, result.output[-2000:]
    assert "Invalid value for '--after'" in result.stderr and "Traceback" not in result.output


@pytest.mark.parametrize("digits", DIGITS)
@pytest.mark.parametrize("place", ["events", "record"])
def test_ledger_check_bundle_reports_a_huge_integer_without_a_traceback(
    tmp_path: Path, digits: int, place: str
) -> None:
    n = _number(digits, "")
    bundle = tmp_path / "bundle.json"
    bundle.write_text(f'{{"events":[{{"seq":{n}}}]}}' if place == "events" else f'{{"record":{{"a":{n}}}}}')
    vkey = load_or_create_key(tmp_path / "ledger.key", ORIGIN).verifier.vkey
    result = CliRunner().invoke(main, ["check-bundle", str(bundle), "--key", vkey])
    assert isinstance(result.exception, SystemExit) and result.exit_code != 0, result.output[-2000:]
    assert "Integer value out of range" in result.output and "Traceback" not in result.output
