"""A screen's offline bundle (service/proofs/screen_bundle.py, screen_check.py): the checkpoint of the
head a screen was computed at, a bundle of its rows' events that checks with no database, and each kind
of damage named. On the backend under test."""

from __future__ import annotations

import base64
import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import msgspec
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ledger.model.errors import InvalidEvent
from ledger.model.events import Event, StoredEvent
from ledger.model.instants import format_as_of, parse_ts
from ledger.tlog.checkpoint import Checkpointer, NotSigned
from ledger.tlog.checkpoint_notes import unsigned_checkpoint
from service.ledger import Ledger
from service.proofs.checker import check_bundle
from service.proofs.screen_bundle import open_screen_bundle
from service.proofs.screen_claims import Claim, ScreenHead, claim_of
from tests import factories as fx
from tests.api_fixtures import ledger_command
from tests.conftest import NewDb, examples

A, B = "2101.00001", "2101.00002"
TIMEOUT = 60


def screened_events() -> list[Event]:
    """A cites w-1 (resolved exactly), B cites w-2 (resolved fuzzily), A cites w-3 (unresolved); two
    sources' checks list notices for w-1 and w-2."""
    return [
        fx.paper(A, fx.ts(0)),
        fx.paper(B, fx.ts(1)),
        fx.citation(fx.oid_of(0), A, fx.ts(2), 0, fx.work("w-1", fx.ts(2))),
        fx.resolution(fx.oid_of(0), fx.ts(3), cited=fx.work("w-1", fx.ts(3))),
        fx.citation(fx.oid_of(1), B, fx.ts(4), 3, fx.work("w-2", fx.ts(4))),
        fx.resolution(
            fx.oid_of(1), fx.ts(5), "verified_fuzzy", cited=fx.work("w-2", fx.ts(5)), resolver="crossref"
        ),
        fx.citation(fx.oid_of(2), A, fx.ts(6), 1, fx.work("w-3", fx.ts(6))),
        fx.resolution(fx.oid_of(2), fx.ts(7), "unresolved", cited=fx.work("w-3", fx.ts(7))),
        fx.check("crossref", fx.ts(8), ["w-1", "w-2"], [fx.notice("w-1"), fx.notice("w-2", "correction")]),
        fx.check("retraction_watch", fx.ts(9), None, [fx.notice("w-1", "expression_of_concern", None)]),
    ]


class Screened:
    """A ledger holding screened_events, the seqs of its events by what they are, and the screen's rows."""

    def __init__(self, ledger: Ledger) -> None:
        self.ledger = ledger
        self.size = ledger.head().seq
        log = ledger.store.read_log()
        self.by_seq: dict[int, StoredEvent] = {e.seq: e for e in log}
        self.res = {self.data(e.seq)["observation_id"]: e.seq for e in log if e.type == "resolution.observed"}
        self.cites = {self.data(e.seq)["observation_id"]: e.seq for e in log if e.type == "citation.observed"}
        self.checks = {self.data(e.seq)["source"]: e.seq for e in log if e.type == "standing.checked"}
        self.claims = [
            claim_of(self.item(self.res[fx.oid_of(0)], self.checks["crossref"])),
            claim_of(self.item(self.res[fx.oid_of(0)], self.checks["retraction_watch"])),
            claim_of(self.item(self.res[fx.oid_of(1)], self.checks["crossref"])),
        ]
        self.head = ScreenHead(format_as_of(parse_ts(fx.ts(60))), None, self.size, {"collection": "ours"})

    def data(self, seq: int) -> dict[str, Any]:
        return json.loads(self.by_seq[seq].data)  # type: ignore[no-any-return]

    def item(self, res_seq: int, check_seq: int, learned_seq: int | None = -1) -> dict[str, Any]:
        """A screen item (service/screen.py `item_json`'s shape) of a resolution and the check listing
        a notice on its work, learned from `learned_seq` (-1: that check; None: none named)."""
        r, check = self.data(res_seq), self.data(check_seq)
        work = r["cited_work"]["work_id"]
        notice = next(n for n in check["notices"] if n["work_id"] == work)
        learned = check_seq if learned_seq == -1 else learned_seq
        citation = self.cites[r["observation_id"]]
        return {
            "citing": {"arxiv_id": self.by_seq[res_seq].stream.removeprefix("paper:"), "title": "A paper"},
            "reference_index": self.data(citation)["reference_index"],
            "observation_id": r["observation_id"],
            "work": r["cited_work"],
            "resolution": {
                "status": r["status"],
                "resolver_source": r["resolver_source"],
                "observed_at": self.by_seq[res_seq].observed_at,
                "seq": res_seq,
                "citation_seq": citation,
                "evidence": "/paper/...",
            },
            "notice": {
                **notice,
                "observed_at": self.by_seq[check_seq].observed_at,
                "source": check["source"],
                "check_seq": check_seq,
                "learned_at": None if learned is None else self.by_seq[learned].recorded_at,
                "learned_seq": learned,
                "evidence": "/events/...",
            },
            "seqs": [],
        }


