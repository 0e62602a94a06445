"""The monitor (service/monitor.py, `ledger monitor`): a client that keeps the last checkpoint it
verified catches a truncation, a rewrite and a bad signature; following the events too (--events), it
recomputes their hashes and root and catches what the checkpoints do not show; on real servers with a
real monitor."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

import msgspec
import pytest

from ledger.model.codec import canonical, envelope_json
from ledger.model.events import StoredEvent
from ledger.model.jsonvalue import Json
from ledger.tlog.chain import GENESIS, body_bytes, envelope_body, link_hash
from ledger.tlog.checkpoint import SignedCheckpoint, Signer
from ledger.tlog.checkpoint_notes import Checkpoint
from ledger.tlog.held_checkpoint import CONSISTENT, REWRITTEN, TRUNCATED
from ledger.tlog.merkle import CompactRange, MemoryTree, consistency_proof, leaf_hash, root
from service.proofs.monitor import (
    BAD_SIGNATURE,
    FIRST,
    STALE,
    BadAnswer,
    Followed,
    Gone,
    MonitorState,
    Page,
    follow_events,
    observe,
    page_from_json,
    proof_from_json,
)
from tests.api_fixtures import ledger_command, running_server
from tests.ledger.tlog.test_held_checkpoint import (
    Victim,
    _grown,
    _other_ledger,
    _rolled_back,
    _rolled_back_and_regrown,
    _victim,
)
from tests.raw import edit, one, rows

NewDb = Callable[[str], str]
SIGNER = Signer.parse(
    # the Go reference key (golang.org/x/mod/sumdb/note), as tests/ledger/tlog/test_checkpoint.py retypes it
    "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"
)


def _tree(n: int, tag: str = "a") -> MemoryTree:
    return MemoryTree([leaf_hash(f"{tag}{i}".encode()) for i in range(n)])


def _note(tree: MemoryTree, size: int, signer: Signer = SIGNER) -> str:
    return signer.sign_note(Checkpoint(signer.name, size, root(tree, size)).text())


def _prover(tree: MemoryTree, held: int | None = None) -> Callable[[int, int], Sequence[bytes]]:
    """The proofs a ledger holding `tree` (its first `held` leaves, if given) would serve."""
    size = len(tree.leaves) if held is None else held

    def proof(old: int, new: int) -> Sequence[bytes]:
        if new > size:
            raise Gone(f"the ledger holds {size} events, fewer than the {new} asked for")
        return consistency_proof(tree, old, new)

    return proof


def _kept(tree: MemoryTree, size: int) -> SignedCheckpoint:
    note = _note(tree, size)
    return SignedCheckpoint(Checkpoint(SIGNER.name, size, root(tree, size)), note)


def test_the_first_checkpoint_is_kept_then_each_extension_is_proven() -> None:
    tree = _tree(50)
    first = observe(None, _note(tree, 20), SIGNER.verifier, _prover(tree))
    assert (first.status, first.ok) == (FIRST, True) and first.kept is not None
    assert first.kept.checkpoint.size == 20
    grown = observe(first.kept, _note(tree, 50), SIGNER.verifier, _prover(tree))
    assert grown.status == CONSISTENT and "20 -> 50 events" in grown.message
    assert grown.kept is not None and grown.kept.checkpoint.size == 50
    same = observe(grown.kept, _note(tree, 50), SIGNER.verifier, _prover(tree))
    assert same.status == CONSISTENT and same.kept == grown.kept


@pytest.mark.parametrize(
    ("served", "size", "status", "words"),
    [
        pytest.param(
            _tree(30), 30, TRUNCATED, "truncated: a checkpoint of 40 events was kept", id="truncated"
        ),
        pytest.param(_tree(40, "b"), 40, REWRITTEN, "two checkpoints of 40 events", id="fork"),
        pytest.param(_tree(45, "b"), 45, REWRITTEN, "does not extend the kept one", id="rewritten-grown"),
        pytest.param(
            _tree(50), 30, STALE, "stale: the ledger served an older checkpoint", id="stale-but-honest"
        ),
    ],
)
def test_a_smaller_or_other_tree_is_named(served: MemoryTree, size: int, status: str, words: str) -> None:
    kept = _kept(_tree(50), 40)
    seen = observe(kept, _note(served, size), SIGNER.verifier, _prover(served))
    assert seen.status == status and words in seen.message, seen.message
    assert seen.kept == kept  # nothing new is kept after a smaller or other tree
    assert seen.ok is (status == STALE)


@pytest.mark.parametrize(
    "damage",
    [
        pytest.param(lambda n: n.replace("\n40\n", "\n41\n"), id="size-altered"),
        pytest.param(
            lambda n: Signer.parse(
                "PRIVATE+KEY+PeterNeumann+c74f20a3+AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz"
            ).sign_note("other\n40\nAAAA\n"),
            id="other-text",
        ),
        pytest.param(lambda n: n.split("\n\n")[0] + "\n", id="signature-cut"),
    ],
)
def test_a_bad_signature_is_caught(damage: Callable[[str], str]) -> None:
    tree = _tree(50)
    seen = observe(_kept(tree, 30), damage(_note(tree, 40)), SIGNER.verifier, _prover(tree))
    assert seen.status == BAD_SIGNATURE and not seen.ok


@pytest.mark.parametrize(
    ("body", "why"),
    [
        pytest.param({"from": 1, "to": 3, "consistency_path": []}, "other sizes", id="other-sizes"),
        pytest.param({"from": 2, "to": 3, "consistency_path": [1]}, "not a list of base64", id="not-strings"),
        pytest.param({"from": 2, "to": 3, "consistency_path": ["%%"]}, "not base64", id="not-base64"),
        pytest.param([], "other sizes", id="not-an-object"),
    ],
)
def test_a_malformed_proof_answer_is_refused(body: Json, why: str) -> None:
    from ledger.tlog.merkle import ProofError

    with pytest.raises(ProofError, match=why):
        proof_from_json(body, 2, 3)


def test_state_is_kept_atomically_and_checked_again(tmp_path: Path) -> None:
    state = MonitorState(tmp_path / "m")
    assert state.load(SIGNER.verifier) is None
    kept = _kept(_tree(50), 40)
    state.keep(kept)
    assert state.load(SIGNER.verifier) == kept
    assert [p.name for p in (tmp_path / "m").iterdir()] == ["checkpoint"]  # no temporary file left
    evidence = state.evidence(kept, "served\n", "rewritten: ...")
    assert evidence.read_text().startswith("rewritten: ...\n\n-- the checkpoint kept --\n" + kept.note)
    state.path.write_text(kept.note.replace("\n40\n", "\n41\n"))
    from ledger.tlog.checkpoint_notes import NoteError

    with pytest.raises(NoteError, match="does not verify"):
        state.load(SIGNER.verifier)


# -- a real monitor on real servers -----------------------------------------------------------------


def _monitor(base: str, vkey: str, state: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    cmd = [*ledger_command(), "monitor", base, "--key", vkey, "--state", str(state), "--once", *extra]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=False)


@pytest.mark.parametrize(
    ("damage", "code", "words"),
    [
        pytest.param(_grown, 0, "consistent: 40 -> 49 events", id="grown"),
        pytest.param(_rolled_back, 2, "truncated: a checkpoint of 40 events was kept", id="truncated"),
        pytest.param(_rolled_back_and_regrown, 2, "rewritten: the tree of 45 events", id="rewritten"),
        pytest.param(_other_ledger, 2, "rewritten: the tree of 50 events", id="another-ledger"),
    ],
)
def test_a_monitor_process_catches_the_server(
    new_db: NewDb, tmp_path: Path, damage: Callable[[Victim, NewDb], str], code: int, words: str
) -> None:
    from ledger.tlog.checkpoint import Checkpointer
    from service.ledger import Ledger

    victim = _victim(new_db)
    vkey = Checkpointer.for_db(Ledger(victim.db).store).verifier().vkey
    state = tmp_path / "monitor"
    with running_server(victim.db) as server:
        first = _monitor(server.base, vkey, state)
        assert first.returncode == 0 and "first checkpoint kept: size 40" in first.stdout, first.stderr
    served = damage(victim, new_db)
    # the server's own walk at start may find the damage (/healthz 503): the monitor must catch it anyway
    with running_server(served, ready=(200, 503)) as server:
        seen = _monitor(server.base, vkey, state)
    assert seen.returncode == code and words in seen.stdout, seen.stdout + seen.stderr
    kept = MonitorState(state).load(Checkpointer.for_db(Ledger(victim.db).store).verifier())
    assert kept is not None
    if code == 0:
        assert kept.checkpoint.size == 49
    else:
        assert kept.checkpoint.size == 40  # what was caught is not kept; the evidence is
        assert "evidence kept in" in seen.stderr and len(list(state.glob("evidence-*.txt"))) == 1


def test_an_unreachable_ledger_is_an_error_not_a_verdict(tmp_path: Path) -> None:
    from tests.api_fixtures import free_port

    seen = _monitor(f"http://127.0.0.1:{free_port()}", SIGNER.verifier.vkey, tmp_path / "m")
    assert seen.returncode == 1 and "could not read the ledger" in seen.stderr


# -- following every event (--events): the chain and the root recomputed from the bytes served ---------


def _events(n: int, edited: int | None = None) -> list[StoredEvent[bytes]]:
    """A chain of n events; with `edited`, that event's data is other and every later one re-chained."""
    out: list[StoredEvent[bytes]] = []
    prev = GENESIS
    for seq in range(1, n + 1):
        data = b'{"n":%d}' % (-seq if seq == edited else seq)
        at = "2026-01-01T00:00:00Z"
        body = body_bytes(data, f"e{seq}", at, at, seq, "s", seq, "paper.observed")
        e = StoredEvent(seq, f"e{seq}", "s", seq, "paper.observed", at, at, data, prev, link_hash(prev, body))
        out.append(e)
        prev = e.hash
    return out


