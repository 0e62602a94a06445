"""Offline evidence bundles (service/bundle.py, `ledger bundle`, `ledger check-bundle`): the record's
seqs rebuild it, a good bundle checks with no database, and each kind of damage is named."""

from __future__ import annotations

import base64
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from cli.main import main
from ledger.model.codec import canonical
from ledger.model.errors import NotFound
from ledger.model.events import Event
from ledger.model.instants import parse_as_of, parse_ts
from ledger.model.record_types import Record
from ledger.tlog.chain import envelope_body, link_hash
from ledger.tlog.checkpoint import Checkpointer, parse_vkey
from projections import record as projection
from projections.memory import MemoryReader
from projections.record import build_record
from service.ledger import Ledger
from service.proofs.bundle import encode_bundle, open_bundle
from service.proofs.checker import check_bundle
from tests import factories as fx
from tests.bundle_oracle import check_bundle_in_memory, record_evidence
from tests.conftest import examples
from tests.paths import DATA

FIX_ID = "2509.02480"
FIX_AS_OF = "2026-08-09"
A, B, C = "2101.00001", "2101.00002", "2101.00003"


def rich_events() -> list[Event]:
    """Outbound and inbound observations, cited papers, standing notices from two sources, measurements."""
    return [
        fx.paper(A, fx.ts(0)),
        fx.paper(B, fx.ts(1)),
        fx.paper(C, fx.ts(2), category=None),
        fx.citation(fx.oid_of(0), A, fx.ts(3), 0, fx.work("w-1", fx.ts(3))),
        fx.resolution(fx.oid_of(0), fx.ts(4), cited_arxiv=C, cited=fx.work("w-1", fx.ts(4), pith=C)),
        fx.citation(fx.oid_of(1), A, fx.ts(5), 1, None),  # pending
        fx.citation(fx.oid_of(2), B, fx.ts(6), 0, fx.work("w-2", fx.ts(6))),  # B cites A: inbound for A
        fx.resolution(fx.oid_of(2), fx.ts(7), cited_arxiv=A, cited=fx.work("w-2", fx.ts(7), pith=A)),
        # C cites A, later resolved elsewhere
        fx.citation(fx.oid_of(3), C, fx.ts(8), 2, fx.work("w-3", fx.ts(8))),
        fx.resolution(fx.oid_of(3), fx.ts(9), cited_arxiv=A, cited=fx.work("w-3", fx.ts(9))),
        fx.check("crossref", fx.ts(10), ["w-1", "w-2"], [fx.notice("w-1"), fx.notice("w-2", "correction")]),
        fx.check("retraction_watch", fx.ts(11), None, [fx.notice("w-1", "expression_of_concern", None)]),
        fx.check("crossref", fx.ts(12), ["w-9"], []),  # the crossref head, not covering w-1
        fx.measurement(A, fx.ts(13), 5),
        fx.measurement(A, fx.ts(14), 7),
        fx.measurement(A, fx.ts(14, 5), 3, source="semantic_scholar"),
        fx.paper(A, fx.ts(15), title="A paper, v2", category=None, version=2),
        fx.resolution(fx.oid_of(3), fx.ts(16), "unresolved", cited_arxiv=B),
        fx.paper(B, fx.ts(17), title="B, v2"),
    ]


DbFactory = Callable[[Path, str], str]


@pytest.fixture(scope="module", autouse=True)
def state_dir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """$LEDGER_STATE_DIR for this module's shared ledgers: a PostgreSQL ledger's key goes there."""
    state = tmp_path_factory.mktemp("state")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("LEDGER_STATE_DIR", str(state))
        yield state


@pytest.fixture(scope="module")
def rich(db_factory: DbFactory, tmp_path_factory: pytest.TempPathFactory) -> Ledger:
    ledger = Ledger(db_factory(tmp_path_factory.mktemp("rich"), "ledger.db"))
    ledger.append(rich_events())
    return ledger


@pytest.fixture(scope="module")
def fixture_ledger(db_factory: DbFactory, tmp_path_factory: pytest.TempPathFactory) -> Ledger:
    ledger = Ledger(db_factory(tmp_path_factory.mktemp("fixture"), "ledger.db"))
    ledger.import_bytes((DATA / "2509.02480.record.json").read_bytes())
    return ledger


