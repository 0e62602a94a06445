"""A watch as asked for: the request that makes a watch (`POST /watches`, `ledger watch add`) or
rotates its secret, checked field by field, and the callback URL a webhook may go to."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from typing import NamedTuple
from urllib.parse import urlsplit

from ledger.model.codec import canonical, check_collection_name
from ledger.model.doi import arxiv_key, doi_key
from ledger.model.errors import InvalidEvent
from ledger.model.ids import normalise_arxiv
from ledger.model.jsonvalue import JsonIn
from ledger.storage.derived.keys import work_index_key
from service.alerts.address_policy import AddressPolicy
from service.alerts.secrets import SECRET_PREFIX, new_secret, whsec_key
from service.collections import PREFIX as COLLECTION_STREAM

PAPER, WORKS, COLLECTION = "paper", "works", "collection"
MAX_WORKS = 1000  # works one watch may list
MAX_URL = 2048
MAX_SECRET = 256


class WatchSpec(NamedTuple):
    """A watch as asked for (POST /watches, `ledger watch add`), checked."""

    kind: str
    target: str  # the arXiv id, the collection's name, or canonical JSON of the works as given
    # what finds it: "p:<arXiv id>", "collection:<name>" (its members' "p:" keys are kept as it
    # changes) or the works index keys of its works
    keys: list[str]
    callback_url: str | None
    secret: str | None
    secret_made: bool = False  # made here (none was given): told once, in the answer that makes the watch


def parse_watch(body: JsonIn, allow: Iterable[str] = ()) -> WatchSpec:
    """A watch request (`{"arxiv_id": ...}`, `{"collection": ...}` or `{"works": [...]}`, with
    `callback_url` and `secret`) -> a WatchSpec, or InvalidEvent naming the field."""
    if not isinstance(body, Mapping):
        raise InvalidEvent(
            "$", 'a watch is a JSON object: {"arxiv_id": ...}, {"collection": ...} or {"works": [...]}'
        )
    unknown = sorted(set(body) - {"arxiv_id", "works", "collection", "callback_url", "secret"})
    if unknown:
        raise InvalidEvent(
            unknown[0], "unknown field (expected arxiv_id, collection or works, callback_url, secret)"
        )
    if sum(k in body for k in ("arxiv_id", "works", "collection")) != 1:
        raise InvalidEvent(
            "$",
            "give exactly one of arxiv_id (a paper), collection (a collection's name) and works "
            "(a list of works)",
        )
    given_callback, given_secret = body.get("callback_url"), body.get("secret")
    callback = None if given_callback is None else check_callback(given_callback, allow)
    secret = None if given_secret is None else _check_secret(given_secret)
    if secret is not None and callback is None:
        raise InvalidEvent("secret", "a secret signs webhooks: give a callback_url with it")
    made = secret is None and callback is not None
    if made:
        secret = new_secret()  # every webhook is signed
    if "arxiv_id" in body:
        if not isinstance(body["arxiv_id"], str):
            raise InvalidEvent("arxiv_id", "an arXiv id, a string: NNNN.NNNNN or archive/NNNNNNN")
        arxiv_id = normalise_arxiv(body["arxiv_id"], "arxiv_id")  # as pasted: arXiv:...v1, a URL, a DOI
        return WatchSpec(PAPER, arxiv_id, [f"p:{arxiv_id}"], callback, secret, made)
    if "collection" in body:
        name = body["collection"]
        if not isinstance(name, str):
            raise InvalidEvent("collection", "a collection's name, a string")
        check_collection_name(name, "collection")
        return WatchSpec(COLLECTION, name, [COLLECTION_STREAM + name], callback, secret, made)
    works = body["works"]
    if not isinstance(works, list) or not 0 < len(works) <= MAX_WORKS:
        raise InvalidEvent("works", f"a list of 1 to {MAX_WORKS} works (doi:... or arxiv:...)")
    keys: list[str] = []
    for i, w in enumerate(works):
        keys.append(work_index_key(_work_key(w, f"works[{i}]")))
    return WatchSpec(WORKS, canonical(works).decode(), sorted(set(keys)), callback, secret, made)


def _check_secret(secret: JsonIn) -> str:
    """The secret, or InvalidEvent naming `secret` unless it is one a watch may sign with."""
    if not isinstance(secret, str) or not 0 < len(secret) <= MAX_SECRET:
        raise InvalidEvent("secret", f"a string of 1 to {MAX_SECRET} characters")
    if secret.startswith(SECRET_PREFIX) and whsec_key(secret) is None:
        raise InvalidEvent("secret", "a whsec_ secret is whsec_ and the base64 of its key")
    return secret


def parse_rotation(body: JsonIn) -> tuple[str, bool]:
    """A rotation request (`{}` or `{"secret": ...}`, as when a watch is made) -> (the new secret,
    whether it was made here), or InvalidEvent naming the field."""
    if not isinstance(body, Mapping):
        raise InvalidEvent("$", 'a rotation is a JSON object: {} or {"secret": ...}')
    unknown = sorted(set(body) - {"secret"})
    if unknown:
        raise InvalidEvent(unknown[0], "unknown field (expected secret, or nothing: one is made)")
    if body.get("secret") is None:
        return new_secret(), True
    return _check_secret(body["secret"]), False


def _work_key(w: JsonIn, where: str) -> str:
    """A listed work (`doi:10.1/x`, `arxiv:2401.00001`, or a bare DOI) -> its match key."""
    if not isinstance(w, str) or not w.strip():
        raise InvalidEvent(where, "a work is a string: doi:10.1000/x or arxiv:2401.00001")
    text = w.strip()
    if text.lower().startswith("arxiv:"):
        key = arxiv_key(normalise_arxiv(text, where))  # a version suffix, as pasted, names the same work
        if key is None:
            raise InvalidEvent(where, f"bad arXiv id {text!r}: expected arxiv:NNNN.NNNNN or archive/NNNNNNN")
        return key
    key = doi_key(text)  # takes doi: and doi.org prefixes off
    if key is None or not key.startswith("10.") or "/" not in key:
        raise InvalidEvent(where, f"{text!r} is neither doi:10.<prefix>/<suffix> nor arxiv:<id>")
    return key


def check_callback(url: JsonIn, allow: Iterable[str] = ()) -> str:
    """The URL, or InvalidEvent unless it is an https URL (http only for a host LEDGER_WEBHOOK_ALLOW
    names), with a host, no credentials, and not a literal address the policy refuses."""
    if not isinstance(url, str) or not 0 < len(url) <= MAX_URL:
        raise InvalidEvent("callback_url", f"an https URL of at most {MAX_URL} characters")
    parts = urlsplit(url)
    try:
        host, port = parts.hostname, parts.port
    except ValueError as e:
        raise InvalidEvent("callback_url", f"not a URL: {e}") from None
    if not host or parts.username is not None or parts.password is not None or port == 0:
        raise InvalidEvent("callback_url", "an https URL with a host and no user or password in it")
    policy = AddressPolicy(allow)
    if parts.scheme != "https" and not (parts.scheme == "http" and policy.names(host)):
        raise InvalidEvent("callback_url", "must be https (http only for a host LEDGER_WEBHOOK_ALLOW names)")
    try:
        literal = ipaddress.ip_address(host)
    except ValueError:
        return url  # a name: its addresses are checked at each delivery, on the address connected to
    why = policy.refused(host, literal)
    if why is not None:
        raise InvalidEvent("callback_url", why)
    return url