@pytest.fixture
def screened(new_db: NewDb) -> Screened:
    ledger = Ledger(new_db("screen.db"))
    events = screened_events()
    for batch in (events[:8], events[8:9], events[9:]):  # each check learnt later: its own recorded_at
        ledger.append(batch)
    return Screened(ledger)


def written(s: Screened, **head: Any) -> bytes:
    bundle = open_screen_bundle(s.ledger, msgspec.structs.replace(s.head, **head), s.claims)
    return b"".join(bundle.chunks(chunk=2))  # more than one chunk of events and proofs


def vkey(ledger: Ledger) -> str:
    return Checkpointer.for_db(ledger.store).verifier().vkey


def check(raw: bytes, ledger: Ledger) -> Any:
    return check_bundle(raw, Checkpointer.for_db(ledger.store).verifier())


# -- writing and checking --------------------------------------------------------------------------


def test_a_screen_bundle_checks(screened: Screened) -> None:
    raw = written(screened)
    report = check(raw, screened.ledger)
    assert report.ok, report.problems
    assert report.summary.startswith(
        f"OK: a screen as of {screened.head.as_of}, computed at tree size {screened.size}: "
        "each of its 3 row(s)"
    )
    assert "the 6 events' hashes were recomputed" in report.summary
    bundle = json.loads(raw)
    assert sorted(bundle) == ["checkpoint", "claims", "events", "key", "proofs", "schema", "screen"]
    assert bundle["schema"] == "citation-ledger.screen-bundle.v1"
    assert [e["seq"] for e in bundle["events"]] == [p["seq"] for p in bundle["proofs"]]
    assert bundle["claims"] == msgspec.to_builtins(screened.claims)
    assert raw == b"".join(open_screen_bundle(screened.ledger, screened.head, screened.claims).chunks())


def test_a_screen_bundle_at_an_older_head_checks(screened: Screened) -> None:
    screened.ledger.append([fx.paper(A, fx.ts(30), version=2)])
    Checkpointer.for_db(screened.ledger.store).latest()
    raw = written(screened)
    assert unsigned_checkpoint(json.loads(raw)["checkpoint"]).size == screened.size
    assert check(raw, screened.ledger).ok


def test_an_empty_screen_checks(screened: Screened) -> None:
    bundle = open_screen_bundle(screened.ledger, screened.head, [])
    report = check(b"".join(bundle.chunks()), screened.ledger)
    assert report.ok and "each of its 0 row(s)" in report.summary


def test_the_known_at_screen_checks_its_events_were_recorded_by_then(screened: Screened) -> None:
    latest = max(screened.by_seq[s].recorded_at for s in (*screened.res.values(), *screened.checks.values()))
    assert check(written(screened, known_at=latest), screened.ledger).ok


@pytest.mark.parametrize(
    ("change", "message"),
    [
        pytest.param(
            {"notice": {"kind": "withdrawal"}},
            r"claims: claims\[0\]: the notice event seq \d+ lists no such withdrawal notice",
            id="kind-not-carried",
        ),
        pytest.param(
            {"resolution": {"status": "verified_fuzzy"}},
            r"claims\[0\]: the resolution event seq \d+ has status 'verified_exact', not 'verified_fuzzy'",
            id="status",
        ),
        pytest.param({"citing": B}, r"is on the stream 'paper:2101.00001', not", id="citing"),
    ],
)
def test_a_screen_whose_rows_its_events_do_not_carry_writes_nothing(
    screened: Screened, change: dict[str, Any], message: str
) -> None:
    row = msgspec.to_builtins(screened.claims[0])
    for k, v in change.items():
        row[k] = {**row[k], **v} if isinstance(v, dict) else v
    with pytest.raises(InvalidEvent, match=message):
        open_screen_bundle(screened.ledger, screened.head, [msgspec.convert(row, Claim)])


