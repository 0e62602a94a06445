"""work.observed and the optional reference of citation.observed (resolver-v1.md): their rules, their
bytes, and the quick decoder's agreement with the exact path when they are present."""

from __future__ import annotations

import copy
import json
from typing import Any

import msgspec
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.model import events as ev
from ledger.model.codec import canonical, decode_event, quick_body, quick_event
from ledger.model.errors import InvalidEvent
from ledger.model.works import Reference
from tests.conftest import examples
from tests.ledger.model.quick_support import assert_quick_agrees, exact_event

OID = "8f7cb4e3-557e-49d1-9dc8-6b681dc73b8b"
TS = "2026-01-01T00:00:00Z"
WORK = {
    "doi": "10.1109/sc41405.2020.00024",
    "source": "crossref",
    "title": "ZeRO: Memory optimizations",
    "authors": [{"family": "Rajbhandari", "given": "Samyam"}, {"family": None, "given": "Jeff"}],
    "container_title": "SC20",
    "year": 2020,
    "volume": "1",
    "issue": None,
    "pages": "1-16",
    "type": "proceedings-article",
    "arxiv_id": "1910.02054",
}
CITATION = {
    "observation_id": OID,
    "citing_arxiv_id": "2509.02480",
    "reference_index": 3,
    "source": "pdf_text",
    "cited_work": None,
}
REFERENCE = {"unstructured": "S. Rajbhandari, ZeRO, SC20: 1-16", "first-page": "1", "journal-title": "SC20"}


def envelope(type_: str, data: dict[str, Any]) -> dict[str, Any]:
    return {"type": type_, "observed_at": TS, "data": copy.deepcopy(data)}


def decode(env: dict[str, Any]) -> Any:
    return decode_event(json.dumps(env).encode(), "events[0]")


def test_a_work_observed_decodes_and_encodes_sorted() -> None:
    event = decode(envelope("work.observed", WORK))
    assert isinstance(event, ev.WorkObserved)
    assert event.data.authors[1].family is None
    assert canonical(event.data) == canonical(json.loads(json.dumps(WORK)))


@pytest.mark.parametrize(
    "field,value,reason",
    [
        ("doi", "10.1109/SC41405.2020.00024", "normalised"),
        ("doi", "https://doi.org/10.1/x", "normalised"),
        ("doi", "sc41405", "normalised"),
        ("doi", "", "normalised"),
        ("source", " ", "must not be empty"),
        ("year", 2**53, "integer"),
        ("arxiv_id", "1910.02054v2", "bad arXiv id"),
    ],
)
def test_work_observed_rules_name_the_field(field: str, value: Any, reason: str) -> None:
    env = envelope("work.observed", WORK)
    env["data"][field] = value
    with pytest.raises(InvalidEvent, match=reason) as e:
        decode(env)
    assert e.value.where == f"events[0].data.{field}"


@pytest.mark.parametrize("field", ["bogus", "Title"])
def test_work_observed_refuses_unknown_keys(field: str) -> None:
    env = envelope("work.observed", WORK)
    env["data"][field] = "x"
    with pytest.raises(InvalidEvent, match="unknown field") as e:
        decode(env)
    assert e.value.where == f"events[0].data.{field}"


def test_an_author_refuses_unknown_keys() -> None:
    env = envelope("work.observed", WORK)
    env["data"]["authors"][0]["orcid"] = "x"
    with pytest.raises(InvalidEvent) as e:
        decode(env)
    assert e.value.where == "events[0].data.authors[0].orcid"


def test_a_citation_without_reference_keeps_its_bytes() -> None:
    # the bytes a citation had before `reference` existed, written out by hand
    before = (
        b'{"cited_work":null,"citing_arxiv_id":"2509.02480","observation_id":"' + OID.encode() + b'",'
        b'"reference_index":3,"source":"pdf_text"}'
    )
    event = decode(envelope("citation.observed", CITATION))
    assert event.data.reference is msgspec.UNSET
    assert canonical(event.data) == before
    assert msgspec.json.decode(before, type=ev.CitationData) == event.data


