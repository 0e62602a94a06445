"""ledger/model/codec.py: a derived id's 16 bytes and their text are uuid5's, as derived_id gives them."""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.model.codec import canonical, derived_key, type_of, uuid_text
from tests.ledger.model.test_codec import DATA, decode, envelope, stdlib_event_id


@pytest.mark.parametrize("type_", sorted(DATA))
def test_derived_key_is_the_bytes_of_uuid5(type_: str) -> None:
    env = envelope(type_)
    event = decode(env)
    key = derived_key(canonical(event.data), event.observed_at, type_of(event))
    assert key == uuid.UUID(stdlib_event_id(env)).bytes
    assert uuid_text(key) == stdlib_event_id(env)


@given(st.binary(min_size=16, max_size=16))
def test_uuid_text_is_the_lowercase_text_of_the_bytes(key: bytes) -> None:
    assert uuid_text(key) == str(uuid.UUID(bytes=key))