def test_a_screen_item_that_is_no_claim_is_refused(screened: Screened) -> None:
    good = screened.item(screened.res[fx.oid_of(0)], screened.checks["crossref"])
    unresolved = {**good, "resolution": {**good["resolution"], "status": "unresolved"}}
    with pytest.raises(
        msgspec.ValidationError, match=r"Invalid enum value 'unresolved' - at `\$.resolution.status`"
    ):
        claim_of(unresolved)
    with pytest.raises(KeyError, match="learned_seq"):
        claim_of({**good, "notice": {k: v for k, v in good["notice"].items() if k != "learned_seq"}})


def test_a_row_past_the_screens_head_writes_nothing(screened: Screened) -> None:
    with pytest.raises(InvalidEvent, match="past the screen's tree size 3"):
        open_screen_bundle(
            screened.ledger, msgspec.structs.replace(screened.head, tree_size=3), screened.claims
        )


def test_a_read_only_screen_bundle_needs_a_kept_checkpoint_of_its_head(screened: Screened) -> None:
    with pytest.raises(NotSigned):
        open_screen_bundle(screened.ledger, screened.head, screened.claims, sign=False)
    Checkpointer.for_db(screened.ledger.store).latest()
    bundle = open_screen_bundle(screened.ledger, screened.head, screened.claims, sign=False)
    assert check(b"".join(bundle.chunks()), screened.ledger).ok


# -- the tamper vectors, named after the damage ----------------------------------------------------


def _flip_b64(h: str, at: int = 0) -> str:
    raw = bytearray(base64.b64decode(h))
    raw[at] ^= 0x01
    return base64.b64encode(bytes(raw)).decode()


def _event(b: dict[str, Any], seq: int) -> dict[str, Any]:
    return next(e for e in b["events"] if e["seq"] == seq)


def event_bytes_changed(b: dict[str, Any], s: Screened) -> list[str]:
    seq = b["claims"][0]["resolution"]["seq"]
    _event(b, seq)["data"]["status"] = "verified_fuzzy"
    return [
        f"event seq {seq}: its hash does not match its envelope (the event was altered)",
        f"event seq {seq}: inclusion proof does not lead to the checkpoint root",
        f"claims[0]: its resolution event seq {seq} is not in the bundle (or not proven)",
    ]


def notice_bytes_changed(b: dict[str, Any], s: Screened) -> list[str]:
    seq = b["claims"][2]["notice"]["check_seq"]
    _event(b, seq)["data"]["notices"][1]["kind"] = "retraction"
    return [
        f"event seq {seq}: its hash does not match its envelope",
        f"claims[2]: its notice event seq {seq}",
    ]


def proof_altered(b: dict[str, Any], s: Screened) -> list[str]:
    p = b["proofs"][1]
    p["inclusion_path"][0] = _flip_b64(p["inclusion_path"][0])
    return [
        f"event seq {p['seq']}: inclusion proof does not lead to the checkpoint root",
        "is not in the bundle",
    ]


def proof_removed(b: dict[str, Any], s: Screened) -> list[str]:
    seq = b["proofs"].pop(0)["seq"]
    return [f"event seq {seq}: no inclusion proof", f"event seq {seq} is not in the bundle (or not proven)"]


def checkpoint_signature_broken(b: dict[str, Any], s: Screened) -> list[str]:
    head, _, sig = b["checkpoint"].rstrip("\n").rpartition(" ")
    b["checkpoint"] = f"{head} {_flip_b64(sig, 10)}\n"
    return ["checkpoint: the signature by", "does not verify"]


def checkpoint_of_another_head(b: dict[str, Any], s: Screened) -> list[str]:
    s.ledger.append([fx.paper(A, fx.ts(30), version=2)])
    b["checkpoint"] = Checkpointer.for_db(s.ledger.store).latest().note
    return [
        f"its proof is for tree size {s.size}, the checkpoint's is {s.size + 1}",
        f"the checkpoint is of tree size {s.size + 1}, but the screen says it was computed at tree size "
        f"{s.size}",
    ]