def test_a_citation_with_a_reference_carries_it_with_crossref_keys() -> None:
    event = decode(envelope("citation.observed", {**CITATION, "reference": REFERENCE}))
    assert event.data.reference == Reference(
        unstructured=REFERENCE["unstructured"], first_page="1", journal_title="SC20"
    )
    out = json.loads(canonical(event.data))
    assert out["reference"] == REFERENCE


# a reference as Crossref's REST API gives it, with the ISSN's type beside it (resolver-v1.md)
CROSSREF_REFERENCE = {
    "first-page": "040",
    "volume": "2003",
    "author": "K. Hashimoto",
    "year": "2003",
    "journal-title": "J. High Energy Phys.",
    "ISSN": "http://id.crossref.org/issn/1126-6708",
    "issn-type": "print",
}


@pytest.mark.parametrize("key", ["issn-type", "isbn-type"])
def test_crossref_type_keys_are_taken_and_kept(key: str) -> None:
    reference = {**CROSSREF_REFERENCE, key: "electronic"}
    event = decode(envelope("citation.observed", {**CITATION, "reference": reference}))
    assert json.loads(canonical(event.data))["reference"] == reference


@pytest.mark.parametrize(
    "reference,where",
    [
        ({"bogus": "x"}, "events[0].data.reference.bogus"),
        ({"first_page": "1"}, "events[0].data.reference.first_page"),
        ({"year": 2020}, "events[0].data.reference.year"),
        (None, "events[0].data.reference"),
        ("text", "events[0].data.reference"),
    ],
)
def test_a_bad_reference_is_refused_naming_the_field(reference: Any, where: str) -> None:
    with pytest.raises(InvalidEvent) as e:
        decode(envelope("citation.observed", {**CITATION, "reference": reference}))
    assert e.value.where == where


_WIRE = [f.encode_name for f in msgspec.structs.fields(Reference)]


@st.composite
def _texts(draw: Any) -> bytes:
    """A citation with a reference, or a work, spelled with its keys in any order, colons in strings,
    repeated keys and escaped colons now and then."""
    if draw(st.booleans()):
        ref = {
            k: draw(st.sampled_from(["", "a:b", '"q":', "1", "\u00e9:"]))
            for k in draw(st.sets(st.sampled_from(_WIRE)))
        }
        env = envelope("citation.observed", {**CITATION, "reference": ref})
    else:
        env = envelope("work.observed", WORK)
        env["data"]["title"] = draw(st.sampled_from(["a:b", "x", ":", None]))
    text = json.dumps(env, ensure_ascii=draw(st.booleans()))
    trick = draw(st.integers(0, 4))
    if trick == 1:  # a repeated key: msgspec keeps the last, the exact path refuses it
        text = text.replace('"source": ', '"source": "x", "source": ', 1)
    elif trick == 2:  # a colon spelled as an escape: the count would miss it
        text = text.replace("a:b", "a\\u003ab")
    elif trick == 3 and '"reference": {' in text:  # a repeated key inside the reference
        text = text.replace('"reference": {', '"reference": {"key": "1", "key": "2", ', 1)
    return text.encode()


@settings(max_examples=examples(300))
@given(_texts())
def test_the_quick_decoder_agrees_with_the_exact_path(raw: bytes) -> None:
    exact = assert_quick_agrees(raw)
    body = b'{"events":[' + raw + b"]}"
    fast = quick_body(body)
    if isinstance(exact, Exception):
        assert fast is None
    elif fast is not None:
        assert fast[0] == [exact]


def test_the_quick_decoder_takes_a_plain_reference() -> None:
    raw = json.dumps(envelope("citation.observed", {**CITATION, "reference": REFERENCE})).encode()
    assert quick_event(raw) is not None
    assert quick_event(raw) == exact_event(raw)
