"""Whose names a person's resolution may carry, over real sockets against `ledger serve`: names bound to
tokens in LEDGER_PERSON_NAMES and in the tokens file (`person HEX NAME`, for a token of any text), look-
alikes and mixed scripts refused, and the resolver's own prefix refused, each naming `by`."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import httpx
import pytest

from service.ledger import Ledger
from tests.api_fixtures import Server, running_server
from tests.conftest import FIXTURE_PATH, NewDb

pytestmark = pytest.mark.process

ADA = "ada-token"  # from LEDGER_TOKENS, bound to "Ada Lovelace" in LEDGER_PERSON_NAMES
EMMA = "emma's token, with # , = and spaces"  # only its digest is written: any text is a token
FREE = "free-token"  # no name bound to it


def _sha(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def _auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def _serve(db: str, tmp: Path) -> Any:
    ledger = Ledger(db)
    ledger.import_bytes(FIXTURE_PATH.read_bytes())
    cited = ledger.store.read_log(type="citation.observed", limit=8)
    oids = [json.loads(e.data)["observation_id"] for e in cited]
    ledger.close()
    tokens = tmp / "tokens"
    tokens.write_text(f"{_sha(EMMA)}\nperson {_sha(EMMA)} Emma Noether\n")
    tokens.chmod(0o600)
    env = {
        "LEDGER_TOKENS": f"{ADA},{FREE}",
        "LEDGER_TOKENS_FILE": str(tokens),
        "LEDGER_PERSON_NAMES": json.dumps({_sha(ADA): ["Ada Lovelace"]}),
    }
    return running_server(db, env=env), oids


def _person(server: Server, token: str, oid: str, by: str) -> httpx.Response:
    body = {"observation_id": oid, "by": by, "none": True}
    return httpx.post(f"{server.base}/resolve/person", json=body, headers=_auth(token), timeout=30)


def _head(server: Server) -> Any:
    return httpx.get(f"{server.base}/healthz", timeout=30).json()["head"]


def test_bound_names_are_their_tokens_and_look_alikes_are_refused(new_db: NewDb, tmp_path: Path) -> None:
    serving, oids = _serve(new_db(), tmp_path)
    with serving as server:
        # each token writes its own name; a token with none bound writes a name nobody holds
        assert _person(server, ADA, oids[0], "Ada Lovelace").status_code == 201
        assert _person(server, EMMA, oids[1], "Emma Noether").status_code == 201
        assert _person(server, FREE, oids[2], "Grace Hopper").status_code == 201
        head = _head(server)
        refused = [
            (ADA, "Emma Noether", 403, "bound to another token"),
            (FREE, "Ada Lovelace", 403, "bound to another token"),
            (FREE, "ada  lovelace", 403, "bound to another token"),
            (FREE, "Ernrna Noether", 403, "bound to another token"),  # rn for m: the same skeleton
            (ADA, "Grace Hopper", 403, "only the names bound to it"),
            (EMMA, "\u0410da Lovelace", 422, "one script"),  # a Cyrillic A
            (FREE, "Emma N\u043eether", 422, "one script"),  # a Cyrillic o
            (FREE, "citation-ledger/v1", 422, "citation-ledger/"),
            (ADA, "Citation-Ledger/fake", 422, "citation-ledger/"),
        ]
        for token, name, status, why in refused:
            answer = _person(server, token, oids[3], name)
            assert answer.status_code == status, (name, answer.text)
            error = answer.json()["error"]
            assert error["details"]["where"] == "by" and why in error["message"], (name, error)
        assert _head(server) == head  # nothing written by any refusal