def row_claims_a_notice_the_events_do_not_carry(b: dict[str, Any], s: Screened) -> list[str]:
    b["claims"][1]["notice"]["kind"] = "retraction"
    seq = b["claims"][1]["notice"]["check_seq"]
    return [
        f"claims[1]: the notice event seq {seq} lists no such retraction notice (notice DOI None, record 42) "
        "for work 'w-1'",
        f"claims[1]: the learned notice event seq {seq} lists no such retraction notice",
    ]


def row_claims_another_reference(b: dict[str, Any], s: Screened) -> list[str]:
    b["claims"][2]["reference_index"] = 5
    seq = b["claims"][2]["resolution"]["citation_seq"]
    return [f"claims[2]: the citation event seq {seq} gives reference index 3, not 5"]


def row_claims_another_citation(b: dict[str, Any], s: Screened) -> list[str]:
    b["claims"][2]["resolution"]["citation_seq"] = s.cites[fx.oid_of(0)]
    return [
        f"the citation event seq {s.cites[fx.oid_of(0)]} is on the stream 'paper:2101.00001', not the citing "
        "paper's 'paper:2101.00002'",
        f"is of observation {fx.oid_of(0)}, not {fx.oid_of(1)}",
    ]


def row_claims_another_work(b: dict[str, Any], s: Screened) -> list[str]:
    b["claims"][2]["work_id"] = "w-1"
    r = b["claims"][2]["resolution"]["seq"]
    return [
        "claims[2]: the notice event seq",
        "lists no such correction notice (notice DOI 10.1000/notice, record 42) for work 'w-1'",
        f"claims[2]: the resolution event seq {r} ties the reference to work 'w-2', not 'w-1'",
    ]


def row_claims_another_status(b: dict[str, Any], s: Screened) -> list[str]:
    b["claims"][2]["resolution"]["status"] = "verified_exact"
    return ["has status 'verified_fuzzy', not 'verified_exact'"]


def row_claims_another_citing_paper(b: dict[str, Any], s: Screened) -> list[str]:
    b["claims"][0]["citing"] = B
    return ["is on the stream 'paper:2101.00001', not the citing paper's 'paper:2101.00002'"]


def row_claims_learning_earlier(b: dict[str, Any], s: Screened) -> list[str]:
    b["claims"][0]["notice"]["learned_at"] = "2026-01-01T00:00:00.000000Z"
    seq = b["claims"][0]["notice"]["learned_seq"]
    return [
        f"claims[0]: the learned notice event seq {seq} was recorded at",
        "not 2026-01-01T00:00:00.000000Z",
    ]


def row_claims_learning_with_no_event(b: dict[str, Any], s: Screened) -> list[str]:
    b["claims"][0]["notice"]["learned_seq"] = None
    return ["claims[0]: it says when the ledger learned the notice but names no learned_seq"]


def row_added_naming_an_event_not_in_the_bundle(b: dict[str, Any], s: Screened) -> list[str]:
    row = json.loads(json.dumps(b["claims"][0]))
    row["observation_id"], row["resolution"]["seq"] = fx.oid_of(2), s.res[fx.oid_of(2)]
    row["resolution"]["citation_seq"] = s.cites[fx.oid_of(2)]
    b["claims"].append(row)
    return [
        f"claims[3]: its citation event seq {s.cites[fx.oid_of(2)]} is not in the bundle (or not proven)",
        f"claims[3]: its resolution event seq {s.res[fx.oid_of(2)]} is not in the bundle (or not proven)",
    ]


def row_added_twice(b: dict[str, Any], s: Screened) -> list[str]:
    b["claims"].append(b["claims"][1])
    return ["claims[3]: the same row twice"]


def row_added_with_an_unchecked_field(b: dict[str, Any], s: Screened) -> list[str]:
    b["claims"].append({**b["claims"][0], "title": "anything"})
    return ["not an evidence bundle: Object contains unknown field `title` - at `$.claims[3]`"]


