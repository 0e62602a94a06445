"""Schemathesis CLI hooks (SCHEMATHESIS_HOOKS=reliability.st_hooks): two checks of our own.

`refusal_leaves_the_head`: the ledger head is the same after every refused request as before it
(run with one worker, `-w 1`, so no other request of the run writes in between).
`errors_have_the_shape`: every JSON 4xx/5xx body is {"error": {"code", "message", "details"}}.
"""

from __future__ import annotations

import json
import os
import urllib.request
from typing import Any

import schemathesis

BASE = os.environ.get("LEDGER_FUZZ_BASE", "http://127.0.0.1:8000")
_before: dict[int, Any] = {}


def _head() -> Any:
    with urllib.request.urlopen(f"{BASE}/healthz", timeout=10) as r:
        return json.load(r)["head"]


@schemathesis.hook
def before_call(context: Any, case: Any, kwargs: dict[str, Any]) -> None:
    """Remember the head before each request."""
    _before[id(case)] = _head()


@schemathesis.check
def refusal_leaves_the_head(ctx: Any, response: Any, case: Any) -> bool | None:
    """A refused request (4xx) wrote nothing."""
    before = _before.pop(id(case), None)
    if before is None or not 400 <= response.status_code < 500:
        return None
    after = _head()
    if after != before:
        raise AssertionError(f"refused with {response.status_code}, but the head moved {before} -> {after}")
    return True


@schemathesis.check
def errors_have_the_shape(ctx: Any, response: Any, case: Any) -> bool | None:
    """JSON error bodies have one shape."""
    content_type = (response.headers.get("content-type") or [""])[0]
    if response.status_code < 400 or not content_type.startswith("application/json"):
        return None
    body = json.loads(response.content)
    if set(body) != {"error"} or set(body["error"]) != {"code", "message", "details"}:
        raise AssertionError(f"error body without the error shape: {body!r:.300}")
    return True
