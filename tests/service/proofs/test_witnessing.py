"""The ledger's side of its witnesses (service/witnessing.py) against in-process witnesses
(service/witness.py): each new checkpoint cosigned, a witness down or refusing costs only its own
cosignature, a slow one holds up neither the others nor the next checkpoint, each checkpoint costs
one request per witness, a split view gets none, and clients holding a quorum refuse what was not
cosigned."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from cli.main import main
from ledger.model.errors import InvalidEvent
from ledger.tlog.checkpoint import Checkpointer, Verifier, open_checkpoint
from ledger.tlog.cosign import NO_QUORUM, Quorum, WitnessSigner, cosignatures, load_or_create_witness_key
from ledger.tlog.witness_state import WitnessState
from service.ledger import Ledger
from service.ops.witnessing import Cosigner, Witness, cosigned_note, read_witnesses, request_body
from service.proofs.monitor import NOT_COSIGNED, observe
from service.proofs.witness import Witness as WitnessService
from tests.ledger.tlog.test_checkpoint import _grow
from tests.ledger.tlog.test_held_checkpoint import _rolled_back_and_regrown, _victim

NewDb = Callable[[str], str]
NOW = 1_780_000_000


class Witnesses:
    """Two witnesses in this process, reached through a `post` the Cosigner calls as it would HTTP."""

    def __init__(self, tmp: Path, log_vkey: Verifier, names: tuple[str, ...] = ("w1.example", "w2.example")):
        self.signers: dict[str, WitnessSigner] = {}
        self.services: dict[str, WitnessService] = {}
        self.down: set[str] = set()
        self.calls: list[str] = []
        for name in names:
            signer = load_or_create_witness_key(tmp / f"{name}.key", name)
            url = f"https://{name}"
            self.signers[url] = signer
            self.services[url] = WitnessService(
                WitnessState(tmp / f"{name}.db"), signer, {log_vkey.name: log_vkey}
            )  # type: ignore[attr-defined]

    @property
    def list(self) -> list[Witness]:
        return [Witness(url, s.verifier) for url, s in self.signers.items()]

    @property
    def quorum(self) -> Quorum:
        return Quorum(tuple(s.verifier for s in self.signers.values()), len(self.signers))

    def post(self, url: str, body: bytes) -> tuple[int, bytes]:
        base = url.removesuffix("/add-checkpoint")
        self.calls.append(base)
        if base in self.down:
            raise ConnectionError("connection refused")
        answer = self.services[base].add_checkpoint(body, NOW)
        return answer.status, answer.body


def _ledger(new_db: NewDb, events: int = 20) -> Ledger:
    ledger = Ledger(new_db("l.db"))
    _grow(ledger, 0, events)
    Checkpointer.for_db(ledger.store, "example.org/ledger").latest()  # the key, named
    return ledger


def _log_vkey(ledger: Ledger) -> Verifier:
    return Checkpointer.for_db(ledger.store).verifier()


def _witnessed(new_db: NewDb, tmp_path: Path) -> tuple[Ledger, Witnesses]:
    """A ledger of 20 events, and the witnesses of its log."""
    ledger = _ledger(new_db)
    return ledger, Witnesses(tmp_path, _log_vkey(ledger))


def test_each_new_checkpoint_is_cosigned_by_every_witness(new_db: NewDb, tmp_path: Path) -> None:
    ledger, ws = _witnessed(new_db, tmp_path)
    cosigner = Cosigner(ledger.store, ws.list, ws.post)
    first = cosigner.cosign()
    assert first is not None and (first.size, len(first.cosigned_by), first.refused) == (20, 2, {})
    note = cosigned_note(ledger.store)
    assert note == first.note and len(cosignatures(note, ws.quorum.witnesses)) == 2
    assert open_checkpoint(note, Checkpointer.for_db(ledger.store).verifier()).checkpoint.size == 20
    assert cosigner.cosign() is None and len(ws.calls) == 2  # the head did not move: nothing sent
    _grow(ledger, 20, 15, prefix="2105")
    grown = cosigner.cosign()
    assert grown is not None and grown.size == 35 and len(grown.cosigned_by) == 2
    for service in ws.services.values():  # each witness advanced with the consistency proof 20 -> 35
        assert service.state.latest("example.org/ledger").size == 35  # type: ignore[union-attr]


def test_a_witness_down_costs_only_its_own_cosignature_and_is_asked_again(
    new_db: NewDb, tmp_path: Path
) -> None:
    ledger, ws = _witnessed(new_db, tmp_path)
    w1, w2 = ws.list
    ws.down.add(w2.url)
    cosigner = Cosigner(ledger.store, ws.list, ws.post)
    done = cosigner.cosign()
    assert done is not None and done.cosigned_by == [w1.verifier.vkey]
    assert "unreachable: connection refused" in done.refused[w2.verifier.vkey]
    assert len(cosignatures(cosigned_note(ledger.store) or "", ws.quorum.witnesses)) == 1
    ws.down.clear()
    ws.calls.clear()
    again = cosigner.cosign()
    assert ws.calls == [w2.url]  # only the missing witness is asked, for the same checkpoint
    assert again is not None and again.size == 20 and len(again.cosigned_by) == 2


def test_a_new_cosigner_learns_each_witnesss_size_from_its_409(new_db: NewDb, tmp_path: Path) -> None:
    ledger, ws = _witnessed(new_db, tmp_path)
    assert Cosigner(ledger.store, ws.list, ws.post).cosign() is not None
    _grow(ledger, 20, 7, prefix="2105")
    ws.calls.clear()
    restarted = Cosigner(ledger.store, ws.list, ws.post)  # a new process: it knows no witness's size
    done = restarted.cosign()
    assert done is not None and done.size == 27 and len(done.cosigned_by) == 2
    assert len(ws.calls) == 4  # old 0 -> 409 "20", then old 20 with its proof, per witness


def test_steady_state_is_one_add_checkpoint_per_witness_per_checkpoint(new_db: NewDb, tmp_path: Path) -> None:
    ledger, ws = _witnessed(new_db, tmp_path)
    assert Cosigner(ledger.store, ws.list, ws.post).cosign() is not None
    cosigner = Cosigner(ledger.store, ws.list, ws.post)  # restarted: it learns each size from a 409 once
    sent: list[tuple[str, str]] = []  # (url, its `old N` line) of each request

    def post(url: str, body: bytes) -> tuple[int, bytes]:
        sent.append((url, body.decode().split("\n", 1)[0]))
        return ws.post(url, body)

    cosigner.post = post
    size = 20
    for round_ in range(4):
        _grow(ledger, 100 + 10 * round_, 3, prefix="2105")
        sent.clear()
        done = cosigner.cosign()
        assert done is not None and done.size == size + 3 and len(done.cosigned_by) == 2
        if round_ == 0:
            assert sorted(old for _, old in sent) == ["old 0", "old 0", f"old {size}", f"old {size}"]
        else:  # one request each, from the size it cosigned last, with its consistency proof
            assert sorted(sent) == sorted((w.url + "/add-checkpoint", f"old {size}") for w in ws.list)
        size += 3


class _Held:
    """A post that holds one witness's requests until released (a witness that is slow to answer)."""

    def __init__(self, ws: Witnesses, slow: str) -> None:
        self.ws, self.slow = ws, slow
        self.release = threading.Event()
        self.sent: list[str] = []  # the `old N` line of each request to the slow witness

    def __call__(self, url: str, body: bytes) -> tuple[int, bytes]:
        if url.startswith(self.slow):
            self.sent.append(body.decode().split("\n", 1)[0])
            assert self.release.wait(60), "never released"
        return self.ws.post(url, body)