def _rebuilt(ledger: Ledger, arxiv_id: str, t: int, k: int | None = None) -> tuple[Record, Record]:
    record, seqs, _ = ledger.record(arxiv_id, t, k)
    envelopes = ledger.store.envelopes(seqs)
    assert [e.seq for e in envelopes] == seqs
    return record, build_record(MemoryReader(envelopes, t, k), arxiv_id, t).record


def test_the_fixture_record_seqs_rebuild_it(fixture_ledger: Ledger) -> None:
    for as_of in ["2026-08-07T17:00:00Z", "2026-08-08T07:00:00Z", FIX_AS_OF]:
        record, again = _rebuilt(fixture_ledger, FIX_ID, parse_as_of(as_of))
        assert canonical(again) == canonical(record)


@pytest.mark.parametrize("step", [8, 10, 12, 14, 16, 18, 60])
@pytest.mark.parametrize("pid", [A, B, C])
def test_seqs_rebuild_records_with_inbound_and_notices(rich: Ledger, pid: str, step: int) -> None:
    t = parse_ts(fx.ts(step))
    record, again = _rebuilt(rich, pid, t)
    assert canonical(again) == canonical(record)
    if pid == A and step == 60:
        assert [o.observation_id for o in record.inbound] == [fx.oid_of(2)]  # oid 3 moved to B
        sn = record.outbound[0].standing_notice
        assert sn.state == "measured" and len(sn.events) == 2


def streamed(ledger: Ledger, pid: str, t: int, k: int | None = None, chunk: int = 1000) -> bytes:
    """The bundle as `ledger bundle` writes it, chunk by chunk."""
    return b"".join(open_bundle(ledger, pid, t, k).chunks(chunk))


