"""POST /verify: is a record someone holds intact, and does this ledger project the same one?"""

from __future__ import annotations

from typing import NotRequired, TypedDict, cast

from api.common import head_json
from ledger.model.codec import context_digest, observation_digest
from ledger.model.errors import InvalidEvent, NotFound
from ledger.model.facts import Head
from ledger.model.importer import SCHEMA, record_to_batch
from ledger.model.instants import parse_as_of
from ledger.model.jsonvalue import Json, JsonIn, JsonObject
from projections.diff import as_json, json_diff
from service.ledger import Ledger

MAX_DIFFERENCES = 200


class Compared(TypedDict):
    """The held record against the one this ledger projects for the same paper and as_of."""

    found: bool
    matches: bool
    message: str | None
    context_digest: str | None
    differences: list[str]
    differences_total: int
    head: NotRequired[JsonObject]


class Mismatch(TypedDict):
    path: str
    observation_id: Json
    stated: Json
    recomputed: str


class DigestCheck(TypedDict):
    stated: Json
    recomputed: str
    match: bool


class Digests(TypedDict):
    """The held record's digests recomputed from its content."""

    ok: bool
    context_digest: DigestCheck
    observations_checked: int
    observation_mismatches: list[Mismatch]


class HeldAnswer(TypedDict):
    """The answer of POST /verify (docs.py's VerifyAnswer documents it)."""

    arxiv_id: str
    as_of: str
    ok: bool
    digests: Digests
    ledger: Compared


def verify_held(ledger: Ledger, held: Json, known_us: int | None = None) -> tuple[HeldAnswer, Head]:
    """Check the digests of a record someone kept against its content and compare it with the ledger's."""
    if not isinstance(held, dict) or held.get("schema") != SCHEMA:
        raise InvalidEvent("schema", f"the body must be a record whose schema is {SCHEMA!r}")
    # The importer's checks (types, ids, timestamps, self-consistency) without its digest check:
    # a record with wrong digests is exactly what this route must be able to describe.
    record_to_batch(held, force=True)
    # those checks passed: as_of is a string, paper an object whose arxiv_id is a string
    as_of = cast(str, held["as_of"])
    try:
        as_of_us = parse_as_of(as_of)
    except ValueError as e:
        raise InvalidEvent("as_of", str(e)) from None
    digests = _digests(held)
    arxiv_id = cast(str, cast(JsonObject, held["paper"])["arxiv_id"])
    try:
        ours, _, head = ledger.record(arxiv_id, as_of_us, known_us)
    except NotFound as e:
        head = ledger.head()
        compared = Compared(
            found=False,
            matches=False,
            message=e.message,
            context_digest=None,
            differences=[],
            differences_total=0,
        )
    else:
        paths = diff_paths(held, as_json(ours))
        compared = Compared(
            found=True,
            matches=not paths,
            message=None,
            context_digest=ours.context_digest,
            differences=paths[:MAX_DIFFERENCES],
            differences_total=len(paths),
        )
    compared["head"] = head_json(head)
    answer = HeldAnswer(
        arxiv_id=arxiv_id,
        as_of=as_of,
        ok=digests["ok"] and compared["matches"],
        digests=digests,
        ledger=compared,
    )
    return answer, head


def _digests(held: JsonObject) -> Digests:
    mismatches = []
    checked = 0
    for lane in ("outbound", "inbound"):
        # the importer checked each lane is a list of observation objects
        for i, o in enumerate(cast(list[JsonObject], held[lane])):
            checked += 1
            again = observation_digest(o)
            if again != o["observation_digest"]:
                mismatches.append(
                    Mismatch(
                        path=f"{lane}[{i}].observation_digest",
                        observation_id=o["observation_id"],
                        stated=o["observation_digest"],
                        recomputed=again,
                    )
                )
    context = context_digest(held)
    context_ok = context == held["context_digest"]
    return Digests(
        ok=context_ok and not mismatches,
        context_digest=DigestCheck(stated=held["context_digest"], recomputed=context, match=context_ok),
        observations_checked=checked,
        observation_mismatches=mismatches,
    )


def diff_paths(a: JsonIn, b: JsonIn) -> list[str]:
    """JSON paths (importer style, e.g. `outbound[3].resolution.status`) where a and b differ."""
    return [path or "$" for path, _, _ in json_diff(a, b)]