def test_a_slow_witness_holds_up_neither_the_others_nor_the_next_checkpoint(
    new_db: NewDb, tmp_path: Path
) -> None:
    ledger, ws = _witnessed(new_db, tmp_path)
    w1, w2 = ws.list
    held = _Held(ws, w2.url)
    cosigner = Cosigner(ledger.store, ws.list, held)
    try:
        first = cosigner.cosign(wait_s=2.0)  # a bound on this round: room for the witness that answers
        assert first is not None and first.cosigned_by == [w1.verifier.vkey]
        assert first.waiting == (w2.verifier.vkey,) and first.refused == {}
        assert held.sent == ["old 0"]
        assert cosignatures(cosigned_note(ledger.store) or "", [w1.verifier]) != {}  # served already
        _grow(ledger, 20, 5, prefix="2105")
        ws.calls.clear()
        grown = cosigner.cosign(wait_s=2.0)
        assert grown is not None and grown.size == 25 and grown.cosigned_by == [w1.verifier.vkey]
        assert ws.calls == [w1.url] and grown.waiting == (w2.verifier.vkey,)
        assert held.sent == ["old 0"]  # w2 is not asked again while its request is in flight
        held.release.set()
        late = cosigner.cosign()  # its answer for 20 came: it taught its size; it is asked for 25 now
        assert late is not None and late.size == 25 and len(late.cosigned_by) == 2 and late.waiting == ()
        assert held.sent == ["old 0", "old 20"]
        assert ws.services[w2.url].state.latest("example.org/ledger").size == 25  # type: ignore[union-attr]
    finally:
        held.release.set()
        cosigner.close()