def _checkpoint(events: Sequence[StoredEvent[bytes]], size: int) -> Checkpoint:
    tree = MemoryTree([leaf_hash(envelope_body(e)) for e in events[:size]])
    return Checkpoint("example.org/ledger", size, root(tree, size))


class _Served:
    """GET /evidence over a list of events: what it was asked (after, limit), the pages it answered."""

    def __init__(self, events: Sequence[StoredEvent[bytes]]) -> None:
        self.events = list(events)
        self.asked: list[tuple[int, int]] = []

    def __call__(self, after: int, limit: int) -> Page:
        self.asked.append((after, limit))
        return Page([e for e in self.events if e.seq > after][:limit], len(self.events))


def _followed(events: Sequence[StoredEvent[bytes]], size: int) -> Followed:
    seen = follow_events(Followed(), _checkpoint(events, size), _Served(events))
    assert seen.ok and seen.followed.size == size, seen.message
    return seen.followed


@pytest.mark.parametrize(
    ("start", "size", "page"), [(0, 0, 3), (0, 1, 3), (0, 50, 7), (20, 50, 1000), (17, 17, 5)]
)
def test_events_are_followed_a_page_at_a_time_to_the_checkpoints_root(
    start: int, size: int, page: int
) -> None:
    events = _events(60)  # the ledger has grown past the checkpoint: only its events are read
    served = _Served(events)
    done = _followed(events, start) if start else Followed()
    seen = follow_events(done, _checkpoint(events, size), served, page)
    assert seen.status == CONSISTENT and seen.ok, seen.message
    assert seen.followed.size == size and seen.followed.hash == (events[size - 1].hash if size else GENESIS)
    assert CompactRange(size, seen.followed.peaks).root() == _checkpoint(events, size).root
    assert len(seen.followed.peaks) == size.bit_count()  # O(log n) state
    assert all(limit <= page for _, limit in served.asked)
    assert sum(min(limit, 60 - after) for after, limit in served.asked) == size - start + (start > 0)
    if start:
        assert served.asked[0][0] == start - 1  # the last event verified is read again first