@settings(
    max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(events=fx.ledgers(), cut=st.integers(0, 430), cap=st.sampled_from([100, 1, 2]))
def test_any_record_bundle_checks_offline(
    db_factory: DbFactory, tmp_path_factory: Any, events: list[Event], cut: int, cap: int
) -> None:
    ledger = Ledger(db_factory(tmp_path_factory.mktemp("prop"), "ledger.db"))  # a new one per example
    ledger.append(events)
    verifier = Checkpointer.for_db(ledger.store).verifier()
    t = parse_ts(fx.ts(cut))
    with pytest.MonkeyPatch.context() as mp:
        # a small cap leaves inbound observations counted but not shown: the bundle holds them too
        mp.setitem(projection.CAPS, "inbound", cap)
        for pid in fx.PAPERS:
            try:
                record, again = _rebuilt(ledger, pid, t)
            except NotFound:
                continue
            if len(record.inbound) == record.lane("inbound_itemization").denominator:
                assert canonical(again) == canonical(record)
            whole = encode_bundle(record_evidence(ledger, pid, t))
            assert streamed(ledger, pid, t, chunk=cut % 5 + 1) == whole
            report = check_bundle(whole, verifier)
            assert report.ok, report.problems
            assert report == check_bundle_in_memory(whole, verifier)


@pytest.mark.parametrize("chunk", [1, 3, 1000])
@pytest.mark.parametrize(
    "which",
    [
        *[
            pytest.param(("fixture", FIX_ID, a), id=f"fixture-{a}")
            for a in ("2026-08-07T17:00:00Z", FIX_AS_OF)
        ],
        *[
            pytest.param(("rich", pid, fx.ts(step)), id=f"rich-{pid}-{step}")
            for pid in (A, B, C)
            for step in (8, 60)
        ],
    ],
)
def test_streamed_bytes_equal_the_in_memory_encoding(
    fixture_ledger: Ledger, rich: Ledger, which: tuple[str, str, str], chunk: int
) -> None:
    name, pid, at = which
    ledger = fixture_ledger if name == "fixture" else rich
    t = parse_as_of(at)
    whole = encode_bundle(record_evidence(ledger, pid, t))
    assert streamed(ledger, pid, t, chunk=chunk) == whole
    assert whole.endswith(b"\n") and whole.count(b"\n") == 1


def test_a_bundle_is_refused_before_its_first_byte(rich: Ledger) -> None:
    with pytest.raises(NotFound, match="has no paper snapshot as of"):
        open_bundle(rich, A, parse_ts(fx.ts(0)) - 1)
    with pytest.raises(NotFound, match="has never been observed in this ledger"):
        open_bundle(rich, "2912.99999", parse_ts(fx.ts(60)))


def test_known_at_bundle(new_db: Callable[[str], str]) -> None:
    clock = fx.Clock()
    ledger = Ledger(new_db("l.db"), clock=clock)
    ledger.append(rich_events()[:10])
    known = clock.advance()
    clock.advance()
    ledger.append(rich_events()[10:])
    t = parse_ts(fx.ts(60))
    bundle = record_evidence(ledger, A, t, known)
    assert bundle["known_at"] is not None and bundle["record"] == ledger.record(A, t, known)[0]
    assert bundle["record"] != ledger.record(A, t)[0]
    assert max(e["seq"] for e in bundle["events"]) <= 10 < bundle["proofs"][0]["tree_size"]
    report = check_bundle(encode_bundle(bundle), Checkpointer.for_db(ledger.store).verifier())
    assert report.ok and f"known at {bundle['known_at']}" in report.summary
    assert streamed(ledger, A, t, known) == encode_bundle(bundle)


# -- the CLI round trip and the tamper vectors ----------------------------------------------------


@pytest.fixture(scope="module")
def written(fixture_ledger: Ledger, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """`ledger bundle` of the fixture, and `ledger key`'s output."""
    out = tmp_path_factory.mktemp("bundle") / "bundle.json"
    db = fixture_ledger.url
    result = CliRunner().invoke(main, ["bundle", FIX_ID, "--as-of", FIX_AS_OF, "--out", str(out), "--db", db])
    assert result.exit_code == 0, result.output
    vkey = CliRunner().invoke(main, ["key", "--db", db]).output.strip()
    return out, vkey


def check_cli(path: Path, key: str) -> Result:
    return CliRunner().invoke(main, ["check-bundle", str(path), "--key", key])


def test_a_good_bundle_checks_with_no_database(written: tuple[Path, str], tmp_path: Path) -> None:
    path, vkey = written
    (tmp_path / "pub").write_text(vkey + "\n")
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        for key in (vkey, str(tmp_path / "pub")):
            result = CliRunner().invoke(
                main, ["check-bundle", str(path), "--key", key], env={"LEDGER_DB": "x.db"}
            )
            assert result.exit_code == 0, result.output
            assert result.output.startswith(f"OK: arXiv:{FIX_ID} as of 2026-08-09T23:59:59.999999Z")
            assert "rebuilt byte for byte from its 132 events" in result.output
            assert "56 observation digests" in result.output
    finally:
        os.chdir(cwd)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pub"]  # no database was created
    bundle = json.loads(path.read_bytes())
    assert sorted(bundle) == ["checkpoint", "events", "key", "known_at", "proofs", "record", "schema"]
    assert sorted(bundle["events"][0]) == [
        "data", "event_id", "hash", "observed_at", "prev_hash", "recorded_at", "seq", "stream",
        "stream_version", "type",
    ]  # fmt: skip


def _seq_of(
    bundle: dict[str, Any], type_: str, where: Callable[[dict[str, Any]], bool] = lambda d: True
) -> int:
    return next(e["seq"] for e in bundle["events"] if e["type"] == type_ and where(e["data"]))


def _proof(bundle: dict[str, Any], seq: int) -> dict[str, Any]:
    return next(p for p in bundle["proofs"] if p["seq"] == seq)


def _flip_b64(h: str, at: int = 0) -> str:
    raw = bytearray(base64.b64decode(h))
    raw[at] ^= 0x01
    return base64.b64encode(bytes(raw)).decode()


def event_altered(b: dict[str, Any]) -> list[str]:
    seq = _seq_of(b, "resolution.observed", lambda d: d["status"] == "verified_exact")
    event = next(e for e in b["events"] if e["seq"] == seq)
    event["data"]["status"] = "unresolved"
    return [
        f"event seq {seq}: its hash does not match its envelope (the event was altered)",
        f"event seq {seq}: inclusion proof does not lead to the checkpoint root",
        "record differs from the events at outbound[",
        '.resolution.status: the bundle says "verified_exact", the events give "unresolved"',
    ]


def event_removed(b: dict[str, Any]) -> list[str]:
    seq = _seq_of(b, "standing.checked")
    b["events"] = [e for e in b["events"] if e["seq"] != seq]
    b["proofs"] = [p for p in b["proofs"] if p["seq"] != seq]
    return ["record differs from the events at outbound[0].standing_notice.source_receipts[1]"]


def event_added(b: dict[str, Any]) -> list[str]:
    # A forged later resolution, chained properly after the last event: only the tree catches it.
    last = max(b["events"], key=lambda e: e["seq"])
    victim = next(e for e in b["events"] if e["type"] == "resolution.observed")
    forged = {**victim, "seq": last["seq"] + 1, "prev_hash": last["hash"], "stream_version": 999}
    forged["data"] = {**victim["data"], "status": "malformed_identifier"}
    forged["observed_at"] = "2026-08-09T00:00:00Z"
    forged["recorded_at"] = "2026-08-09T00:00:00.000000Z"
    forged["event_id"] = "00000000-0000-4000-8000-000000000000"
    stored = msgspec_event(forged)
    forged["hash"] = link_hash(forged["prev_hash"], envelope_body(stored))
    b["events"].append(forged)
    b["proofs"].append({**_proof(b, last["seq"]), "seq": forged["seq"], "leaf_index": forged["seq"] - 1})
    return [
        f"event seq {forged['seq']}: beyond the checkpoint's tree size {last['seq']}",
        '.resolution.status: the bundle says "unresolved", the events give "malformed_identifier"',
    ]


def msgspec_event(e: dict[str, Any]) -> Any:
    from ledger.model.events import StoredEvent

    return StoredEvent(**{**e, "data": canonical(e["data"])})


def bad_signature(b: dict[str, Any]) -> list[str]:
    head, _, sig = b["checkpoint"].rstrip("\n").rpartition(" ")
    b["checkpoint"] = f"{head} {_flip_b64(sig, 10)}\n"
    return ["checkpoint: the signature by", "does not verify"]


def wrong_leaf(b: dict[str, Any]) -> list[str]:
    first, second = b["proofs"][3], b["proofs"][4]
    first["inclusion_path"], second["inclusion_path"] = second["inclusion_path"], first["inclusion_path"]
    return [f"event seq {first['seq']}: inclusion proof does not lead to the checkpoint root"]


def flipped_bit_in_proof(b: dict[str, Any]) -> list[str]:
    p = b["proofs"][16]
    p["inclusion_path"][2] = _flip_b64(p["inclusion_path"][2])
    return [f"event seq {p['seq']}: inclusion proof does not lead to the checkpoint root"]


def truncated_proof(b: dict[str, Any]) -> list[str]:
    p = b["proofs"][20]
    p["inclusion_path"].pop()
    return [
        f"event seq {p['seq']}: inclusion proof: the proof has 7 hashes, fewer than a tree of size 132 needs"
    ]


def wrong_tree_size(b: dict[str, Any]) -> list[str]:
    p = b["proofs"][0]
    p["tree_size"] = 131
    return [f"event seq {p['seq']}: its proof is for tree size 131, the checkpoint's is 132"]


def record_altered(b: dict[str, Any]) -> list[str]:
    obs = b["record"]["outbound"][3]
    old = obs["resolution"]["status"]
    obs["resolution"]["status"] = "verified_fuzzy" if old != "verified_fuzzy" else "unresolved"
    return [
        "record differs from the events at outbound[3].resolution.status",
        "record: outbound[3].observation_digest does not match its content",
        "record: context_digest does not match its content",
    ]


def proof_removed(b: dict[str, Any]) -> list[str]:
    seq = b["proofs"].pop(7)["seq"]
    return [f"event seq {seq}: no inclusion proof"]


TAMPERS: list[Any] = [
    pytest.param(event_altered, id="bundle-event-altered"),
    pytest.param(event_removed, id="bundle-event-removed"),
    pytest.param(event_added, id="bundle-event-added"),
    pytest.param(bad_signature, id="checkpoint-bad-signature"),
    pytest.param(wrong_leaf, id="wrong-leaf"),
    pytest.param(flipped_bit_in_proof, id="flipped-bit-in-proof"),
    pytest.param(truncated_proof, id="truncated-proof"),
    pytest.param(wrong_tree_size, id="wrong-tree-size"),
    pytest.param(record_altered, id="bundle-record-altered"),
    pytest.param(proof_removed, id="bundle-proof-removed"),
]


@pytest.mark.parametrize("tamper", TAMPERS)
def test_each_kind_of_damage_is_named(
    written: tuple[Path, str], tmp_path: Path, tamper: Callable[[dict[str, Any]], list[str]]
) -> None:
    path, vkey = written
    bundle = json.loads(path.read_bytes())
    expected = tamper(bundle)
    damaged = tmp_path / "damaged.json"
    damaged.write_text(json.dumps(bundle, indent=1, ensure_ascii=False))  # re-indented: still comparable
    result = check_cli(damaged, vkey)
    assert result.exit_code == 1, result.output
    assert result.output.startswith("FAILED: ")
    for text in expected:
        assert text in result.output, result.output


def test_a_reindented_bundle_still_checks(written: tuple[Path, str], tmp_path: Path) -> None:
    path, vkey = written
    again = tmp_path / "indented.json"
    again.write_text(json.dumps(json.loads(path.read_bytes()), indent=2, ensure_ascii=False))
    assert check_cli(again, vkey).exit_code == 0


def test_a_bundle_checked_with_another_key_fails(
    written: tuple[Path, str], new_db: Callable[[str], str]
) -> None:
    path, _ = written
    other = Checkpointer.for_db(Ledger(new_db("other.db")).store, "other.example/log").verifier()
    result = check_cli(path, other.vkey)
    assert result.exit_code == 1
    assert "checkpoint: no signature by the key other.example/log+" in result.output
    assert "note: the bundle names the key" in result.output
    bad = CliRunner().invoke(main, ["check-bundle", str(path), "--key", "not-a-key"])
    assert bad.exit_code == 2 and "--key" in bad.output


def test_garbage_is_not_a_bundle(tmp_path: Path) -> None:
    junk = tmp_path / "junk.json"
    junk.write_text('{"schema": 1}')
    vkey = parse_vkey("PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW")
    report = check_bundle(junk.read_bytes(), vkey)
    assert not report.ok and report.problems[0].startswith("not an evidence bundle")


# -- a much-cited paper: inbound observations past the cap --------------------------------------


def _citing(i: int) -> list[Event]:
    """Paper i's snapshot, its reference 0 to A, and that reference resolved to A."""
    pid, oid = f"2201.{i:05d}", fx.oid_of(1000 + i)
    return [
        fx.paper(pid, fx.ts(100 + i)),
        fx.citation(oid, pid, fx.ts(100 + i, 1), 0, fx.work(None, fx.ts(100 + i, 1))),
        fx.resolution(oid, fx.ts(100 + i, 2), cited_arxiv=A),
    ]


@pytest.fixture(scope="module")
def cited(db_factory: DbFactory, tmp_path_factory: pytest.TempPathFactory) -> Ledger:
    """The rich ledger plus 300 papers citing A: the record shows 100 inbound observations of 301."""
    ledger = Ledger(db_factory(tmp_path_factory.mktemp("cited"), "ledger.db"))
    ledger.append(rich_events())
    for first in range(0, 300, 100):
        ledger.append([e for i in range(first, first + 100) for e in _citing(i)])
    return ledger


def test_a_bundle_holds_the_hidden_inbound_events_and_checks(cited: Ledger, tmp_path: Path) -> None:
    t = parse_ts(fx.ts(1000))
    with cited.evidence(A, t) as ev:
        assert ev.hidden == 201 and len(ev.built.record.inbound) == 100
        every = ev.all_seqs()
    out = tmp_path / "b.json"
    args = ["bundle", A, "--as-of", fx.ts(1000), "--out", str(out), "--db", cited.url]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert f"{len(every)} events" in result.output
    bundle = json.loads(out.read_bytes())
    assert [e["seq"] for e in bundle["events"]] == every == [p["seq"] for p in bundle["proofs"]]
    kinds = [e["type"] for e in bundle["events"]]
    assert kinds.count("citation.observed") >= 301 and kinds.count("resolution.observed") >= 301
    assert out.read_bytes() == encode_bundle(record_evidence(cited, A, t))
    vkey = Checkpointer.for_db(cited.store).verifier().vkey
    checked = check_cli(out, vkey)
    assert checked.exit_code == 0, checked.output
    assert f"rebuilt byte for byte from its {len(every)} events" in checked.output


def test_a_bundle_missing_a_hidden_event_fails(cited: Ledger, tmp_path: Path) -> None:
    t = parse_ts(fx.ts(1000))
    bundle = json.loads(encode_bundle(record_evidence(cited, A, t)))
    # the last inbound observation in the record's order is hidden: drop its resolution
    last = f"2201.{299:05d}"
    oid = next(
        e["data"]["observation_id"] for e in bundle["events"] if e["data"].get("citing_arxiv_id") == last
    )
    gone = next(
        e["seq"] for e in bundle["events"] if e["data"].get("observation_id") == oid and "status" in e["data"]
    )
    bundle["events"] = [e for e in bundle["events"] if e["seq"] != gone]
    bundle["proofs"] = [p for p in bundle["proofs"] if p["seq"] != gone]
    damaged = tmp_path / "damaged.json"
    damaged.write_bytes(canonical(bundle))
    verifier = Checkpointer.for_db(cited.store).verifier()
    report = check_bundle(damaged.read_bytes(), verifier)
    assert not report.ok
    differs = (
        "record differs from the events at coverage[2].denominator: the bundle says 301, the events give 300"
    )
    assert differs in report.problems
    assert report == check_bundle_in_memory(damaged.read_bytes(), verifier)


# -- the streamed check against the in-memory one ---------------------------------------------------


def _pick(data: st.DataObject, items: list[Any]) -> int:
    return data.draw(st.integers(0, len(items) - 1))


def shuffle_events(b: dict[str, Any], data: st.DataObject) -> None:
    b["events"] = data.draw(st.permutations(b["events"]))


def duplicate_event(b: dict[str, Any], data: st.DataObject) -> None:
    e = json.loads(json.dumps(b["events"][_pick(data, b["events"])]))
    if data.draw(st.booleans()):
        e["observed_at"] = "2026-08-09T00:00:00Z"  # altered: a second, different event of that seq
    b["events"].insert(_pick(data, b["events"]), e)


def drop_event(b: dict[str, Any], data: st.DataObject) -> None:
    b["events"].pop(_pick(data, b["events"]))


def alter_data(b: dict[str, Any], data: st.DataObject) -> None:
    e = b["events"][_pick(data, b["events"])]
    key = data.draw(st.sampled_from(sorted(e["data"])))
    e["data"][key] = data.draw(st.sampled_from(["x", 7, None, "2026-01-01T00:00:00Z"]))


def alter_link(b: dict[str, Any], data: st.DataObject) -> None:
    e = b["events"][_pick(data, b["events"])]
    field = data.draw(st.sampled_from(["hash", "prev_hash"]))
    e[field] = data.draw(st.sampled_from([e[field].upper(), "0" * 64, "zz", b["events"][0]["hash"]]))


def alter_seq(b: dict[str, Any], data: st.DataObject) -> None:
    b["events"][_pick(data, b["events"])]["seq"] += data.draw(st.sampled_from([-1, 1, 1000]))


def drop_proof(b: dict[str, Any], data: st.DataObject) -> None:
    b["proofs"].pop(_pick(data, b["proofs"]))


def duplicate_proof(b: dict[str, Any], data: st.DataObject) -> None:
    p = json.loads(json.dumps(b["proofs"][_pick(data, b["proofs"])]))
    if data.draw(st.booleans()):
        p["inclusion_path"] = p["inclusion_path"][::-1]
    b["proofs"].insert(_pick(data, b["proofs"]), p)


def alter_proof(b: dict[str, Any], data: st.DataObject) -> None:
    p = b["proofs"][_pick(data, b["proofs"])]
    how = data.draw(st.sampled_from(["path", "index", "size", "seq", "base64", "short", "swap"]))
    if how == "path":
        p["inclusion_path"][_pick(data, p["inclusion_path"])] = _flip_b64(p["inclusion_path"][0], 3)
    elif how == "index":
        p["leaf_index"] += 1
    elif how == "size":
        p["tree_size"] -= 1
    elif how == "seq":
        p["seq"] += 10_000
    elif how == "base64":
        p["inclusion_path"][-1] = "not*base64"
    elif how == "short":
        p["inclusion_path"].pop()
    else:
        other = b["proofs"][_pick(data, b["proofs"])]
        p["inclusion_path"], other["inclusion_path"] = other["inclusion_path"], p["inclusion_path"]


def alter_top(b: dict[str, Any], data: st.DataObject) -> None:
    what = data.draw(st.sampled_from(["schema", "key", "checkpoint", "thesis", "as_of", "known_at"]))
    if what == "schema":
        b["schema"] = "another.v1"
    elif what == "key":
        b["key"] = "someone+00000000+AAAA"
    elif what == "checkpoint":
        head, _, sig = b["checkpoint"].rstrip("\n").rpartition(" ")
        b["checkpoint"] = f"{head} {_flip_b64(sig, 5)}\n"
    elif what == "thesis":
        b["record"]["thesis"] = "As of never."
    elif what == "as_of":
        b["record"]["as_of"] = "2026-08-08T00:00:00Z"
    else:
        b["known_at"] = "2026-08-08T06:00:00Z"


MUTATIONS = [
    shuffle_events,
    duplicate_event,
    drop_event,
    alter_data,
    alter_link,
    alter_seq,
    drop_proof,
    duplicate_proof,
    alter_proof,
    alter_top,
]


def _layout(b: dict[str, Any], how: str) -> bytes:
    if how == "canonical":
        return encode_bundle(b)
    if how == "indented":
        return json.dumps(b, indent=2, ensure_ascii=False).encode()
    # every key in reverse order: the proofs come before the events and the checkpoint
    return json.dumps(dict(reversed(list(b.items()))), ensure_ascii=False).encode()


@settings(
    max_examples=examples(80), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_the_streamed_check_names_what_the_in_memory_one_names(written: tuple[Path, str], data: Any) -> None:
    path, vkey = written
    bundle = json.loads(path.read_bytes())
    for mutate in data.draw(st.lists(st.sampled_from(MUTATIONS), min_size=0, max_size=3)):
        mutate(bundle, data)
    raw = _layout(bundle, data.draw(st.sampled_from(["canonical", "indented", "reversed"])))
    verifier = parse_vkey(vkey)
    streamed_report, memory_report = check_bundle(raw, verifier), check_bundle_in_memory(raw, verifier)
    if memory_report.problems[:1] and memory_report.problems[0].startswith("not an evidence bundle"):
        assert not streamed_report.ok and streamed_report.problems[0].startswith("not an evidence bundle")
    else:
        assert streamed_report == memory_report


@pytest.mark.parametrize(
    "text",
    [
        pytest.param(b"", id="empty"),
        pytest.param(b"[]", id="an-array"),
        pytest.param(b'{"schema": "x"', id="cut-off"),
        pytest.param(b'{"schema": 1}', id="wrong-type"),
        pytest.param(b'{"schema": "x", "schema": "y"}', id="repeated-member"),
        pytest.param(b'{"nope": 1}', id="unknown-member"),
        pytest.param(b'{"events": [1]}', id="an-event-that-is-not-an-object"),
        pytest.param(b'{"events": [{"seq": "one"}]}', id="a-seq-that-is-not-a-number"),
        pytest.param(b'{"events": []} trailing', id="trailing-bytes"),
    ],
)
def test_what_is_not_a_bundle_is_named(text: bytes) -> None:
    vkey = parse_vkey("PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW")
    report = check_bundle(text, vkey)
    assert not report.ok and len(report.problems) == 1
    assert report.problems[0].startswith("not an evidence bundle: ")