def test_a_slow_witness_answer_for_the_newest_checkpoint_is_kept_later(new_db: NewDb, tmp_path: Path) -> None:
    ledger, ws = _witnessed(new_db, tmp_path)
    w1, w2 = ws.list
    held = _Held(ws, w2.url)
    cosigner = Cosigner(ledger.store, ws.list, held)
    try:
        first = cosigner.cosign(wait_s=2.0)
        assert first is not None and first.waiting == (w2.verifier.vkey,)
        held.release.set()
        later = cosigner.cosign()  # the head did not move: its line is added, nothing is sent again
        assert later is not None and len(later.cosigned_by) == 2 and held.sent == ["old 0"]
        assert len(cosignatures(cosigned_note(ledger.store) or "", ws.quorum.witnesses)) == 2
    finally:
        cosigner.close()


def test_a_witness_answering_no_valid_cosignature_is_not_counted(new_db: NewDb, tmp_path: Path) -> None:
    ledger, ws = _witnessed(new_db, tmp_path)
    impostor = load_or_create_witness_key(tmp_path / "impostor.key", "w1.example")  # the name, not the key

    def post(url: str, body: bytes) -> tuple[int, bytes]:
        status, answer = ws.post(url, body)
        note = body.decode().split("\n\n", 1)[1]
        return status, impostor.cosign(note[: note.rfind("\n\n") + 1], NOW).encode()

    done = Cosigner(ledger.store, ws.list, post).cosign()
    assert done is not None and done.cosigned_by == []
    assert all("no cosignature that verifies" in why for why in done.refused.values())
    assert cosigned_note(ledger.store) is None  # nothing cosigned: nothing kept


def test_a_split_view_gets_no_cosignature_and_quorum_clients_refuse_it(new_db: NewDb, tmp_path: Path) -> None:
    victim = _victim(new_db)
    vkey = Checkpointer.for_db(Ledger(victim.db).store).verifier()
    ws = Witnesses(tmp_path, vkey)
    shown = Cosigner(Ledger(victim.db).store, ws.list, ws.post).cosign()
    assert shown is not None and len(shown.cosigned_by) == 2  # the tree shown to most users
    # the operator shows another tree, signed with the same key, to someone else
    other_db = _rolled_back_and_regrown(victim, new_db)
    other = Ledger(other_db)
    split = Cosigner(other.store, ws.list, ws.post).cosign()
    assert split is not None and split.cosigned_by == [] and len(split.refused) == 2
    assert all(why.startswith("HTTP 422") for why in split.refused.values()), split.refused
    assert cosigned_note(other.store) is None
    plain = Checkpointer.for_db(other.store).latest().note  # what that view can serve: no cosignature
    seen = observe(None, plain, vkey, lambda a, b: [], ws.quorum)
    assert (
        seen.status == NOT_COSIGNED and "0 valid witness cosignature(s) where 2 are required" in seen.message
    )
    assert observe(None, plain, vkey, lambda a, b: [], NO_QUORUM).ok  # without witnesses it looks fine
    args = [a for w in ws.quorum.witnesses for a in ("--witness", w.vkey)]
    refused = CliRunner().invoke(main, ["verify", "--db", other_db, "--checkpoint", "-", *args], input=plain)
    assert refused.exit_code == 2, refused.output  # caught: the monitor exits 2 too
    assert "not cosigned: 0 valid witness cosignature(s) where 2 are required" in refused.output
    held = CliRunner().invoke(
        main, ["verify", "--db", victim.db, "--checkpoint", "-", *args], input=shown.note
    )
    assert held.exit_code == 0 and "Held checkpoint: consistent" in held.output