def event_removed(b: dict[str, Any], s: Screened) -> list[str]:
    seq = b["claims"][2]["resolution"]["seq"]
    b["events"] = [e for e in b["events"] if e["seq"] != seq]
    b["proofs"] = [p for p in b["proofs"] if p["seq"] != seq]
    return [f"claims[2]: its resolution event seq {seq} is not in the bundle (or not proven)"]


def screen_as_of_moved_before_its_events(b: dict[str, Any], s: Screened) -> list[str]:
    b["screen"]["as_of"] = fx.ts(8, 1)  # before the retraction_watch check
    return ["claims[1]: event seq", "after the screen's as_of"]


def screen_known_at_moved_before_its_events(b: dict[str, Any], s: Screened) -> list[str]:
    b["screen"]["known_at"] = "2000-01-01T00:00:00Z"
    return ["was recorded at", "after the screen's known_at 2000-01-01T00:00:00Z"]


TAMPERS: list[Any] = [
    event_bytes_changed,
    notice_bytes_changed,
    proof_altered,
    proof_removed,
    checkpoint_signature_broken,
    checkpoint_of_another_head,
    row_claims_a_notice_the_events_do_not_carry,
    row_claims_another_work,
    row_claims_another_status,
    row_claims_another_citing_paper,
    row_claims_learning_earlier,
    row_claims_learning_with_no_event,
    row_claims_another_reference,
    row_claims_another_citation,
    row_added_naming_an_event_not_in_the_bundle,
    row_added_twice,
    row_added_with_an_unchecked_field,
    event_removed,
    screen_as_of_moved_before_its_events,
    screen_known_at_moved_before_its_events,
]


@pytest.mark.parametrize("tamper", [pytest.param(t, id=t.__name__.replace("_", "-")) for t in TAMPERS])
def test_each_kind_of_damage_is_named(
    screened: Screened, tamper: Callable[[dict[str, Any], Screened], list[str]]
) -> None:
    bundle = json.loads(written(screened))
    expected = tamper(bundle, screened)
    report = check(json.dumps(bundle, indent=1).encode(), screened.ledger)
    assert not report.ok
    text = "\n".join(report.problems)
    for part in expected:
        assert part in text, text


@pytest.mark.parametrize("removed", [0, 1, 2])
def test_a_row_removed_is_fine(screened: Screened, removed: int) -> None:
    bundle = json.loads(written(screened))
    del bundle["claims"][removed]
    report = check(json.dumps(bundle).encode(), screened.ledger)
    assert report.ok, report.problems
    assert "each of its 2 row(s)" in report.summary
    # row 0's events are all named by rows 1 (the reference) and 2 (the crossref check); row 1's check
    # by no other row; row 2's citation and resolution by no other row
    unnamed = [0, 1, 2][removed]
    if unnamed:
        assert (
            f"{unnamed} proven event(s) in the bundle are named by no claim (rows left out)" in report.notes
        )
    else:
        assert not any("named by no claim" in n for n in report.notes)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        pytest.param(lambda b: b.pop("screen"), "Object missing required field `screen`", id="no-screen"),
        pytest.param(lambda b: b.pop("claims"), "Object missing required field `claims`", id="no-claims"),
        pytest.param(lambda b: b.update(record={}), "Object contains unknown field `record`", id="a-record"),
        pytest.param(
            lambda b: b["screen"].update(tree_size="9"),
            r"Expected `int`, got `str` - at `$.screen.tree_size`",
            id="tree-size-not-a-number",
        ),
        pytest.param(
            lambda b: b["claims"][1]["resolution"].update(status="unresolved"),
            "Invalid enum value 'unresolved' - at `$.claims[1].resolution.status`",
            id="a-row-shown-unresolved",
        ),
        pytest.param(lambda b: b.update(claims={}), "expected '['", id="claims-not-an-array"),
    ],
)
def test_what_is_not_a_screen_bundle_is_named(
    screened: Screened, edit: Callable[[dict[str, Any]], Any], message: str
) -> None:
    bundle = json.loads(written(screened))
    edit(bundle)
    report = check(json.dumps(bundle).encode(), screened.ledger)
    assert not report.ok and len(report.problems) == 1
    assert report.problems[0].startswith("not an evidence bundle: ") and message in report.problems[0]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        pytest.param(lambda b: b.update(claims=[]), "Object contains unknown field `claims`", id="claims"),
        pytest.param(lambda b: b.update(key=None), "Expected `str`, got `null` - at `$.key`", id="no-key"),
    ],
)
def test_a_record_bundle_is_still_held_to_its_own_members(
    screened: Screened, edit: Callable[[dict[str, Any]], Any], message: str
) -> None:
    from service.proofs.bundle import open_bundle

    bundle = json.loads(b"".join(open_bundle(screened.ledger, A).chunks()))
    assert check(json.dumps(bundle).encode(), screened.ledger).ok
    edit(bundle)
    report = check(json.dumps(bundle).encode(), screened.ledger)
    assert report.problems == [f"not an evidence bundle: {message}"]