@pytest.mark.parametrize(
    ("served", "start", "size", "status", "words"),
    [
        pytest.param(
            _events(40, edited=5), 0, 40, REWRITTEN,
            "rewritten: the 40 events served hash to root", id="edited-and-rechained",
        ),
        pytest.param(
            _events(40, edited=25), 20, 40, REWRITTEN,
            "one of seqs 21..40 is not the event", id="edited-past-verified",
        ),
        pytest.param(
            _events(45, edited=5), 40, 45, REWRITTEN,
            "rewritten: event seq 40 is served with hash", id="edited-below-verified",
        ),
        pytest.param(
            _events(30), 0, 40, TRUNCATED, "serves only 30 events: seqs 31..40 are missing", id="short"
        ),
        pytest.param(
            _events(30), 40, 45, TRUNCATED,
            "truncated: the monitor verified 40 events, the ledger now serves 30: event seq 40 is gone",
            id="cut",
        ),
        pytest.param(
            _events(50)[:30] + _events(50)[31:], 20, 50, REWRITTEN,
            "served seq 32 after seq 30: a gap", id="gap",
        ),
    ],
)  # fmt: skip
def test_served_events_that_do_not_chain_or_hash_to_the_root_are_caught(
    served: list[StoredEvent[bytes]], start: int, size: int, status: str, words: str
) -> None:
    honest = _events(max(size, 50))
    done = _followed(honest, start) if start else Followed()
    seen = follow_events(done, _checkpoint(honest, size), _Served(served), 4)
    assert seen.status == status and words in seen.message, seen.message
    assert not seen.ok and seen.followed == done  # nothing is kept past what was verified


