"""A watch's webhook secret (service/alerts/secrets.py): what a whsec_ secret and any other string key."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st
from standardwebhooks import Webhook

from service.alerts import secrets


def test_a_new_secret_is_whsec_and_24_random_bytes() -> None:
    made = {secrets.new_secret() for _ in range(3)}
    assert len(made) == 3
    for secret in made:
        assert secret.startswith("whsec_")
        assert len(base64.b64decode(secret.removeprefix("whsec_"))) == secrets.SECRET_BYTES == 24
        assert secrets.whsec_key(secret) == base64.b64decode(secret.removeprefix("whsec_"))


@pytest.mark.parametrize(
    ("secret", "key"),
    [
        pytest.param("whsec_", None, id="empty-key"),
        pytest.param("whsec_not base64!", None, id="not-base64"),
        pytest.param("whsec_AAEC", b"\x00\x01\x02", id="padded"),
        pytest.param("whsec_AAE", b"\x00\x01", id="unpadded"),
        pytest.param("plain", None, id="not-whsec"),
    ],
)
def test_whsec_key_is_the_base64_after_the_prefix_or_none(secret: str, key: bytes | None) -> None:
    assert secrets.whsec_key(secret) == key


@given(st.text(min_size=1, max_size=64))
def test_a_secret_is_its_whsec_key_or_else_its_utf8_bytes(secret: str) -> None:
    key = secrets.secret_key(secret)
    if secret.startswith("whsec_") and secrets.whsec_key(secret) is not None:
        assert Webhook(secret)._whsecret == key  # what the library makes of the same string
    else:
        assert key == secret.encode()