def test_a_bundle_checked_with_another_key_fails(screened: Screened, new_db: NewDb) -> None:
    other = Checkpointer.for_db(Ledger(new_db("other.db")).store, "other.example/log").verifier()
    report = check_bundle(written(screened), other)
    assert not report.ok
    assert report.problems[0].startswith("checkpoint: no signature by the key other.example/log+")
    assert report.notes[0].startswith("the bundle names the key")


# -- the CLI, with no database -----------------------------------------------------------------------


@pytest.mark.process
def test_check_bundle_verifies_a_screen_bundle_with_no_database(screened: Screened, tmp_path: Path) -> None:
    good, bad, empty = tmp_path / "screen.bundle.json", tmp_path / "forged.bundle.json", tmp_path / "empty"
    good.write_bytes(written(screened))
    forged = json.loads(good.read_bytes())
    forged["claims"][0]["notice"]["kind"] = "withdrawal"
    bad.write_text(json.dumps(forged))
    empty.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LEDGER_", "PG"))}
    key = vkey(screened.ledger)

    def run(path: Path) -> subprocess.CompletedProcess[str]:
        argv = [*ledger_command(), "check-bundle", str(path), "--key", key]
        return subprocess.run(
            argv, cwd=empty, env=env, capture_output=True, text=True, timeout=TIMEOUT, check=False
        )

    ok = run(good)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert ok.stdout.startswith(
        f"OK: a screen as of {screened.head.as_of}, computed at tree size {screened.size}"
    )
    refused = run(bad)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert refused.stdout.startswith(f"FAILED: 2 problem(s) in {bad}")  # the check, and the one learnt from
    assert (
        "claims[0]: the notice event seq" in refused.stdout
        and "lists no such withdrawal notice" in refused.stdout
    )
    assert list(empty.iterdir()) == []  # no database was made


# -- a witnessed log ----------------------------------------------------------------------------------


def test_a_screen_at_the_cosigned_head_carries_the_cosignatures(screened: Screened, tmp_path: Path) -> None:
    from service.ops.witnessing import Cosigner, cosigned_note
    from tests.service.proofs.test_witnessing import Witnesses

    ledger = screened.ledger
    ws = Witnesses(tmp_path, Checkpointer.for_db(ledger.store).verifier())
    assert Cosigner(ledger.store, ws.list, ws.post).cosign() is not None
    raw = written(screened)
    assert json.loads(raw)["checkpoint"] == cosigned_note(ledger.store)
    report = check_bundle(raw, Checkpointer.for_db(ledger.store).verifier(), ws.quorum)
    assert report.ok and "cosigned by 2 witness(es) (w1.example, w2.example)" in report.summary
    # a screen of a later head than the witnesses saw is signed by the log alone, and a quorum refuses it
    ledger.append([fx.paper(A, fx.ts(30), version=2)])
    later = b"".join(
        open_screen_bundle(
            ledger, msgspec.structs.replace(screened.head, tree_size=screened.size + 1), screened.claims
        ).chunks()
    )
    assert json.loads(later)["checkpoint"] != cosigned_note(ledger.store)
    refused = check_bundle(later, Checkpointer.for_db(ledger.store).verifier(), ws.quorum)
    assert not refused.ok and "0 valid witness cosignature(s) where 2 are required" in refused.problems[0]


# -- the rule: a row checks exactly when its events say it ------------------------------------------


