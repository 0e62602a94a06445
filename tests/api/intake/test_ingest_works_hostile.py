"""POST /ingest/works against anything: work items with any field replaced by any JSON (repeated keys,
NaN, huge integers, U+0000, lone surrogates), wrapped in each format or not, gzipped, zstd-compressed
or cut short. Never a 5xx; a refusal in the error shape, nothing written; the chain verifies after."""

from __future__ import annotations

import gzip
import json
import math
import warnings
from typing import Any

import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from service.ledger import Ledger
from tests.api.app_support import HOSTILE, answering_app
from tests.conftest import NewDb, examples

with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from fastapi.testclient import TestClient

TOKEN = "works-property-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
ROUTE = "/ingest/works?observed_at=2026-09-01T12:00:00Z"
CROSSREF = {
    "DOI": "10.1000/a",
    "title": ["A title"],
    "author": [{"family": "Doe", "given": "J."}],
    "container-title": ["Journal"],
    "issued": {"date-parts": [[2020, 1]]},
    "volume": "1",
    "page": "1-2",
    "type": "journal-article",
    "relation": {"has-preprint": [{"id-type": "arxiv", "id": "2001.00001"}]},
}
OPENALEX = {
    "id": "https://openalex.org/W1",
    "doi": "https://doi.org/10.1000/b",
    "display_name": "A title",
    "publication_year": 2020,
    "authorships": [{"author": {"display_name": "Jane Doe"}}],
    "primary_location": {
        "source": {"display_name": "Journal"},
        "landing_page_url": "https://arxiv.org/abs/2001.00002",
    },
    "biblio": {"volume": "1", "first_page": "1", "last_page": "2"},
    "ids": {"doi": "https://doi.org/10.1000/b"},
}

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.text(alphabet=st.sampled_from(["\x00", "\ud800", "a", "\\", '"', "é", "/", ":"]), max_size=10),
    st.sampled_from(["10.1/x", "doi:10.1/X", "arXiv:2001.00001v2", "https://arxiv.org/abs/hep-th/9901001"]),
)
anything = st.recursive(
    scalars,
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=6), c, max_size=4),
    max_leaves=12,
)


def _text(value: Any) -> str:
    if isinstance(value, dict):
        return "{" + ",".join(f"{json.dumps(k)}:{_text(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ",".join(_text(v) for v in value) + "]"
    if isinstance(value, float) and not math.isfinite(value):
        return json.dumps(value)
    return json.dumps(value)


@st.composite
def files(draw: Any) -> bytes:
    """A works file, more or less: items with a field replaced, in one of the formats, or noise."""
    items = []
    for _ in range(draw(st.integers(0, 3))):
        item = dict(draw(st.sampled_from([CROSSREF, OPENALEX])))
        if draw(st.booleans()):
            item[draw(st.sampled_from(sorted(item) + ["extra"]))] = draw(anything)
        items.append(item)
    shape = draw(st.sampled_from(["ndjson", "message", "items", "results", "one", "noise"]))
    if shape == "ndjson":
        text = "\n".join(_text(i) for i in items)
    elif shape == "message":
        text = _text({"status": draw(st.sampled_from(["ok", "failed"])), "message": {"items": items}})
    elif shape == "items":
        text = _text({"items": items})
    elif shape == "results":
        text = _text({"meta": {}, "results": items})
    elif shape == "one":
        text = _text({"message": items[0]} if items and draw(st.booleans()) else (items or [{}])[0])
    else:
        text = _text(draw(anything))
    raw = text.encode("utf-8", "surrogatepass")
    if draw(st.integers(0, 4)) == 0:
        raw = raw[: draw(st.integers(0, len(raw)))]
    packing = draw(st.sampled_from(["plain", "plain", "gzip", "zstd"]))
    if packing == "gzip":
        raw = gzip.compress(raw)
    elif packing == "zstd":
        raw = zstandard.ZstdCompressor().compress(raw)
    if draw(st.integers(0, 5)) == 0 and packing != "plain":
        raw = raw[: draw(st.integers(0, len(raw)))]
    return raw


@pytest.fixture
def app_client(new_db: NewDb) -> tuple[TestClient, Ledger]:
    """The whole app over a ledger; server errors come back as answers."""
    ledger = Ledger(new_db())
    return answering_app(ledger, TOKEN), ledger


@HOSTILE
@given(raw=files())
def test_no_works_file_answers_5xx_and_a_refusal_writes_nothing(
    app_client: tuple[TestClient, Ledger], raw: bytes
) -> None:
    client, ledger = app_client
    before = ledger.head()
    r = client.post(ROUTE, content=raw, headers=AUTH)
    assert r.status_code in (200, 201, 422), (r.status_code, r.text[:500])
    if r.status_code == 422:
        assert set(r.json()["error"]) == {"code", "message", "details"}
        assert ledger.head() == before


def test_the_ledger_verifies_after_hostile_works(app_client: tuple[TestClient, Ledger]) -> None:
    client, ledger = app_client

    @settings(max_examples=examples(40), deadline=None)
    @given(raw=files())
    def post(raw: bytes) -> None:
        client.post(ROUTE, content=raw, headers=AUTH)

    post()
    assert ledger.verify().ok
