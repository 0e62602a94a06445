"""Bearer tokens for writes: configured by the operator, stored and compared as sha256 hashes."""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import re
import stat
from pathlib import Path

from fastapi import Request

from api.errors import RateLimited, Unauthorized, WritesDisabled
from api.limits import RateLimiter, retry_after
from api.settings import Settings
from api.state import state_of

log = logging.getLogger("api")
_HEX = re.compile(r"[0-9a-f]{64}")
PERSON_LINE = "person"  # a token file line `person HEX NAME` binds NAME to the token of that hash


def hash_token(token: str) -> str:
    """sha256 hex of a token: what the token file holds."""
    return hashlib.sha256(token.encode()).hexdigest()


def read_token_file(path: str) -> list[str]:
    """sha256 hex digests, one per line (blank lines and # comments skipped; a line as `sha256sum`
    prints it, the digest then `  -`, is its digest); [] if no file."""
    return _token_file(path)[0]


def read_person_lines(path: str) -> list[tuple[str, str]]:
    """The person names the token file binds to tokens: each `person HEX NAME` line, as (HEX, NAME)."""
    return _token_file(path)[1]


def _person_line(line: str) -> tuple[str, str] | None:
    """(digest, name) of a `person HEX NAME` line (the name runs to the line's end, # and all), None
    when malformed. The word `person` is no hex digit, so no digest line reads as one."""
    parts = line.split(None, 2)
    if len(parts) != 3:
        return None
    digest = parts[1].lower().removeprefix("sha256:")
    return (digest, parts[2].strip()) if _HEX.fullmatch(digest) else None


def _token_file(path: str) -> tuple[list[str], list[tuple[str, str]]]:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        return [], []
    if os.stat(path).st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        # whoever can write this file can give themselves a token
        log.warning("%s is writable by other users: anyone who can edit it can authorise writes", path)
    hashes: list[str] = []
    persons: list[tuple[str, str]] = []
    for n, line in enumerate(text.splitlines(), start=1):
        if line.split(None, 1)[:1] == [PERSON_LINE]:
            bound = _person_line(line)
            if bound is None:
                log.warning("%s line %d is not `%s <sha256 hex> <name>`; ignored", path, n, PERSON_LINE)
            else:
                persons.append(bound)
            continue
        value = line.split("#", 1)[0].strip().lower().removeprefix("sha256:")
        if not value:
            continue
        if len(value.split()) == 2 and value.split()[1] in ("-", "*-"):
            value = value.split()[0]  # `echo -n TOKEN | sha256sum >> FILE` writes `HEX  -`
        if _HEX.fullmatch(value):
            hashes.append(value)
        else:
            # A plaintext token in the file would be a leak and a silent no-op; say so.
            log.warning("%s line %d is not a sha256 hex digest; ignored", path, n)
    return hashes, persons


def person_bindings(settings: Settings) -> list[tuple[str, str]]:
    """Every person name bound to a token: LEDGER_PERSON_NAMES's, then the token file's (read on each
    call, as the token hashes are)."""
    return list(settings.person_names) + read_person_lines(settings.token_file_path)


def token_hashes(settings: Settings) -> list[str]:
    """Every accepted token hash: from LEDGER_TOKENS and from the token file (read on each write,
    so an operator can add or revoke a token without a restart)."""
    return [hash_token(t) for t in settings.tokens] + read_token_file(settings.token_file_path)


def require_token(request: Request, settings: Settings, what: str) -> str:
    """Refuse the request (401) unless it carries one of the configured bearer tokens, writes enabled or
    not; the token's hash. `what` names what needs it, in the refusal."""
    hashes = token_hashes(settings)
    if not hashes:
        raise Unauthorized(
            f"{what} needs a bearer token, and none is configured (set LEDGER_TOKENS or write sha256 "
            f"hashes to {settings.token_file_path})"
        )
    return _bearer(request, hashes, what)


def _bearer(request: Request, hashes: list[str], what: str) -> str:
    """The hash of the request's bearer token if it is one of `hashes`, else 401."""
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise Unauthorized(f"{what} needs the header `Authorization: Bearer <token>`")
    given = hash_token(token)
    # Compare against every hash without stopping early, so timing says nothing about which.
    matched = False
    for stored in hashes:
        matched |= hmac.compare_digest(given, stored)
    if not matched:
        raise Unauthorized("the bearer token is not valid for this ledger", invalid_token=True)
    return given


def require_writer(request: Request, settings: Settings) -> str:
    """Refuse the request unless writes are enabled, it carries a configured bearer token and that
    token is within its rate; the token's hash (its identity for the rate limiter)."""
    if settings.read_only:
        raise WritesDisabled("this server runs read-only (--read-only): writes are refused")
    hashes = token_hashes(settings)
    if not hashes:
        raise WritesDisabled(
            "no write token is configured (set LEDGER_TOKENS or write sha256 hashes to "
            f"{settings.token_file_path}): writes are refused"
        )
    given = _bearer(request, hashes, "a write")
    limiter: RateLimiter | None = state_of(request.app).rate_limiter
    if limiter is not None:
        wait = limiter.wait(given)
        if wait > 0:
            raise RateLimited(
                f"this token is over its rate of {limiter.rate:g} events per second; retry in {wait:.2f} s",
                retry_after=retry_after(wait),
                details={"rate": limiter.rate, "burst": limiter.burst, "retry_after_s": round(wait, 3)},
            )
    return given
