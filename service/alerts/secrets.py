"""A watch's webhook secret: a Standard Webhooks `whsec_` secret (made here) or any other string.

Kept apart from the deliverer (service/alerts/webhooks.py) so that registering a watch, and every
command that only reads or appends, loads neither its HTTP machinery nor asyncio.
"""

from __future__ import annotations

import base64
import binascii
import secrets

SECRET_PREFIX = "whsec_"
SECRET_BYTES = 24
# how long a secret a rotation replaced still signs beside the new one: a day for receivers to switch
SECRET_GRACE_S = 86_400.0


def new_secret() -> str:
    """A fresh Standard Webhooks secret: `whsec_` and the base64 of 24 random bytes."""
    return SECRET_PREFIX + base64.b64encode(secrets.token_bytes(SECRET_BYTES)).decode()


def whsec_key(secret: str) -> bytes | None:
    """The key a `whsec_` secret stands for (its base64 decoded), None if it is not one."""
    if not secret.startswith(SECRET_PREFIX):
        return None
    rest = secret[len(SECRET_PREFIX) :]
    try:
        key = base64.b64decode(rest + "=" * (-len(rest) % 4), validate=True)
    except (binascii.Error, ValueError):
        return None
    return key or None


def secret_key(secret: str) -> bytes:
    """The HMAC key of a watch's secret: a `whsec_` secret's decoded bytes, any other string's UTF-8."""
    return whsec_key(secret) or secret.encode()
