"""A watch as stored: the one in force under an id, a rotation of its secret, and both as the API
answers them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

import msgspec

from ledger.model.errors import Conflict, NotFound
from ledger.model.instants import Clock, format_recorded
from ledger.model.jsonvalue import Json, JsonObject
from ledger.storage.state.alerts import Watch
from service.alerts.watch_spec import COLLECTION, PAPER, WORKS

if TYPE_CHECKING:
    from ledger.storage.interface import Store


class Rotated(NamedTuple):
    """A rotation done: the watch as it is now, the new secret, whether it was made here, and until
    when the old secret signs beside it."""

    watch: Watch
    secret: str
    made: bool
    old_until_us: int


def rotate_secret(
    store: Store,
    clock: Clock,
    watch_id: str,
    secret: str,
    made: bool,
    grace_s: float,
    owner: str | None = None,
    at_us: int | None = None,
) -> Rotated:
    """Give `owner`'s watch (any watch for None, the operator) a new secret; the old one signs beside
    it for `grace_s` seconds from `at_us` (now). The watch, its alerts, their ids and its pending
    deliveries stay as they are. NotFound as for no watch; Conflict when the watch signs nothing."""
    watch = watch_of(store, watch_id, owner)
    # a watch with a callback stored before every webhook was signed gets its first secret here
    if watch.callback_url is None:
        raise Conflict(
            f"watch {watch.id} has no callback_url: it signs nothing, so there is no secret to rotate",
            details={"watch_id": watch.id},
        )
    until = (clock.now_us() if at_us is None else at_us) + int(grace_s * 1e6)
    tables = store.alerts
    with tables.updating():
        # removed since it was read: as for no watch
        if not tables.rotate_secret(watch.id, secret, until) or (rotated := tables.watch(watch.id)) is None:
            raise NotFound(f"no watch {watch_id!r}", details={"watch_id": watch_id})
    return Rotated(rotated, secret, made, until)


def rotation_json(r: Rotated) -> JsonObject:
    """A rotation as the API answers it: the secret only when the server made it, this once."""
    out: JsonObject = {
        "id": r.watch.id,
        "rotated": True,
        "old_secret_valid_until": format_recorded(r.old_until_us),
    }
    if r.made:
        out["secret"] = r.secret
    return out


def watch_target(watch: Watch) -> Json:
    """What the watch was made on: its arXiv id, its collection's name, or its works as given."""
    if watch.kind != WORKS:
        return watch.target
    works: Json = msgspec.json.decode(watch.target)  # canonical JSON of the works list
    return works


_TARGET_KEY = {PAPER: "arxiv_id", COLLECTION: "collection", WORKS: "works"}


def watch_json(watch: Watch, covered: Sequence[str] | None = None, made: bool = False) -> JsonObject:
    """A watch as the API answers it: the secret the server `made` for it only in the answer that made
    it, never after (nor one the caller gave)."""
    out: JsonObject = {
        "id": watch.id,
        "kind": watch.kind,
        _TARGET_KEY.get(watch.kind, "works"): watch_target(watch),
        "callback_url": watch.callback_url,
        "signed": watch.secret is not None,
        "created_at": watch.created_at,
        "created_at_seq": watch.created_seq,
    }
    if covered is not None:
        out["works_covered"] = list(covered)
    if made and watch.secret is not None:
        out["secret"] = watch.secret
    return out


def watch_of(store: Store, watch_id: str, owner: str | None = None) -> Watch:
    """The watch in force under this id, or NotFound; given an `owner`, only one that owner made
    (another's is not found either, so its existence is not confirmed)."""
    w = store.alerts.watch(watch_id)
    if w is None or w.removed_at is not None or (owner is not None and w.owner != owner):
        raise NotFound(f"no watch {watch_id!r}", details={"watch_id": watch_id})
    return w