def test_an_event_altered_but_not_rechained_is_named() -> None:
    honest = _events(10)
    altered = [*honest[:6], msgspec.structs.replace(honest[6], data=b'{"n":0}'), *honest[7:]]
    seen = follow_events(_followed(honest, 3), _checkpoint(honest, 10), _Served(altered))
    assert seen.status == REWRITTEN and "event seq 7: the bytes served do not hash" in seen.message
    rechained = _events(10, edited=7)  # seq 7 other, 8..10 re-chained onto it: a valid chain
    seen = follow_events(_followed(honest, 6), _checkpoint(honest, 10), _Served(rechained))
    assert seen.status == REWRITTEN and "root" in seen.message and "one of seqs 7..10" in seen.message


def test_the_events_state_is_kept_and_checked_again(tmp_path: Path) -> None:
    state = MonitorState(tmp_path / "m")
    assert state.load_events() == Followed()
    followed = _followed(_events(13), 13)
    state.keep_events(followed)
    assert state.load_events() == followed
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == ["events"]
    state.events_path.write_text(state.events_path.read_text().replace('"size": 13', '"size": 12'))
    with pytest.raises(ValueError, match="a range of 12 leaves has 2 peaks, not 3"):
        state.load_events()
    state.events_path.write_text("{}")
    with pytest.raises(ValueError, match="is not a monitor's events state"):
        state.load_events()


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        pytest.param(b"[]", "is not one GET /evidence serves", id="not-an-object"),
        pytest.param(b'{"events": [], "head": {}}', "is not one GET /evidence serves", id="no-head-seq"),
        pytest.param(b'{"events": [], "head": {"seq": "1"}}', "head.seq is not an integer", id="seq-string"),
        pytest.param(b'{"events": [{"seq": 1}], "head": {"seq": 1}}', "is not one GET", id="short-envelope"),
    ],
)
def test_a_malformed_evidence_page_is_refused(raw: bytes, why: str) -> None:
    with pytest.raises(BadAnswer, match=why):
        page_from_json(raw)


def test_a_served_page_keeps_the_data_bytes_as_served() -> None:
    e = _events(1)[0]
    raw = canonical({"events": [envelope_json(e)], "head": {"seq": 1, "hash": e.hash}, "next": None})
    page = page_from_json(raw)
    assert page == Page([e], 1) and type(page.events[0].data) is bytes


# -- a real monitor following the events of real servers ----------------------------------------------


def _edited_and_rechained(v: Victim, new_db: NewDb) -> str:
    """Event 5's data edited in the database and every later hash recomputed, as an operator with write
    access would (the triggers off, the Merkle fill's chain hash redone): the server still signs, and
    proves consistent, the tree it signed before; only the events it serves differ."""
    columns = "seq, event_id, stream, stream_version, type, observed_at, recorded_at, data"
    prev = str(one(v.db, "SELECT hash FROM events WHERE seq = 4"))
    statements, hashes = [], {}
    for seq, event_id, stream, version, type_, observed, recorded, data in rows(
        v.db, f"SELECT {columns} FROM events WHERE seq >= 5 ORDER BY seq"
    ):
        if seq == 5:
            assert '"title":"A paper"' in data
            data = data.replace('"title":"A paper"', '"title":"A paper, edited"')
        body = body_bytes(data.encode(), event_id, observed, recorded, seq, stream, version, type_)
        hashes[seq] = link_hash(prev, body)
        quoted = data.replace("'", "''")
        statements.append(
            f"UPDATE events SET data = '{quoted}', prev_hash = '{prev}', hash = '{hashes[seq]}' "
            f"WHERE seq = {seq}"
        )
        prev = hashes[seq]
    filled = int(one(v.db, "SELECT leaves FROM merkle_fill WHERE id = 1"))
    statements.append(f"UPDATE merkle_fill SET chain_hash = '{hashes[filled]}' WHERE id = 1")
    edit(v.db, *statements)
    return v.db


