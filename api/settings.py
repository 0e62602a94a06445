"""Server configuration, read from environment variables so every uvicorn worker sees the same."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

DEFAULT_MAX_BODY = 8 * 1024 * 1024

# The variables `ledger serve` exports before uvicorn starts its workers.
ENV_DB = "LEDGER_DB"
ENV_READ_ONLY = "LEDGER_READ_ONLY"
ENV_TOKENS = "LEDGER_TOKENS"
ENV_TOKENS_FILE = "LEDGER_TOKENS_FILE"
ENV_MAX_BODY = "LEDGER_MAX_BODY"
ENV_SSE_POLL = "LEDGER_SSE_POLL"
ENV_SSE_HEARTBEAT = "LEDGER_SSE_HEARTBEAT"

_TRUE = {"1", "true", "yes", "on"}


@dataclass(frozen=True)
class Settings:
    """What one app instance needs: the ledger file, write policy and limits."""

    db: str = "ledger.db"
    read_only: bool = False
    # Plain tokens given by the operator (env); they are hashed before any comparison.
    tokens: tuple[str, ...] = field(default=(), repr=False)
    # sha256 hex per line; defaults to "<db>.tokens" next to the database.
    tokens_file: str | None = None
    max_body: int = DEFAULT_MAX_BODY
    sse_poll: float = 0.2
    sse_heartbeat: float = 15.0

    @property
    def token_file_path(self) -> str:
        """The hashed-token file: explicit, else next to the database."""
        return self.tokens_file or f"{self.db}.tokens"

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Settings from LEDGER_* variables (the app factory calls this in each worker)."""
        env = os.environ if environ is None else environ
        tokens = tuple(t.strip() for t in env.get(ENV_TOKENS, "").split(",") if t.strip())
        return cls(
            db=env.get(ENV_DB) or "ledger.db",
            read_only=env.get(ENV_READ_ONLY, "").strip().lower() in _TRUE,
            tokens=tokens,
            tokens_file=env.get(ENV_TOKENS_FILE) or None,
            max_body=_positive_int(env.get(ENV_MAX_BODY), DEFAULT_MAX_BODY, ENV_MAX_BODY),
            sse_poll=_positive_float(env.get(ENV_SSE_POLL), 0.2, ENV_SSE_POLL),
            sse_heartbeat=_positive_float(env.get(ENV_SSE_HEARTBEAT), 15.0, ENV_SSE_HEARTBEAT),
        )


def _positive_int(text: str | None, default: int, name: str) -> int:
    if not text:
        return default
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{name} must be a positive integer (bytes), got {text!r}") from None
    if value <= 0:
        raise ValueError(f"{name} must be a positive integer (bytes), got {text!r}")
    return value


def _positive_float(text: str | None, default: float, name: str) -> float:
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"{name} must be a positive number of seconds, got {text!r}") from None
    if value <= 0:
        raise ValueError(f"{name} must be a positive number of seconds, got {text!r}")
    return value
