"""Whose names a person's resolution may carry (service/resolver/names.py): TR39 restriction levels and
skeletons by ICU, the resolver's own prefix, and names bound to tokens."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.model.errors import InvalidEvent
from service.resolver.names import Binding, NotTheirs, check_owner, check_script, skeleton
from service.resolver.person import choice

MINE, THEIRS = "a" * 64, "b" * 64
BOUND = [Binding(MINE, "Ada Lovelace"), Binding(THEIRS, "Emma Noether")]


@pytest.mark.parametrize(
    "name",
    [
        "Ada Lovelace",
        "O'Brien-Smith, J.",
        "Ἀριστοτέλης",  # Greek alone
        "Ада Лавлейс",  # Cyrillic alone
        "山田 たろう",  # Han with Hiragana: Japanese
        "李 Li",  # Latin with Han: highly restrictive allows it
    ],
)
def test_names_in_one_script_pass(name: str) -> None:
    check_script(name)


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("\u0410da", "one script"),  # a Cyrillic A before Latin letters
        ("Ada L\u03bfvelace", "one script"),  # a Greek omicron
        ("Ωmega x", "one script"),
        ("citation-ledger/v1", "citation-ledger/"),
        ("Citation-Ledger/v1", "citation-ledger/"),
        ("  citation-ledger/x", "citation-ledger/"),
    ],
)
def test_mixed_scripts_and_the_resolvers_prefix_are_refused_naming_by(name: str, why: str) -> None:
    with pytest.raises(InvalidEvent, match=f"^by: .*{why}") as refused:
        check_script(name)
    assert refused.value.where == "by"


def test_a_token_writes_its_own_names_and_only_those() -> None:
    check_owner("Ada Lovelace", MINE, BOUND)
    check_owner(" Ada  Lovelace ", MINE, BOUND)  # spacing aside, the same name
    with pytest.raises(NotTheirs, match="only the names bound to it: Ada Lovelace"):
        check_owner("Somebody Else", MINE, BOUND)


@pytest.mark.parametrize("name", ["Emma Noether", "emma noether", "Ernrna Noether", "EMMA  NOETHER"])
def test_another_tokens_name_or_its_look_alike_is_refused(name: str) -> None:
    with pytest.raises(NotTheirs, match="bound to another token"):
        check_owner(name, "c" * 64, BOUND)  # a token with no names of its own


def test_a_token_with_no_binding_writes_any_name_no_one_holds() -> None:
    check_owner("Grace Hopper", "c" * 64, BOUND)
    check_owner("Grace Hopper", "c" * 64, [])


@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=12), st.data())
def test_one_latin_letter_swapped_for_a_cyrillic_look_alike_is_always_refused(
    word: str, data: st.DataObject
) -> None:
    look_alikes = {"a": "\u0430", "c": "\u0441", "e": "\u0435", "o": "\u043e", "p": "\u0440", "x": "\u0445"}
    spots = [i for i, c in enumerate(word) if c in look_alikes]
    if not spots or len(word) < 2 or all(c in look_alikes for c in word):
        return
    i = data.draw(st.sampled_from(spots))
    forged = word[:i] + look_alikes[word[i]] + word[i + 1 :]
    assert skeleton(forged) == skeleton(word)  # it looks the same
    with pytest.raises(InvalidEvent, match="one script"):
        check_script(forged)


@given(st.text(max_size=120))
def test_any_text_is_a_name_or_refused_naming_by(text: str) -> None:
    """Whatever a client sends as `by` (controls, surrogates, marks, any script): a choice, or
    InvalidEvent naming `by`; never another error (ICU's included)."""
    try:
        asked = choice(text, clear=True)
    except InvalidEvent as e:
        assert e.where == "by"
        return
    assert asked.by == text.strip()
    # a name bound to another token is refused to this one, whatever its characters
    with pytest.raises(NotTheirs):
        check_owner(asked.by, "c" * 64, [*BOUND, Binding("d" * 64, asked.by)])