def _edited_rechained_and_grown(v: Victim, new_db: NewDb) -> str:
    db = _edited_and_rechained(v, new_db)
    from service.ledger import Ledger
    from tests.ledger.tlog.test_checkpoint import _grow

    _grow(Ledger(db), 40, 5, prefix="2109")  # appended onto the rewritten chain: checkpoints still extend
    return db


def _cut_behind_a_read_only_server(v: Victim, new_db: NewDb) -> str:
    """Events 31..40 deleted from the database; a read-only server still serves the checkpoint of 40."""
    edit(v.db, "DELETE FROM events WHERE seq > 30")
    return v.db


READ_ONLY = {"LEDGER_READ_ONLY": "1"}


@pytest.mark.parametrize(
    ("damage", "env", "code", "words", "plain_ok", "fresh"),
    [
        pytest.param(_grown, {}, 0, "events 41..49 read", True, "events 1..49 read", id="grown"),
        pytest.param(
            _rolled_back, {}, 2, "truncated: a checkpoint of 40 events was kept", False,
            "events 1..30 read", id="truncated",
        ),
        pytest.param(
            _cut_behind_a_read_only_server, READ_ONLY, 2,
            "truncated: the monitor verified 40 events, the ledger now serves 30: event seq 40 is gone", True,
            "truncated: the checkpoint signed for 40 events is served, but the ledger serves only 30 events: "
            "seqs 31..40 are missing", id="cut-behind-a-read-only-server",
        ),
        pytest.param(
            _edited_and_rechained, {}, 2, "rewritten: event seq 40 is served with hash", True,
            "rewritten: the 40 events served hash to root", id="edited-and-rechained",
        ),
        pytest.param(
            _edited_rechained_and_grown, {}, 2, "rewritten: event seq 40 is served with hash", True,
            "rewritten: the 45 events served hash to root", id="edited-rechained-and-grown",
        ),
    ],
)  # fmt: skip
def test_a_monitor_process_following_the_events_catches_the_server(
    new_db: NewDb,
    tmp_path: Path,
    damage: Callable[[Victim, NewDb], str],
    env: dict[str, str],
    code: int,
    words: str,
    plain_ok: bool,
    fresh: str,
) -> None:
    from ledger.tlog.checkpoint import Checkpointer
    from service.ledger import Ledger

    victim = _victim(new_db)
    vkey = Checkpointer.for_db(Ledger(victim.db).store).verifier().vkey
    state, plain = tmp_path / "monitor", tmp_path / "plain"
    with running_server(victim.db) as server:
        first = _monitor(server.base, vkey, state, "--events")
        assert first.returncode == 0, first.stdout + first.stderr
        assert "first checkpoint kept: size 40" in first.stdout and "events 1..40 read" in first.stdout
        assert _monitor(server.base, vkey, plain).returncode == 0  # one that follows the checkpoints only
    assert MonitorState(state).load_events().size == 40
    served = damage(victim, new_db)
    # the server's own walk at start may find the damage (/healthz 503): the monitor must catch it anyway
    with running_server(served, env=env, ready=(200, 503)) as server:
        seen = _monitor(server.base, vkey, state, "--events")
        only_checkpoints = _monitor(server.base, vkey, plain)
        newcomer = _monitor(server.base, vkey, tmp_path / "newcomer", "--events")
    assert seen.returncode == code and words in seen.stdout, seen.stdout + seen.stderr
    assert (only_checkpoints.returncode == 0) is plain_ok, only_checkpoints.stdout
    assert fresh in newcomer.stdout and newcomer.returncode == (2 if "events 1.." not in fresh else 0), (
        newcomer.stdout + newcomer.stderr
    )
    followed = MonitorState(state).load_events()
    if code == 0:
        assert followed.size == 49 and len(followed.peaks) == (49).bit_count()
    else:
        assert followed.size == 40  # what was caught is not kept; the evidence is
        assert "evidence kept in" in seen.stderr and len(list(state.glob("evidence-*.txt"))) == 1