def true_rows(s: Screened) -> list[Claim]:
    """Every row the events support, found by brute force over the log: a citation and a verified
    resolution of one reference on its paper's stream, a check listing a notice on the resolved work,
    and the check it was learned from (one of the same source listing it, or none named)."""
    of = {seq: (e, json.loads(e.data)) for seq, e in s.by_seq.items()}
    rows = []
    for c, cd in (v for v in of.values() if v[0].type == "citation.observed"):
        for r, rd in (v for v in of.values() if v[0].type == "resolution.observed"):
            if (rd["observation_id"], r.stream) != (cd["observation_id"], c.stream):
                continue
            if rd["status"] not in ("verified_exact", "verified_fuzzy") or rd["cited_work"] is None:
                continue
            for n, nd in (v for v in of.values() if v[0].type == "standing.checked"):
                for notice in (x for x in nd["notices"] if x["work_id"] == rd["cited_work"]["work_id"]):
                    learnt = [
                        e
                        for e, d in of.values()
                        if e.type == "standing.checked"
                        and d["source"] == nd["source"]
                        and notice in d["notices"]
                    ]
                    for learned in [None, *learnt]:
                        rows.append(
                            msgspec.convert(
                                {
                                    "citing": cd["citing_arxiv_id"],
                                    "reference_index": cd["reference_index"],
                                    "observation_id": cd["observation_id"],
                                    "work_id": notice["work_id"],
                                    "resolution": {
                                        "seq": r.seq,
                                        "citation_seq": c.seq,
                                        "status": rd["status"],
                                        "resolver_source": rd["resolver_source"],
                                        "observed_at": r.observed_at,
                                    },
                                    "notice": {
                                        **{k: v for k, v in notice.items() if k != "work_id"},
                                        "check_seq": n.seq,
                                        "source": nd["source"],
                                        "observed_at": n.observed_at,
                                        "learned_seq": None if learned is None else learned.seq,
                                        "learned_at": None if learned is None else learned.recorded_at,
                                    },
                                },
                                Claim,
                            )
                        )
    return rows


@settings(
    max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data())
def test_a_row_checks_exactly_when_its_events_say_it(screened: Screened, data: st.DataObject) -> None:
    truth = true_rows(screened)
    # the fixture's three rows (w-1 by two sources, w-2 by one), each learnt from its check or naming none
    assert len(truth) == 6 and all(c in truth for c in screened.claims)
    # one of each row (a row is the same row whichever check it names as learnt from)
    shown = [c for c in truth if c.notice.learned_seq is not None]
    bundle = json.loads(b"".join(open_screen_bundle(screened.ledger, screened.head, shown).chunks()))
    recorded = sorted({e.recorded_at for e in screened.by_seq.values()})
    observed = sorted({e.observed_at for e in screened.by_seq.values()})
    seqs = sorted(screened.by_seq)
    row = msgspec.to_builtins(data.draw(st.sampled_from(truth)))
    domains: dict[str, list[Any]] = {
        "citing": [A, B],
        "reference_index": [0, 1, 3],
        "observation_id": [fx.oid_of(n) for n in range(3)],
        "work_id": fx.WORKS,
        "notice.check_seq": seqs,
        "notice.source": fx.SOURCES,
        "notice.observed_at": observed,
        "notice.kind": ["retraction", "correction", "expression_of_concern"],
        "notice.notice_doi": ["10.1000/notice", None],
        "notice.record_id": ["42", None],
        "notice.raw_type": ["Retraction", "Correction"],
        "notice.reasons": [["Misconduct"], []],
        "notice.notice_date": ["2026-01-02", None],
        "notice.learned_seq": [*seqs, None],
        "notice.learned_at": [*recorded, None],
        "resolution.seq": seqs,
        "resolution.citation_seq": seqs,
        "resolution.status": ["verified_exact", "verified_fuzzy"],
        "resolution.resolver_source": ["local_arxiv", "crossref", None],
        "resolution.observed_at": observed,
    }
    for _ in range(data.draw(st.integers(1, 3))):
        path = data.draw(st.sampled_from(sorted(domains)))
        *outer, leaf = path.split(".")
        (row[outer[0]] if outer else row)[leaf] = data.draw(st.sampled_from(domains[path]))
    bundle["claims"] = [row]
    report = check(json.dumps(bundle).encode(), screened.ledger)
    event("a true row" if report.ok else "a row refused")
    assert report.ok == (msgspec.convert(row, Claim) in truth), report.problems
