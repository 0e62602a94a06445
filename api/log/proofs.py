"""Transparency-log routes: inclusion proofs, signed checkpoints, consistency proofs, the public key.

Hashes are base64 (as in the C2SP checkpoint); the tree is RFC 6962 over the events' body bytes,
leaf index = seq - 1. No SQL here: everything goes through ledger.tlog's merkle_store and checkpoint.
A read-only server (--read-only) writes nothing here either: no key file, no signed checkpoint, no
Merkle node (the ones not stored yet are computed for the answer and dropped).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, TypeVar

from fastapi import APIRouter, Path, Query, Request, Response
from starlette.concurrency import run_in_threadpool

from api import docs
from api.common import JSON, head_headers, ledger_of, read_body, settings_of
from api.records import negotiated
from api.records.render import ENV
from api.state import state_of
from ledger.model.codec import Encodable, canonical
from ledger.model.errors import InvalidEvent, LedgerError
from ledger.model.facts import Head
from ledger.tlog import merkle_store
from ledger.tlog.checkpoint import Checkpointer, NoteError, NotSigned, SignedCheckpoint, open_checkpoint
from ledger.tlog.checkpoint_notes import unsigned_checkpoint
from ledger.tlog.held_checkpoint import HeldVerdict

router = APIRouter(tags=["integrity"])
_Route = TypeVar("_Route", bound=Callable[..., Response])
TEXT = "text/plain; charset=utf-8"
CHECKPOINT_HEADER = "Ledger-Checkpoint"
_NOTE_EXAMPLE = "<origin>\n<tree size>\n<base64 root>\n\n\u2014 <origin> <base64 signature>\n"
MAX_NOTE_BYTES = 64 * 1024  # a checkpoint with a few dozen cosignatures is under 4 KiB

TreeSize = Annotated[
    int | None, Query(ge=0, description="Tree size (number of leaves = events); default: the current head.")
]
Seq = Annotated[int, Path(ge=1, description="The event's seq (leaf index = seq - 1).")]
OldSize = Annotated[int, Query(alias="from", ge=0, description="The older tree size.")]
NewSize = Annotated[
    int | None, Query(alias="to", ge=0, description="The newer tree size; default: the head.")
]


def _proof_route(path: str, summary: str) -> Callable[[_Route], _Route]:
    """A GET route answering a Merkle proof as JSON (404 for a seq or size past the head)."""
    return router.get(path, summary=summary, responses=docs.responses(200, 404, 422))


def _checkpointer(request: Request) -> Checkpointer:
    # Key at backend.side_path(db, ".key"); the last signed checkpoint is kept by the ledger
    # (<db>.checkpoint on SQLite, the signed_checkpoint table on PostgreSQL); origin from $LEDGER_ORIGIN.
    return ledger_of(request).log.checkpointer()


def _read_only(request: Request) -> bool:
    return settings_of(request).read_only


def _json(body: bytes, head: Head) -> Response:
    return Response(body, media_type=JSON, headers=head_headers(head))


@router.get(
    "/evidence/{seq}/proof",
    summary="Inclusion proof of one event in the Merkle tree (RFC 6962)",
    responses=docs.responses(200, 404, 422, html=True),
)
def inclusion_proof(request: Request, seq: Seq, tree_size: TreeSize = None) -> Response:
    """The audit path of event `seq` in the tree of `tree_size` events, with that tree's root. A page
    for a browser (text/html above JSON in Accept), JSON for any other client."""
    log = ledger_of(request).log
    head = log.head()
    try:
        proof = log.inclusion(
            seq,
            head.seq if tree_size is None and seq <= head.seq else tree_size,
            fill=not _read_only(request),
        )
    except LedgerError as e:  # a browser is told on a page, a client in the JSON error shape
        return negotiated.error(request, e, [("The event log", "/evidence")])
    body = proof.to_json()
    page = lambda: ENV.get_template("proof.html").render(p=body)  # noqa: E731
    return negotiated.answer(request, lambda: canonical(body), head_headers(head), page)


@router.get(
    "/checkpoint",
    summary="A signed checkpoint of the head (C2SP tlog-checkpoint, Ed25519 signed note)",
    responses={
        200: {
            "description": "The signed note. With witnesses (LEDGER_WITNESSES): the newest checkpoint "
            "they cosigned, with their cosignature lines (C2SP tlog-cosignature), marked "
            "`Ledger-Checkpoint: cosigned`. On a read-only server: the last one signed (by a server "
            "that accepts writes, or `ledger checkpoint`), marked `Ledger-Checkpoint: last-signed`; its "
            "tree size may be behind `Ledger-Head`",
            "content": {"text/plain": {}},
            "headers": {
                CHECKPOINT_HEADER: {
                    "description": "`cosigned` (witnesses' cosignatures), `last-signed` on a read-only "
                    "server (nothing signed for this answer)",
                    "schema": {"type": "string", "enum": ["cosigned", "last-signed"]},
                }
            },
        },
        409: {
            "description": "Read-only server and no checkpoint was ever signed (`not_signed`)",
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}},
        },
    },
)
def checkpoint(request: Request) -> Response:
    """Signs a fresh checkpoint when the head moved since the last one (never an inconsistent one).
    A read-only server signs nothing and creates no file: it serves the last signed checkpoint,
    with `Ledger-Checkpoint: last-signed`, or 409 `not_signed` when there is none."""
    head = ledger_of(request).head()
    cosigner = state_of(request.app).cosigner
    cosigned = None if cosigner is None else cosigner.cosigned()
    if cosigned is not None:
        # the newest checkpoint the witnesses cosigned: at most LEDGER_CHECKPOINT_INTERVAL behind an append
        return Response(
            cosigned, media_type=TEXT, headers={**head_headers(head), CHECKPOINT_HEADER: "cosigned"}
        )
    if _read_only(request):
        held = _checkpointer(request).held()
        return Response(
            held.note, media_type=TEXT, headers={**head_headers(head), CHECKPOINT_HEADER: "last-signed"}
        )
    signed = _checkpointer(request).latest()
    return Response(signed.note, media_type=TEXT, headers=head_headers(ledger_of(request).head()))


@_proof_route("/checkpoint/consistency", "Consistency proof between two tree sizes (RFC 6962)")
def consistency_proof(request: Request, old_size: OldSize, new_size: NewSize = None) -> Response:
    """The proof that the tree of `from` events is a prefix of the tree of `to` events."""
    log = ledger_of(request).log
    head = log.head()
    new = head.seq if new_size is None else new_size
    proof = log.consistency(old_size, new, fill=not _read_only(request))
    body: dict[str, Encodable] = {
        "from": old_size,
        "to": new,
        "old_root_hash": merkle_store.b64(proof.old_root),
        "new_root_hash": merkle_store.b64(proof.new_root),
        "consistency_path": [merkle_store.b64(h) for h in proof.path],
    }
    return _json(canonical(body), head)


@router.get(
    "/checkpoint/key",
    summary="The ledger's public key (C2SP vkey) that signs its checkpoints",
    responses={
        200: {"description": "The vkey", "content": {"text/plain": {}}},
        409: {
            "description": "Read-only server without the key file (`not_signed`): it creates none",
            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}},
        },
    },
)
def checkpoint_key(request: Request) -> Response:
    """`<name>+<hex key hash>+<base64(0x01 || Ed25519 public key)>`; the key pair is created on first
    use, except by a read-only server, which answers 409 `not_signed` when the key file is not there."""
    checkpointer = _checkpointer(request)
    if _read_only(request):
        verifier = checkpointer.existing_verifier()
        if verifier is None:
            raise NotSigned(
                f"this server is read-only and has no signing key ({checkpointer.key_path}): it creates "
                "none; ask a server that accepts writes"
            )
        return Response(verifier.vkey + "\n", media_type=TEXT)
    return Response(checkpointer.verifier().vkey + "\n", media_type=TEXT)


@router.post(
    "/checkpoint/check",
    summary="Check a checkpoint you hold: does the ledger now extend it, or was it truncated or rewritten?",
    responses={
        **docs.responses(200, 413, 422),
        200: {
            "description": (
                "The verdict: `status` is `consistent` (`ok` true, with the consistency proof from the "
                "held size to the head), `truncated` (the ledger now holds fewer events than the held "
                "checkpoint) or `rewritten` (the root at the held size differs; both roots given)"
            )
        },
    },
    openapi_extra={
        "requestBody": {"content": {"text/plain": {"example": "<origin>\n<size>\n<root>\n\n— ..."}}}
    },
)
async def check_checkpoint(request: Request) -> Response:
    """The body is a signed checkpoint note as `GET /checkpoint` served it. Its signature is verified
    with this ledger's key (422 naming the reason when it does not verify), then the tree now is held
    against it. A server without the key file (a read-only node) says the signature was not checked."""
    note = (await read_body(request, MAX_NOTE_BYTES)).decode("utf-8", errors="replace")
    verdict, signature = await run_in_threadpool(_check_held, request, note)
    head = ledger_of(request).head()
    return _json(canonical({**verdict.to_dict(), "signature": signature}), head)


def _check_held(request: Request, note: str) -> tuple[HeldVerdict, str]:
    checkpointer = _checkpointer(request)
    verifier = checkpointer.existing_verifier()
    try:
        if verifier is None:
            held = SignedCheckpoint(unsigned_checkpoint(note), note)
            signature = "not checked: this server holds no signing key; check it with the key you pinned"
        else:
            held = open_checkpoint(note, verifier)
            signature = f"verified with {verifier.vkey}"
    except NoteError as e:
        raise InvalidEvent("note", e.message) from None
    verdict = ledger_of(request).log.hold_against(held, fill=not _read_only(request))
    return verdict, signature