def test_a_bundle_carries_the_cosigned_checkpoint(new_db: NewDb, tmp_path: Path) -> None:
    from tests.factories import citation, oid_of, paper, ts

    db = new_db("l.db")
    ledger = Ledger(db)
    ledger.append([paper("2101.00001", ts(1)), citation(oid_of(1), "2101.00001", ts(2))])
    _grow(ledger, 10, 5, prefix="2106")
    checkpointer = Checkpointer.for_db(ledger.store, "example.org/ledger")
    ws = Witnesses(tmp_path, checkpointer.verifier())
    assert Cosigner(ledger.store, ws.list, ws.post).cosign() is not None
    out = tmp_path / "b.json"
    made = CliRunner().invoke(main, ["bundle", "2101.00001", "--db", db, "--out", str(out)])
    assert made.exit_code == 0, made.output
    key = checkpointer.verifier().vkey
    args = [a for w in ws.quorum.witnesses for a in ("--witness", w.vkey)]
    assert json.loads(out.read_text())["checkpoint"] == cosigned_note(ledger.store)
    ok = CliRunner().invoke(main, ["check-bundle", str(out), "--key", key, *args])
    assert ok.exit_code == 0 and "cosigned by 2 witness(es) (w1.example, w2.example)" in ok.output
    stranger = load_or_create_witness_key(tmp_path / "stranger.key", "stranger.example")
    refused = CliRunner().invoke(main, ["check-bundle", str(out), "--key", key, "--witness", stranger.vkey])
    assert refused.exit_code == 1 and "0 valid witness cosignature(s) where 1 are required" in refused.output


@pytest.mark.parametrize(
    ("text", "why"),
    [
        pytest.param("https://w.example\n", "expected `URL VKEY`", id="no-key"),
        pytest.param("ftp://w.example w+00000000+AA==\n", "expected `URL VKEY`", id="not-http"),
        pytest.param("https://w.example not-a-key\n", "line 1", id="bad-key"),
        pytest.param("# a comment\n\nhttps://w.example a b\n", "line 3", id="three-fields"),
    ],
)
def test_a_bad_witnesses_file_is_refused_naming_the_line(tmp_path: Path, text: str, why: str) -> None:
    path = tmp_path / "witnesses"
    path.write_text(text)
    with pytest.raises(InvalidEvent, match=why):
        read_witnesses(path)


def test_a_witnesses_file_reads_urls_and_keys(tmp_path: Path) -> None:
    signer = load_or_create_witness_key(tmp_path / "w.key", "w.example")
    path = tmp_path / "witnesses"
    path.write_text(f"# the witnesses\nhttps://w.example/ {signer.vkey}  # ours\n")
    assert read_witnesses(path) == [Witness("https://w.example", signer.verifier)]


def test_the_request_body_is_the_tlog_witness_form() -> None:
    body = request_body(3, [b"\x00" * 32, b"\x01" * 32], "origin\n5\nroot\n\n\u2014 origin sig\n")
    assert body.decode().split("\n") == [
        "old 3",
        "A" * 43 + "=",
        "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE=",
        "",
        "origin",
        "5",
        "root",
        "",
        "\u2014 origin sig",
        "",
    ]
