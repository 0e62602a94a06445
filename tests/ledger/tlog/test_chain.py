"""The hash chain (ledger/chain.py) and an independent re-verification of `ledger events` output."""

from __future__ import annotations

import json
from typing import Any

import msgspec
import pytest
from blake3 import blake3
from click.testing import CliRunner
from hypothesis import given
from hypothesis import strategies as st

from cli.main import main
from ledger.model.events import StoredEvent
from ledger.tlog.chain import GENESIS, body_bytes, envelope_body, link_hash
from service.ledger import Ledger

BODY_KEYS = ["data", "event_id", "observed_at", "recorded_at", "seq", "stream", "stream_version", "type"]


def stdlib_canonical(x: Any) -> bytes:
    return json.dumps(x, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


def stdlib_hash(prev_hash: str, body: bytes) -> str:
    return blake3(bytes.fromhex(prev_hash) + body).hexdigest()


ENVELOPE: dict[str, Any] = {
    "event_id": "8f7cb4e3-557e-49d1-9dc8-6b681dc73b8b",
    "observed_at": "2026-08-08T06:31:55.24221+00:00",
    "recorded_at": "2026-08-09T00:00:00.000001Z",
    "seq": 12,
    "stream": "paper:2509.02480",
    "stream_version": 3,
    "type": "paper.observed",
}
DATAS = [
    pytest.param({"title": "MLP-Offload", "version": 1}, id="ascii"),
    pytest.param({"title": "Ünïcode “quotes” ☃ 😀", "z": None, "a": [True, False]}, id="non-ascii"),
    pytest.param({"title": 'ctl \x00\x1f\x7f \u2028 \t\n "q" \\ /'}, id="control-chars"),
    pytest.param({"nested": {"b": [1, {"y": 2, "x": -3}], "a": "é"}, "n": 2**64}, id="nested-big-int"),
    pytest.param({}, id="empty"),
]


def test_genesis_is_64_zeros() -> None:
    assert GENESIS == "0" * 64
    assert bytes.fromhex(GENESIS) == bytes(32)


@pytest.mark.parametrize("data", DATAS)
def test_body_bytes_is_the_stdlib_canonical_of_the_body(data: dict[str, Any]) -> None:
    got = body_bytes(data=stdlib_canonical(data), **ENVELOPE)
    assert got == stdlib_canonical({**ENVELOPE, "data": data})
    assert list(json.loads(got)) == BODY_KEYS  # code-point order, no other key


# printable text (the fast join's domain) with the characters it must still leave to the encoder mixed in
_FIELD = st.text(
    st.characters(blacklist_categories=("Cs", "Cc")) | st.sampled_from("\\\x7f\u2028/"), max_size=12
)


@given(
    event_id=_FIELD,
    observed_at=_FIELD,
    recorded_at=_FIELD,
    stream=_FIELD,
    type_=_FIELD,
    seq=st.integers(0, 2**53),
    version=st.integers(1, 2**53),
)
def test_envelope_body_is_body_bytes_for_any_stored_strings(
    event_id: str, observed_at: str, recorded_at: str, stream: str, type_: str, seq: int, version: int
) -> None:
    data = b'{"t":"x"}'
    e = StoredEvent(seq, event_id, stream, version, type_, observed_at, recorded_at, data, GENESIS, GENESIS)
    assert envelope_body(e) == body_bytes(
        data, event_id, observed_at, recorded_at, seq, stream, version, type_
    )


@pytest.mark.parametrize("char", ['"', "\\", "\x00", "\x1f", "\n", "\x7f", "\u2028", "é", "😀"])
@pytest.mark.parametrize("field", ["event_id", "observed_at", "recorded_at", "stream", "type"])
def test_envelope_body_escapes_what_the_encoder_escapes(field: str, char: str) -> None:
    e = StoredEvent(12, "i", "s", 3, "t", "o", "r", b"{}", GENESIS, GENESIS)
    e = msgspec.structs.replace(e, **{field: f"a{char}b"})
    want = body_bytes(b"{}", e.event_id, e.observed_at, e.recorded_at, 12, e.stream, 3, e.type)
    assert envelope_body(e) == want


@pytest.mark.parametrize("field", ["event_id", "observed_at", "recorded_at", "stream", "type"])
def test_envelope_body_cannot_be_forged_by_moving_text_between_fields(field: str) -> None:
    # a stored column holding '","observed_at":"...' must not join into another event's body bytes
    honest = StoredEvent(
        12,
        ENVELOPE["event_id"],
        ENVELOPE["stream"],
        3,
        "paper.observed",
        ENVELOPE["observed_at"],
        ENVELOPE["recorded_at"],
        b"{}",
        GENESIS,
        GENESIS,
    )
    moved = msgspec.structs.replace(honest, **{field: getattr(honest, field) + '","x":"'})
    assert envelope_body(moved) == body_bytes(
        b"{}", moved.event_id, moved.observed_at, moved.recorded_at, 12, moved.stream, 3, moved.type
    )
    assert envelope_body(moved) != envelope_body(honest)


def test_body_bytes_keeps_strings_verbatim() -> None:
    # no re-formatting of timestamps, no Unicode normalization (NFC é vs e + combining accent)
    env = {**ENVELOPE, "observed_at": "2026-08-08T08:31:55.24221+02:00", "stream": "paper:é"}
    body = body_bytes(data=b'{"t":"e\xcc\x81"}', **env)  # type: ignore[arg-type]
    assert b'"observed_at":"2026-08-08T08:31:55.24221+02:00"' in body
    assert "e\u0301".encode() in body and "é".encode() in body


@pytest.mark.parametrize(
    "prev", [GENESIS, "f" * 64, "0123456789abcdef" * 4], ids=["genesis", "all-f", "mixed"]
)
@pytest.mark.parametrize("data", DATAS)
def test_link_hash_is_blake3_of_prev_bytes_and_body(prev: str, data: dict[str, Any]) -> None:
    body = stdlib_canonical({**ENVELOPE, "data": data})
    h = link_hash(prev, body)
    assert h == stdlib_hash(prev, body)
    assert len(h) == 64 and h == h.lower()


def test_link_hash_binds_prev_and_every_body_bit() -> None:
    body = stdlib_canonical({**ENVELOPE, "data": {"t": "x"}})
    h = link_hash(GENESIS, body)
    assert link_hash("0" * 63 + "1", body) != h
    flipped = bytearray(body)
    flipped[len(body) // 2] ^= 0x01
    assert link_hash(GENESIS, bytes(flipped)) != h
    # the prev hash is hashed as 32 raw bytes, not as its 64 hex characters
    assert h != blake3(GENESIS.encode() + body).hexdigest()


def test_link_hash_refuses_a_prev_that_is_not_hex() -> None:
    with pytest.raises(ValueError, match="non-hexadecimal"):
        link_hash("z" * 64, b"{}")


# -- the audit contract: re-verify `ledger events` output with json + blake3 only -----------------


def cli_events(db: str, *args: str) -> list[dict[str, Any]]:
    result = CliRunner().invoke(main, ["events", "--db", db, *args])
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.stdout.splitlines() if line.strip()]


def cli_lines(db: str) -> list[bytes]:
    result = CliRunner().invoke(main, ["events", "--db", db])
    assert result.exit_code == 0, result.output
    return [line for line in result.stdout_bytes.splitlines() if line.strip()]


def reverify(events: list[dict[str, Any]]) -> str:
    """An auditor's verifier: seq, prev_hash and hash of every event, from the served JSON alone."""
    prev = "0" * 64
    for n, e in enumerate(events, start=1):
        assert e["seq"] == n, f"gap before seq {e['seq']}"
        assert e["prev_hash"] == prev, f"seq {n}: prev_hash"
        body = stdlib_canonical({k: e[k] for k in BODY_KEYS})
        assert stdlib_hash(prev, body) == e["hash"], f"seq {n}: hash"
        prev = e["hash"]
    return prev


def test_events_output_recomputes_with_json_and_blake3_only(imported_ledger: Ledger) -> None:
    events = cli_events(imported_ledger.url)
    assert len(events) == 132
    assert reverify(events) == imported_ledger.head().hash
    for e in events:
        assert sorted(e) == sorted([*BODY_KEYS, "prev_hash", "hash"])


def test_events_output_embeds_data_verbatim_as_canonical_bytes(imported_ledger: Ledger) -> None:
    lines = cli_lines(imported_ledger.url)
    for line in lines:
        e = json.loads(line)
        # the whole line is canonical JSON, so the data inside it is the hashed bytes verbatim
        assert line == stdlib_canonical(e)
        assert stdlib_canonical(e["data"]) in line
    # non-ASCII is written as itself (the fixture has an en dash), never as a \u escape
    assert any("\u2013".encode() in line for line in lines)
    assert not any(b"\\u20" in line for line in lines)


def test_reverify_catches_an_edited_served_event(imported_ledger: Ledger) -> None:
    events = cli_events(imported_ledger.url)
    events[0]["data"]["title"] = events[0]["data"]["title"].replace("MLP", "MLQ")
    with pytest.raises(AssertionError, match="seq 1: hash"):
        reverify(events)
    events = cli_events(imported_ledger.url)
    del events[40]
    with pytest.raises(AssertionError, match="gap before seq 42"):
        reverify(events)


def test_stream_versions_in_events_output_count_1_to_n(imported_ledger: Ledger) -> None:
    events = cli_events(imported_ledger.url)
    streams: dict[str, list[int]] = {}
    for e in events:
        streams.setdefault(e["stream"], []).append(e["stream_version"])
    assert streams["paper:2509.02480"][:3] == [1, 2, 3]
    assert len(streams["paper:2509.02480"]) == 1 + 56 + 56  # its snapshot, citations, resolutions
    for versions in streams.values():
        assert versions == list(range(1, len(versions) + 1))
    assert {"source:crossref", "source:retraction_watch"} <= set(streams)


@pytest.mark.parametrize(
    ("args", "expected_seqs"),
    [
        pytest.param(["--after", "130"], [131, 132], id="after"),
        pytest.param(["--limit", "3"], [1, 2, 3], id="limit"),
        pytest.param(["--after", "5", "--limit", "2"], [6, 7], id="after-limit"),
        pytest.param(["--stream", "source:crossref"], [132], id="stream"),
        pytest.param(["--type", "standing.checked"], [131, 132], id="type"),
    ],
)
def test_events_filters_still_reverify_per_event(
    imported_ledger: Ledger, args: list[str], expected_seqs: list[int]
) -> None:
    events = cli_events(imported_ledger.url, *args)
    assert [e["seq"] for e in events] == expected_seqs
    for e in events:  # each served event carries what is needed to recheck its own link
        body = stdlib_canonical({k: e[k] for k in BODY_KEYS})
        assert stdlib_hash(e["prev_hash"], body) == e["hash"]


def test_first_event_links_to_genesis(fresh_ledger: Ledger) -> None:
    assert fresh_ledger.head() == (0, GENESIS)
    env = {
        "type": "measurement.observed",
        "observed_at": "2026-01-01T00:00:00Z",
        "data": {
            "arxiv_id": "2509.02480",
            "source": "openalex",
            "metric": "cited_by_count",
            "value": 1,
            "source_release": None,
            "query_url": None,
        },
    }
    result = fresh_ledger.import_bytes(json.dumps({"events": [env]}).encode())
    (stored,) = cli_events(fresh_ledger.url)
    assert stored["prev_hash"] == GENESIS
    assert stored["hash"] == result.head.hash == reverify([stored])
