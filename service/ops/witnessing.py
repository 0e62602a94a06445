"""The ledger's side of its witnesses: each new checkpoint sent to them (C2SP tlog-witness), their
cosignatures (C2SP tlog-cosignature) kept on the note that GET /checkpoint serves.

`LEDGER_WITNESSES` names a file of `URL VKEY` lines. Within `LEDGER_CHECKPOINT_INTERVAL` of an append,
one process of the ledger (a lock, as the scrubber's) signs a checkpoint of the head and sends it to
every witness at once, with the consistency proof from the size that witness last cosigned (learnt
from its 409 answer when unknown), and keeps the note with each cosignature that verifies as it comes.
A witness that refuses or is down costs that round its cosignature, never an append; one that is slow
is not waited for past the round, nor asked again while its request is in flight, so it holds up
neither the other witnesses nor the next checkpoint. The HTTP request itself is the caller's
(api/log/witnesses.py): this module decides what to send and what to keep.
"""

from __future__ import annotations

import base64
import logging
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from ledger.model.errors import InvalidEvent
from ledger.tlog import merkle_store
from ledger.tlog.checkpoint import Checkpointer, SignedCheckpoint
from ledger.tlog.checkpoint_notes import NoteError, read_note_file, unsigned_checkpoint, write_note_file
from ledger.tlog.cosign import WitnessVerifier, add_cosignatures, cosignatures, parse_witness_vkey

if TYPE_CHECKING:
    from ledger.storage.interface import Store

log = logging.getLogger("ledger.witnessing")

COSIGNED_SUFFIX = ".cosigned"  # the newest cosigned checkpoint, next to the database (a state dir file)
ADD_CHECKPOINT = "/add-checkpoint"
SIZE_CONFLICT = 409

# (url, body) -> (status, body): one POST, made by the caller's HTTP client (bounded, with a timeout)
Post = Callable[[str, bytes], tuple[int, bytes]]
# (witness url, result): told of every answer, or its absence
Answered = Callable[[str, str], None]
COSIGNED, REFUSED, UNREACHABLE = "cosigned", "refused", "unreachable"


class Witness(NamedTuple):
    """A witness the ledger sends its checkpoints to: where, and the key its cosignatures verify with."""

    url: str
    verifier: WitnessVerifier


def read_witnesses(path: Path) -> list[Witness]:
    """The `URL VKEY` lines of a witnesses file (blank lines and # comments skipped)."""
    out: list[Witness] = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) != 2 or not parts[0].startswith(("http://", "https://")):
            raise InvalidEvent("LEDGER_WITNESSES", f"{path} line {number}: expected `URL VKEY`, got {line!r}")
        try:
            out.append(Witness(parts[0].rstrip("/"), parse_witness_vkey(parts[1])))
        except NoteError as e:
            raise InvalidEvent("LEDGER_WITNESSES", f"{path} line {number}: {e.message}") from None
    return out


def cosigned_note(store: Store) -> str | None:
    """The newest checkpoint the ledger's witnesses cosigned (kept in <db>.cosigned), if any."""
    return read_note_file(store.tree.side_file(COSIGNED_SUFFIX))


def request_body(old_size: int, proof: Sequence[bytes], note: str) -> bytes:
    """An add-checkpoint request: `old N`, the proof lines, a blank line, the signed note."""
    lines = [f"old {old_size}", *(base64.b64encode(h).decode() for h in proof)]
    return ("\n".join(lines) + "\n\n" + note).encode()


class Round(NamedTuple):
    """What one round of cosigning gave."""

    size: int
    note: str  # the checkpoint with the cosignatures that verified
    cosigned_by: list[str]  # the witnesses' vkeys
    refused: dict[str, str]  # vkey -> why not
    waiting: tuple[str, ...] = ()  # vkeys of the witnesses asked whose answer has not come yet


