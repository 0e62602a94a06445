"""Which `resolver_source`s claim the ledger's own resolver or a person (ledger/model/claims.py), and the
refusal that names the place of the first such resolution in a batch or a record."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.model.claims import KEEP_FLAG, claimed, refuse_claims
from ledger.model.errors import InvalidEvent
from ledger.model.events import Event
from tests.factories import citation, oid_of, paper, resolution, ts

RESOLVER, PERSON = "the ledger's own resolver", "a person"


@pytest.mark.parametrize(
    ("source", "whom"),
    [
        ("citation-ledger/title-author-year/1", RESOLVER),
        ("citation-ledger/", RESOLVER),
        ("CITATION-LEDGER/x", RESOLVER),
        (" citation-ledger/x", RESOLVER),
        ("citation\u00adledger/x", None),  # a soft hyphen is not the hyphen: another name
        ("citation-\u200bledger/x", RESOLVER),  # a zero-width space inside the prefix
        ("ｃｉｔａｔｉｏｎ－ｌｅｄｇｅｒ／x", RESOLVER),  # full-width forms
        ("person:Ada Lovelace", PERSON),
        ("Person:Ada", PERSON),
        ("\u202eperson:Ada", PERSON),  # a direction override before it
        ("person\ufeff:Ada", PERSON),
        ("local_arxiv", None),
        ("raw_fallback", None),
        ("citation-ledger", None),
        ("personal:notes", None),
        ("no resolver link", None),
        (None, None),
    ],
)
def test_what_claims_the_resolver_or_a_person(source: str | None, whom: str | None) -> None:
    assert claimed(source) == whom


@given(name=st.text(max_size=40))
def test_anything_after_either_prefix_claims_it(name: str) -> None:
    assert claimed("citation-ledger/" + name) == RESOLVER
    assert claimed("person:" + name) == PERSON


@given(source=st.text(alphabet=st.characters(exclude_characters="/:"), max_size=40))
def test_a_source_without_a_slash_or_a_colon_claims_nothing(source: str) -> None:
    assert claimed(source) is None


def test_the_first_claiming_resolution_of_a_batch_is_named_with_the_flag() -> None:
    oid = oid_of(1)
    events: list[Event] = [
        paper("2101.00001", ts(0)),
        citation(oid, "2101.00001", ts(1)),
        resolution(oid, ts(2), resolver="local_arxiv"),
        resolution(oid, ts(3), resolver="person:Mallory"),
    ]
    with pytest.raises(
        InvalidEvent, match=r"^events\[3\]\.data\.resolver_source: 'person:Mallory' claims a person"
    ) as e:
        refuse_claims(events)
    assert (
        e.value.details is not None and e.value.details["flag"] == KEEP_FLAG and KEEP_FLAG in e.value.message
    )
    places = ["paper", "outbound[0].citation", "outbound[0].resolution", "outbound[1].resolution"]
    with pytest.raises(InvalidEvent, match=r"^outbound\[1\]\.resolution\.resolver_source: "):
        refuse_claims(events, places, record=True)
    refuse_claims(events[:3])  # nothing claimed: no refusal


def _seen(source: str) -> str:
    """The source folded the slow way, with no shortcut: NFKC, casefold, the unseen characters out."""
    text = unicodedata.normalize("NFKC", source).casefold()
    return "".join(c for c in text if not (c.isspace() or unicodedata.category(c)[0] in "CZ"))


@given(
    source=st.one_of(
        st.text(max_size=30),
        st.text(alphabet="cCpP \t\x00\x7f-/:itaonledgrs\u200b\uff50", max_size=20),
        st.sampled_from(["citation-ledger/", "person:"]).map(lambda p: p.upper()),
    )
)
def test_the_ascii_shortcut_agrees_with_folding_every_character(source: str) -> None:
    folded = _seen(source)
    expected = (
        RESOLVER
        if folded.startswith("citation-ledger/")
        else PERSON
        if folded.startswith("person:")
        else None
    )
    assert claimed(source) == expected
