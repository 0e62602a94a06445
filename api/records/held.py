"""POST /verify: is a record someone holds intact, and does this ledger project the same one?"""

from __future__ import annotations

from typing import Any

from api.common import head_json
from ledger.model.codec import context_digest, observation_digest
from ledger.model.errors import InvalidEvent, NotFound
from ledger.model.facts import Head
from ledger.model.importer import SCHEMA, record_to_batch
from ledger.model.instants import parse_as_of
from projections.diff import as_json, json_diff
from service.ledger import Ledger

MAX_DIFFERENCES = 200


def verify_held(ledger: Ledger, held: Any, known_us: int | None = None) -> tuple[dict[str, Any], Head]:
    """Check the digests of a record someone kept against its content and compare it with the ledger's."""
    if not isinstance(held, dict) or held.get("schema") != SCHEMA:
        raise InvalidEvent("schema", f"the body must be a record whose schema is {SCHEMA!r}")
    # The importer's checks (types, ids, timestamps, self-consistency) without its digest check:
    # a record with wrong digests is exactly what this route must be able to describe.
    record_to_batch(held, force=True)
    try:
        as_of_us = parse_as_of(held["as_of"])
    except ValueError as e:
        raise InvalidEvent("as_of", str(e)) from None
    digests = _digests(held)
    arxiv_id = held["paper"]["arxiv_id"]
    try:
        ours, _, head = ledger.record(arxiv_id, as_of_us, known_us)
    except NotFound as e:
        head = ledger.head()
        compared: dict[str, Any] = {
            "found": False,
            "matches": False,
            "message": e.message,
            "context_digest": None,
            "differences": [],
            "differences_total": 0,
        }
    else:
        paths = diff_paths(held, as_json(ours))
        compared = {
            "found": True,
            "matches": not paths,
            "message": None,
            "context_digest": ours.context_digest,
            "differences": paths[:MAX_DIFFERENCES],
            "differences_total": len(paths),
        }
    compared["head"] = head_json(head)
    answer = {
        "arxiv_id": arxiv_id,
        "as_of": held["as_of"],
        "ok": digests["ok"] and compared["matches"],
        "digests": digests,
        "ledger": compared,
    }
    return answer, head


def _digests(held: dict[str, Any]) -> dict[str, Any]:
    mismatches = []
    checked = 0
    for lane in ("outbound", "inbound"):
        for i, o in enumerate(held[lane]):
            checked += 1
            again = observation_digest(o)
            if again != o["observation_digest"]:
                mismatches.append(
                    {
                        "path": f"{lane}[{i}].observation_digest",
                        "observation_id": o["observation_id"],
                        "stated": o["observation_digest"],
                        "recomputed": again,
                    }
                )
    context = context_digest(held)
    context_ok = context == held["context_digest"]
    return {
        "ok": context_ok and not mismatches,
        "context_digest": {
            "stated": held["context_digest"],
            "recomputed": context,
            "match": context_ok,
        },
        "observations_checked": checked,
        "observation_mismatches": mismatches,
    }


def diff_paths(a: Any, b: Any) -> list[str]:
    """JSON paths (importer style, e.g. `outbound[3].resolution.status`) where a and b differ."""
    return [path or "$" for path, _, _ in json_diff(a, b)]