class Cosigner:
    """Sends checkpoints to the witnesses and keeps the newest cosigned one (in <db>.cosigned)."""

    def __init__(
        self, store: Store, witnesses: Sequence[Witness], post: Post, on_answer: Answered | None = None
    ) -> None:
        self.store = store
        self.witnesses = list(witnesses)
        self.post = post
        # each request's outcome (cosigned, refused, unreachable), e.g. for the API's metrics
        self.on_answer = on_answer
        self.path = store.tree.side_file(COSIGNED_SUFFIX)
        self.sizes: dict[str, int] = {}  # witness url -> the size it last cosigned for this log
        # each witness has at most one request in flight, so a slow one never holds a worker another needs
        self._pool = ThreadPoolExecutor(max_workers=max(1, len(self.witnesses)), thread_name_prefix="witness")
        self._asked: dict[str, tuple[str, Future[tuple[str | None, str]]]] = {}  # url -> (note, answer)

    def cosigned(self) -> str | None:
        """The newest checkpoint its witnesses cosigned, as kept."""
        return cosigned_note(self.store)

    def cosign(self, wait_s: float | None = None) -> Round | None:
        """Send a checkpoint of the head to the witnesses missing from it; keep each line as it comes."""
        # At most `wait_s` (None: every answer). A witness slower than that is not asked again until it
        # answers; its line is kept then if the checkpoint is still the newest.
        signed = Checkpointer.for_db(self.store).latest()
        verifiers = [w.verifier for w in self.witnesses]
        kept = self.cosigned()
        if kept is not None and _size(kept) > signed.checkpoint.size:
            return None  # kept by a newer round (another process's, before this one took the lock)
        note, have = signed.note, {}
        if kept is not None and _text(kept) == _text(signed.note):
            note, have = kept, cosignatures(kept, verifiers)  # only the witnesses missing are asked
        missing = [w for w in self.witnesses if w.verifier.vkey not in have]
        if not missing:
            return None
        deadline = None if wait_s is None else time.monotonic() + wait_s
        answers: dict[str, tuple[str | None, str]] = {}
        while True:
            for w in missing:
                if w.url not in self._asked and w.verifier.vkey not in answers:
                    self._asked[w.url] = (signed.note, self._pool.submit(self._ask, w, signed))
            futures = {self._asked[w.url][1]: w for w in missing if w.url in self._asked}
            if not futures:
                break
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            done, _ = wait(futures, timeout=left, return_when=FIRST_COMPLETED)
            if not done:
                break  # the rest are still asked; their answers are taken at a later round
            for future in done:
                w = futures[future]
                asked_note, _ = self._asked.pop(w.url)
                if asked_note != signed.note:
                    continue  # about an older checkpoint: it taught the size only; asked anew above
                line, why = future.result()
                answers[w.verifier.vkey] = (line, why)
                if line is not None:
                    note = add_cosignatures(note, [line])
                    write_note_file(self.path, note)  # served now, not when the slowest witness answers
        got = sorted(cosignatures(note, verifiers))
        refused = {vkey: why for vkey, (line, why) in answers.items() if line is None}
        waiting = tuple(w.verifier.vkey for w in missing if w.url in self._asked)
        return Round(signed.checkpoint.size, note, got, refused, waiting)

    def close(self) -> None:
        """Stop asking: answers still awaited are dropped (each is bounded by its client's timeout)."""
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._asked.clear()

    def _ask(self, witness: Witness, signed: SignedCheckpoint) -> tuple[str | None, str]:
        """(the witness's cosignature line, "") or (None, why not), told to `on_answer`."""
        line, why = self._request(witness, signed)
        if self.on_answer is not None:
            result = COSIGNED if line is not None else UNREACHABLE if why.startswith(UNREACHABLE) else REFUSED
            self.on_answer(witness.url, result)
        return line, why

    def _request(self, witness: Witness, signed: SignedCheckpoint) -> tuple[str | None, str]:
        """(the witness's cosignature line, "") or (None, why not); a 409 teaches its size, asked again."""
        size = signed.checkpoint.size
        old = self.sizes.get(witness.url, 0)
        for _ in range(2):
            if old > size:
                return (
                    None,
                    f"the witness has cosigned {old} events of this log, more than the {size} it holds now",
                )
            proof = merkle_store.consistency(self.store, old, size) if old else []
            try:
                status, body = self.post(witness.url + ADD_CHECKPOINT, request_body(old, proof, signed.note))
            except Exception as e:  # down, slow, refused: the round goes on without it
                return None, f"{UNREACHABLE}: {e}"
            if status == SIZE_CONFLICT:
                try:
                    old = int(body.decode().strip())
                except (UnicodeDecodeError, ValueError):
                    return None, f"409 without a size: {body[:100]!r}"
                self.sizes[witness.url] = old
                continue
            if status != 200:
                return None, f"HTTP {status}: {body[:200].decode(errors='replace').strip()}"
            line = self._verified_line(witness, signed.note, body)
            if line is None:
                return None, "its answer holds no cosignature that verifies with its key"
            self.sizes[witness.url] = size
            return line, ""
        return None, "the witness's size changed twice during one round"

    @staticmethod
    def _verified_line(witness: Witness, note: str, body: bytes) -> str | None:
        for line in body.decode(errors="replace").splitlines():
            try:
                if cosignatures(add_cosignatures(note, [line]), [witness.verifier]):
                    return line
            except NoteError:
                continue
        return None


def run_cosigner(cosigner: Cosigner, interval_s: float, stop: threading.Event, writable: bool = True) -> None:
    """Until `stop` is set: every `interval_s`, one round if the head moved and no other process is the
    ledger's cosigner. Meant for its own thread; closes that thread's connection at the end."""
    try:
        while not stop.is_set():
            try:
                with cosigner.store.scrub.exclusive("cosign", create=writable) as mine:
                    if mine:
                        # a witness slower than a round is not waited for: its answer is taken later
                        done = cosigner.cosign(wait_s=interval_s)
                        if done is not None and done.refused:
                            log.warning("checkpoint %d: not cosigned by %s", done.size, done.refused)
                        if done is not None and done.waiting:
                            log.info("checkpoint %d: no answer yet from %s", done.size, list(done.waiting))
            except Exception:  # the database or a witness may be back later: keep the thread, say why
                log.exception("cosigning failed; retrying later")
            stop.wait(interval_s)
    finally:
        cosigner.close()
        cosigner.store.close()


def _size(note: str) -> int:
    try:
        return unsigned_checkpoint(note).size
    except NoteError:
        return -1


def _text(note: str) -> str:
    return note[: note.rfind("\n\n") + 1]
