"""Property: whatever JSON text reaches a write route (deep, wide, duplicate keys, huge or odd numbers, any
string), the answer is never a 5xx, a refusal is in the JSON error shape, and a refusal stores nothing."""

from __future__ import annotations

import json
import math
import warnings
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from service.ledger import Ledger
from tests.api.app_support import HOSTILE, answering_app
from tests.conftest import FIXTURE_PATH, NewDb, examples
from tests.factories import measurement_json

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

TOKEN = "property-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
ROUTES = [
    "/events",
    "/records",
    "/records?force=true",
    "/verify",
    "/ingest/crossref?observed_at=2026-09-01T12:00:00Z",
    "/ingest/openalex?observed_at=2026-09-01T12:00:00Z",
    "/ingest/semantic-scholar?observed_at=2026-09-01T12:00:00Z",
    "/ingest/opencitations?observed_at=2026-09-01T12:00:00Z&id=doi:10.48550/arXiv.2509.02480",
    "/ingest/retraction-watch?observed_at=2026-09-01T12:00:00Z",
]
VALID_EVENT = measurement_json(at="2026-09-01T00:00:00Z")

# -- JSON text, including what json.dumps never writes (duplicate keys, NaN, lone surrogates) --------

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(),
    st.text(alphabet=st.sampled_from(["\x00", "\ud800", "\udfff", "a", "\\", '"', "\u2028", "é"])),
    st.sampled_from(
        ["2026-09-01T00:00:00Z", "9999-12-31T23:59:59-23:59", "2509.02480", "measurement.observed"]
    ),
)
keys = st.one_of(st.text(max_size=8), st.sampled_from(["events", "type", "data", "value", "schema", "as_of"]))


def _objects(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    # a list of pairs, not a dict: a key may repeat, as JSON text allows and I-JSON refuses
    return st.lists(st.tuples(keys, children), max_size=6).map(lambda pairs: ("object", pairs))


trees = st.recursive(
    scalars, lambda children: st.lists(children, max_size=6) | _objects(children), max_leaves=40
)


def text_of(tree: Any) -> str:
    """JSON text of a tree; objects keep repeated keys, floats may be NaN/Infinity."""
    if isinstance(tree, tuple) and tree and tree[0] == "object":
        return "{" + ",".join(f"{json.dumps(k)}:{text_of(v)}" for k, v in tree[1]) + "}"
    if isinstance(tree, list):
        return "[" + ",".join(text_of(v) for v in tree) + "]"
    if isinstance(tree, float) and not math.isfinite(tree):
        return json.dumps(tree)  # NaN, Infinity: what Python writes and JSON does not allow
    return json.dumps(tree)


# hypothesis raises the recursion limit by some thousands while a test runs: go well past that too
depths = st.one_of(
    st.integers(min_value=1, max_value=200), st.sampled_from([64, 65, 1000, 5000, 50_000, 200_000])
)
deep = depths.flatmap(
    lambda d: st.sampled_from(
        [("[" * d) + ("]" * d), ('{"a":' * d) + "1" + ("}" * d), '{"events":' + "[" * d + "]" * d + "}"]
    )
)
wide = st.integers(min_value=0, max_value=20_000).map(lambda n: '{"events":[' + ",".join(["{}"] * n) + "]}")


def _with(path: list[Any], value: Any) -> dict[str, Any]:
    event = json.loads(json.dumps(VALID_EVENT))
    target = event
    for step in path[:-1]:
        target = target[step]
    target[path[-1]] = value
    return {"events": [event]}


# a valid event with one field replaced by anything: exercises the typed checks past the parser
mutated = st.tuples(
    st.sampled_from(
        [["type"], ["observed_at"], ["data"], ["data", "value"], ["data", "arxiv_id"], ["event_id"]]
    ),
    st.recursive(
        scalars, lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=5), c, max_size=4)
    ),
).map(lambda pv: json.dumps(_with(*pv)))

bodies = st.one_of(
    trees.map(text_of), deep, wide, mutated, st.binary(max_size=200).map(lambda b: b.decode("latin-1"))
)


@pytest.fixture
def app_client(new_db: NewDb) -> tuple[TestClient, Ledger]:
    """The whole app over a ledger holding the sample record; server errors come back as answers."""
    ledger = Ledger(new_db())
    ledger.import_bytes(FIXTURE_PATH.read_bytes())
    return answering_app(ledger, TOKEN), ledger


@HOSTILE
@given(route=st.sampled_from(ROUTES), body=bodies, gzip_it=st.booleans())
def test_no_write_route_answers_5xx_and_a_refusal_stores_nothing(
    app_client: tuple[TestClient, Ledger], route: str, body: str, gzip_it: bool
) -> None:
    client, ledger = app_client
    raw = body.encode("utf-8", "surrogatepass")
    if gzip_it and route.startswith("/ingest"):
        import gzip

        raw = gzip.compress(raw)
    before = ledger.head()
    r = client.post(route, content=raw, headers={**AUTH, "Content-Type": "application/json"})
    assert r.status_code < 500, (r.status_code, r.text[:500])
    if r.status_code >= 400:
        error = r.json()["error"]
        assert set(error) == {"code", "message", "details"}
        assert ledger.head() == before, f"{route} refused ({r.status_code}) yet the head moved"
    if route == "/verify" or r.status_code >= 400:
        assert ledger.head() == before


def test_the_ledger_still_verifies_after_the_property_run(app_client: tuple[TestClient, Ledger]) -> None:
    """A smaller run, then the whole chain is walked: nothing a refusal touched is left behind."""
    client, ledger = app_client

    @settings(max_examples=examples(40), deadline=None)
    @given(body=bodies)
    def post(body: str) -> None:
        client.post("/events", content=body.encode("utf-8", "surrogatepass"), headers=AUTH)

    post()
    assert ledger.verify().ok
