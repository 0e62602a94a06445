"""Server configuration, read from environment variables so every uvicorn worker sees the same."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TypeAlias
from urllib.parse import urlsplit

from ledger.model.jsonvalue import Json
from service.alerts.secrets import SECRET_GRACE_S
from service.collections import ENVIRONMENT as COLLECTION_ENVIRONMENT
from service.collections import CollectionLimits, limits_from_env
from service.intake.inflate import SERVED_MAX_BYTES, SERVED_MAX_RATIO, Inflation
from service.ledger import side_path
from service.sources import work_limits
from service.sources.work_limits import WorkLimits

DEFAULT_MAX_BODY = 8 * 1024 * 1024
# a source file is a whole Retraction Watch database (~60 MB) or a Crossref dump: spooled to disk
DEFAULT_MAX_INGEST_BODY = 512 * 1024 * 1024
DEFAULT_MAX_BATCH = 10_000
DEFAULT_MAX_STRING = 16 * 1024
DEFAULT_BODY_TIMEOUT = 30.0
DEFAULT_IDLE_TIMEOUT = 10.0
DEFAULT_BODY_MIN_RATE = 1024 * 1024
DEFAULT_SSE_MAX_SUBSCRIBERS = 100
DEFAULT_SSE_BUFFER = 1024 * 1024
DEFAULT_SCRUB_INTERVAL = 86_400.0
DEFAULT_WEBHOOK_BACKOFF = 10.0
DEFAULT_MAX_WATCHES = 1000
# lines one page of GET /screen or /screen/changes holds, at most (and by default)
DEFAULT_SCREEN_PAGE_MAX = 500
DEFAULT_WEBHOOK_TIMEOUT = 10.0
DEFAULT_WEBHOOK_SECRET_GRACE = SECRET_GRACE_S
# resolves at once across every server process: each may use the resolver's worker processes
DEFAULT_RESOLVE_AT_ONCE = 2
# references one token may have examined per minute (a minute's worth saved up); 0: no budget
DEFAULT_RESOLVE_PER_MINUTE = 20_000

# The variables `ledger serve` exports before uvicorn starts its workers.
ENV_DB = "LEDGER_DB"
ENV_READ_ONLY = "LEDGER_READ_ONLY"
ENV_TOKENS = "LEDGER_TOKENS"
ENV_TOKENS_FILE = "LEDGER_TOKENS_FILE"
ENV_MAX_BODY = "LEDGER_MAX_BODY"
ENV_MAX_INGEST_BODY = "LEDGER_MAX_INGEST_BODY"
ENV_MAX_DECOMPRESSED = "LEDGER_MAX_DECOMPRESSED"
ENV_MAX_EXPANSION = "LEDGER_MAX_EXPANSION"
ENV_SSE_POLL = "LEDGER_SSE_POLL"
ENV_SSE_HEARTBEAT = "LEDGER_SSE_HEARTBEAT"
ENV_MAX_BATCH = "LEDGER_MAX_BATCH"
ENV_MAX_STRING = "LEDGER_MAX_STRING"
ENV_RATE_LIMIT = "LEDGER_RATE_LIMIT"
ENV_RATE_BURST = "LEDGER_RATE_BURST"
ENV_BODY_TIMEOUT = "LEDGER_BODY_TIMEOUT"
ENV_IDLE_TIMEOUT = "LEDGER_IDLE_TIMEOUT"
ENV_CORS_ORIGINS = "LEDGER_CORS_ORIGINS"
ENV_BODY_MIN_RATE = "LEDGER_BODY_MIN_RATE"
ENV_SSE_MAX_SUBSCRIBERS = "LEDGER_SSE_MAX_SUBSCRIBERS"
ENV_SSE_BUFFER = "LEDGER_SSE_BUFFER"
ENV_SCRUB_INTERVAL = "LEDGER_SCRUB_INTERVAL"
ENV_WITNESSES = "LEDGER_WITNESSES"
ENV_CHECKPOINT_INTERVAL = "LEDGER_CHECKPOINT_INTERVAL"
ENV_WEBHOOK_BACKOFF = "LEDGER_WEBHOOK_BACKOFF"
ENV_WEBHOOK_ALLOW = "LEDGER_WEBHOOK_ALLOW"
ENV_MAX_WATCHES = "LEDGER_MAX_WATCHES"
ENV_SCREEN_PAGE_MAX = "LEDGER_SCREEN_PAGE_MAX"
ENV_WEBHOOK_TIMEOUT = "LEDGER_WEBHOOK_TIMEOUT"
ENV_WEBHOOK_SECRET_GRACE = "LEDGER_WEBHOOK_SECRET_GRACE"
ENV_METRICS = "LEDGER_METRICS"
ENV_LOG_FORMAT = "LEDGER_LOG_FORMAT"
ENV_PUBLIC_URL = "LEDGER_PUBLIC_URL"
ENV_RESOLVE_AT_ONCE = "LEDGER_RESOLVE_AT_ONCE"
ENV_RESOLVE_PER_MINUTE = "LEDGER_RESOLVE_PER_MINUTE"
ENV_PERSON_NAMES = "LEDGER_PERSON_NAMES"

# GET /metrics: open to anyone, only with a configured token, or not served at all
METRICS_MODES = ("on", "token", "off")
LOG_FORMATS = ("text", "json")

_TRUE = {"1", "true", "yes", "on"}
_HEX = re.compile(r"[0-9a-f]{64}")


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
    # Bytes of one source or works file (POST /ingest, /ingest/works), spooled to disk as it arrives.
    max_ingest_body: int = DEFAULT_MAX_INGEST_BODY
    # Bytes a gzip or zstd ingest body may decompress to, and times its compressed size (past 1 MiB).
    max_decompressed: int = SERVED_MAX_BYTES
    max_expansion: float = SERVED_MAX_RATIO
    sse_poll: float = 0.2
    sse_heartbeat: float = 15.0
    # Events in one write (POST /events, or a record's decomposition).
    max_batch: int = DEFAULT_MAX_BATCH
    # Characters in any one string (or key) of a write body.
    max_string: int = DEFAULT_MAX_STRING
    # Events per second per token, per server process; 0 = no limit.
    rate_limit: float = 0.0
    # Events a token may send at once before the rate applies; 0 = one second's worth.
    rate_burst: int = 0
    # Seconds a client has to send a whole write body (a slow client gets 408).
    body_timeout: float = DEFAULT_BODY_TIMEOUT
    # Seconds a connection has to send a whole request head (line and headers) before it is closed.
    idle_timeout: float = DEFAULT_IDLE_TIMEOUT
    # Bytes per second a long body must keep up on average past body_timeout (big ingest files).
    body_min_rate: int = DEFAULT_BODY_MIN_RATE
    # Live SSE subscriptions per server process; past it, 503 with Retry-After.
    sse_max_subscribers: int = DEFAULT_SSE_MAX_SUBSCRIBERS
    # Bytes queued for one SSE subscriber before it is dropped as too slow (it resumes by Last-Event-ID).
    sse_buffer: int = DEFAULT_SSE_BUFFER
    # Seconds between two background walks of the whole chain (scrubbing).
    scrub_interval: float = DEFAULT_SCRUB_INTERVAL
    # Origins allowed cross-origin (CORS); none = no CORS headers at all.
    cors_origins: tuple[str, ...] = ()
    # A file of `URL VKEY` lines: the witnesses each new checkpoint is sent to (none: no cosigning).
    witnesses_file: str | None = None
    # Seconds between two looks of the cosigner at the head (a checkpoint cosigned that long after an append).
    checkpoint_interval: float = 1.0
    # Seconds before a failed webhook is tried again the first time (doubling each time, up to an hour).
    webhook_backoff: float = DEFAULT_WEBHOOK_BACKOFF
    # Hosts or CIDRs webhooks may reach besides public addresses (http allowed for them too).
    webhook_allow: tuple[str, ...] = ()
    # Watches in force one token may hold (POST /watches past it: 409); the CLI's are not counted.
    max_watches: int = DEFAULT_MAX_WATCHES
    # Lines one page of GET /screen or /screen/changes holds, at most (a larger ?limit=: 422).
    screen_page_max: int = DEFAULT_SCREEN_PAGE_MAX
    # Seconds one webhook attempt may take in all (resolving, connecting, sending, the answer).
    webhook_timeout: float = DEFAULT_WEBHOOK_TIMEOUT
    # Seconds a rotated-out webhook secret still signs beside the new one (receivers switch meanwhile).
    webhook_secret_grace: float = DEFAULT_WEBHOOK_SECRET_GRACE
    # GET /metrics: "on" (open), "token" (a configured bearer token), "off" (not served, nothing counted)
    metrics: str = "on"
    # "text": uvicorn's own lines; "json": one JSON object per line, every request and append with its id
    log_format: str = "text"
    # Where clients reach this server (https://ledger.example.org, maybe with a path): the feed's ids and
    # links are built on it; without it they name no host at all (never the request's Host header).
    public_url: str | None = None
    # How large one work of a works file may be, field by field (LEDGER_WORK_MAX_*, read below the API).
    work_limits: WorkLimits = field(default_factory=WorkLimits)
    # What one collection change may hold (paper ids, a name's characters): service/collections.py.
    collection_limits: CollectionLimits = field(default_factory=CollectionLimits)
    # POST /resolve runs at once across every server process; past it, 429 with Retry-After.
    resolve_at_once: int = DEFAULT_RESOLVE_AT_ONCE
    # References one token's resolves may examine per minute; 0: no budget.
    resolve_per_minute: int = DEFAULT_RESOLVE_PER_MINUTE
    # Person names bound to tokens: (a token's sha256 hex, a name it may write) pairs, from a JSON
    # object in the environment; the tokens file's `person HEX NAME` lines add to them.
    person_names: tuple[tuple[str, str], ...] = ()

    @property
    def inflation(self) -> Inflation:
        """How far an ingest body may decompress, named by this server's settings."""
        return Inflation(self.max_decompressed, self.max_expansion, ENV_MAX_DECOMPRESSED, ENV_MAX_EXPANSION)

    @property
    def counting(self) -> bool:
        """Whether this app counts what it does for GET /metrics."""
        return self.metrics != "off"

    @property
    def json_logs(self) -> bool:
        """Whether every request and append is logged as a JSON line."""
        return self.log_format == "json"

    @property
    def token_file_path(self) -> str:
        """The hashed-token file: explicit, else backend.side_path(db, ".tokens")."""
        return self.tokens_file or str(side_path(self.db, ".tokens"))

    @property
    def burst(self) -> float:
        """The rate limiter's bucket size in events."""
        return float(self.rate_burst) if self.rate_burst else max(self.rate_limit, 1.0)

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Settings from LEDGER_* variables (the app factory calls this in each worker)."""
        env = os.environ if environ is None else environ
        tokens = tuple(t.strip() for t in env.get(ENV_TOKENS, "").split(",") if t.strip())
        origins = tuple(o.strip() for o in env.get(ENV_CORS_ORIGINS, "").split(",") if o.strip())
        return cls(
            db=env.get(ENV_DB) or "ledger.db",
            read_only=env.get(ENV_READ_ONLY, "").strip().lower() in _TRUE,
            tokens=tokens,
            tokens_file=env.get(ENV_TOKENS_FILE) or None,
            max_body=_positive_int(env.get(ENV_MAX_BODY), DEFAULT_MAX_BODY, ENV_MAX_BODY, "bytes"),
            max_ingest_body=_positive_int(
                env.get(ENV_MAX_INGEST_BODY), DEFAULT_MAX_INGEST_BODY, ENV_MAX_INGEST_BODY, "bytes"
            ),
            max_decompressed=_positive_int(
                env.get(ENV_MAX_DECOMPRESSED), SERVED_MAX_BYTES, ENV_MAX_DECOMPRESSED, "bytes"
            ),
            max_expansion=_positive_float(
                env.get(ENV_MAX_EXPANSION), SERVED_MAX_RATIO, ENV_MAX_EXPANSION, "a positive number (times)"
            ),
            sse_poll=_positive_float(env.get(ENV_SSE_POLL), 0.2, ENV_SSE_POLL),
            sse_heartbeat=_positive_float(env.get(ENV_SSE_HEARTBEAT), 15.0, ENV_SSE_HEARTBEAT),
            max_batch=_positive_int(env.get(ENV_MAX_BATCH), DEFAULT_MAX_BATCH, ENV_MAX_BATCH, "events"),
            max_string=_positive_int(
                env.get(ENV_MAX_STRING), DEFAULT_MAX_STRING, ENV_MAX_STRING, "characters"
            ),
            rate_limit=_rate(env.get(ENV_RATE_LIMIT)),
            rate_burst=_positive_int(env.get(ENV_RATE_BURST), 0, ENV_RATE_BURST, "events"),
            body_timeout=_positive_float(env.get(ENV_BODY_TIMEOUT), DEFAULT_BODY_TIMEOUT, ENV_BODY_TIMEOUT),
            idle_timeout=_positive_float(env.get(ENV_IDLE_TIMEOUT), DEFAULT_IDLE_TIMEOUT, ENV_IDLE_TIMEOUT),
            cors_origins=origins,
            body_min_rate=_positive_int(
                env.get(ENV_BODY_MIN_RATE), DEFAULT_BODY_MIN_RATE, ENV_BODY_MIN_RATE, "bytes per second"
            ),
            sse_max_subscribers=_positive_int(
                env.get(ENV_SSE_MAX_SUBSCRIBERS),
                DEFAULT_SSE_MAX_SUBSCRIBERS,
                ENV_SSE_MAX_SUBSCRIBERS,
                "subscriptions",
            ),
            sse_buffer=_positive_int(env.get(ENV_SSE_BUFFER), DEFAULT_SSE_BUFFER, ENV_SSE_BUFFER, "bytes"),
            scrub_interval=_positive_float(
                env.get(ENV_SCRUB_INTERVAL), DEFAULT_SCRUB_INTERVAL, ENV_SCRUB_INTERVAL
            ),
            witnesses_file=env.get(ENV_WITNESSES) or None,
            checkpoint_interval=_positive_float(
                env.get(ENV_CHECKPOINT_INTERVAL), 1.0, ENV_CHECKPOINT_INTERVAL
            ),
            webhook_backoff=_positive_float(
                env.get(ENV_WEBHOOK_BACKOFF), DEFAULT_WEBHOOK_BACKOFF, ENV_WEBHOOK_BACKOFF
            ),
            webhook_allow=tuple(a for a in env.get(ENV_WEBHOOK_ALLOW, "").replace(",", " ").split() if a),
            max_watches=_positive_int(
                env.get(ENV_MAX_WATCHES), DEFAULT_MAX_WATCHES, ENV_MAX_WATCHES, "watches"
            ),
            screen_page_max=_positive_int(
                env.get(ENV_SCREEN_PAGE_MAX), DEFAULT_SCREEN_PAGE_MAX, ENV_SCREEN_PAGE_MAX, "lines"
            ),
            webhook_timeout=_positive_float(
                env.get(ENV_WEBHOOK_TIMEOUT), DEFAULT_WEBHOOK_TIMEOUT, ENV_WEBHOOK_TIMEOUT
            ),
            webhook_secret_grace=_positive_float(
                env.get(ENV_WEBHOOK_SECRET_GRACE), DEFAULT_WEBHOOK_SECRET_GRACE, ENV_WEBHOOK_SECRET_GRACE
            ),
            metrics=_choice(env.get(ENV_METRICS), METRICS_MODES, ENV_METRICS),
            log_format=_choice(env.get(ENV_LOG_FORMAT), LOG_FORMATS, ENV_LOG_FORMAT),
            public_url=public_url(env.get(ENV_PUBLIC_URL)),
            work_limits=work_limits.from_env(env),
            collection_limits=limits_from_env(env),
            resolve_at_once=_positive_int(
                env.get(ENV_RESOLVE_AT_ONCE), DEFAULT_RESOLVE_AT_ONCE, ENV_RESOLVE_AT_ONCE, "resolves"
            ),
            resolve_per_minute=_per_minute(env.get(ENV_RESOLVE_PER_MINUTE)),
            person_names=person_names(env.get(ENV_PERSON_NAMES)),
        )


# Every LEDGER_* variable of Settings: (variable, field, meaning). `ledger serve --help` lists them
# with each field's default from Settings itself; a test checks every ENV_* name above is here.
ENVIRONMENT: tuple[tuple[str, str, str], ...] = (
    (ENV_DB, "db", "the ledger: a SQLite file or a postgresql:// URL (--db)"),
    (ENV_READ_ONLY, "read_only", "1/true/yes/on: refuse every write (--read-only)"),
    (ENV_TOKENS, "tokens", "bearer tokens that may write, comma-separated"),
    (ENV_TOKENS_FILE, "tokens_file", "a file of sha256 hex token hashes, one a line; unset: <db>.tokens"),
    (ENV_MAX_BODY, "max_body", "bytes in one request body"),
    (ENV_MAX_INGEST_BODY, "max_ingest_body", "bytes in one source or works file sent to /ingest"),
    (ENV_MAX_DECOMPRESSED, "max_decompressed", "bytes a gzip or zstd ingest body may decompress to"),
    (ENV_MAX_EXPANSION, "max_expansion", "times its size a gzip or zstd ingest body may decompress to"),
    (ENV_MAX_BATCH, "max_batch", "events in one write"),
    (ENV_MAX_STRING, "max_string", "characters in any one string of a write body"),
    (ENV_RATE_LIMIT, "rate_limit", "events per second per token and server process; 0: no limit"),
    (ENV_RATE_BURST, "rate_burst", "events a token may send at once; 0: one second's worth"),
    (ENV_BODY_TIMEOUT, "body_timeout", "seconds a client has to send a whole write body"),
    (ENV_BODY_MIN_RATE, "body_min_rate", "bytes per second a long body must keep up past that"),
    (ENV_IDLE_TIMEOUT, "idle_timeout", "seconds a connection has to send a whole request head"),
    (ENV_SSE_POLL, "sse_poll", "seconds between two looks of the event stream at the head"),
    (ENV_SSE_HEARTBEAT, "sse_heartbeat", "seconds between heartbeats of an idle event stream"),
    (ENV_SSE_MAX_SUBSCRIBERS, "sse_max_subscribers", "live event-stream subscriptions per process"),
    (ENV_SSE_BUFFER, "sse_buffer", "bytes queued for one slow subscriber before it is dropped"),
    (ENV_SCRUB_INTERVAL, "scrub_interval", "seconds between two background walks of the whole chain"),
    (ENV_CORS_ORIGINS, "cors_origins", "origins allowed cross-origin, comma-separated"),
    (ENV_WITNESSES, "witnesses_file", "a file of `URL VKEY` lines: witnesses that cosign checkpoints"),
    (ENV_CHECKPOINT_INTERVAL, "checkpoint_interval", "seconds between two looks of the cosigner"),
    (ENV_WEBHOOK_BACKOFF, "webhook_backoff", "seconds before a failed webhook is tried again (doubling)"),
    (ENV_WEBHOOK_ALLOW, "webhook_allow", "hosts or CIDRs webhooks may reach besides public addresses"),
    (ENV_WEBHOOK_TIMEOUT, "webhook_timeout", "seconds one webhook attempt may take in all"),
    (ENV_WEBHOOK_SECRET_GRACE, "webhook_secret_grace", "seconds a rotated-out webhook secret still signs"),
    (ENV_MAX_WATCHES, "max_watches", "watches in force one token may hold"),
    (ENV_SCREEN_PAGE_MAX, "screen_page_max", "lines one page of GET /screen or /screen/changes may hold"),
    (ENV_METRICS, "metrics", f"GET /metrics: {', '.join(METRICS_MODES)}"),
    (ENV_LOG_FORMAT, "log_format", f"server log lines: {', '.join(LOG_FORMATS)}"),
    (ENV_PUBLIC_URL, "public_url", "where clients reach this server (https://...): the feed's links"),
    # read by service/sources/work_limits.py, so `ledger ingest works` reads the same
    *((name, f"work_limits.{attr}", meaning) for name, attr, meaning in work_limits.ENVIRONMENT),
    # read by service/collections.py, so `ledger collection add` reads the same
    *((name, f"collection_limits.{attr}", meaning) for name, attr, meaning in COLLECTION_ENVIRONMENT),
    (ENV_RESOLVE_AT_ONCE, "resolve_at_once", "resolves running at once across every server process"),
    (ENV_RESOLVE_PER_MINUTE, "resolve_per_minute", "references one token may resolve a minute; 0: no budget"),
    (ENV_PERSON_NAMES, "person_names", 'person names bound to tokens: {"<token sha256>": ["Name", ...]}'),
)


# What else `ledger serve` reads from the environment, below the API: (variable, meaning, default).
OTHER_ENVIRONMENT: tuple[tuple[str, str, str], ...] = (
    ("LEDGER_KEY_FILE", "the checkpoint signing key's file", "<db>.key"),
    ("LEDGER_ORIGIN", "the log's name in its checkpoints (for a new key)", "citation-ledger/<hostname>"),
    ("LEDGER_STATE_DIR", "where a PostgreSQL ledger's key and token files live", "."),
)


# a setting's value, as `environment_help` shows its default
SettingValue: TypeAlias = str | int | float | tuple[str, ...] | tuple[tuple[str, str], ...] | None


def _shown(value: SettingValue) -> str:
    if value in (None, ()):
        return "unset"
    if isinstance(value, bool):
        return "on" if value else "off"
    return f"{value:g}" if isinstance(value, float) else str(value)


def _attr(settings: Settings, dotted: str) -> SettingValue:
    """A setting by its name in Settings, or the holder's and its own (`work_limits.max_lines`)."""
    holder, _, name = dotted.rpartition(".")
    value: SettingValue = getattr(getattr(settings, holder) if holder else settings, name)
    return value


def environment_help() -> str:
    """The LEDGER_* variables `ledger serve` reads, one a line: name, meaning, default (Settings')."""
    defaults = Settings()
    rows = [(name, meaning, _shown(_attr(defaults, attr))) for name, attr, meaning in ENVIRONMENT]
    return "\n".join(
        f"{name}: {meaning} (default {default})" for name, meaning, default in rows + list(OTHER_ENVIRONMENT)
    )


def person_names(text: str | None) -> tuple[tuple[str, str], ...]:
    """LEDGER_PERSON_NAMES checked: a JSON object from a token's sha256 hex (`sha256:` before it is
    fine) to a name or a list of names; the (hex, name) pairs, or ValueError naming the variable."""
    if not text or not text.strip():
        return ()
    how = '{"<sha256 hex of a token>": ["A Name", ...], ...}'
    try:
        value = json.loads(text)
    except ValueError:
        raise ValueError(f"{ENV_PERSON_NAMES} must be a JSON object {how}: it is not JSON") from None
    if not isinstance(value, dict):
        raise ValueError(f"{ENV_PERSON_NAMES} must be a JSON object {how}")
    out: list[tuple[str, str]] = []
    for key, names in value.items():
        digest = key.strip().lower().removeprefix("sha256:")
        if not _HEX.fullmatch(digest):
            # a key is a digest, never a token: what was given is not echoed, it may be a token
            raise ValueError(f"{ENV_PERSON_NAMES}: each key must be a token's sha256 (64 hex digits)")
        listed = [names] if isinstance(names, str) else names
        if not isinstance(listed, list) or not listed or not all(map(_name, listed)):
            raise ValueError(f"{ENV_PERSON_NAMES}: {digest[:12]}...'s names must be a name or a list of them")
        out.extend((digest, n.strip()) for n in listed)
    return tuple(out)


def _name(value: Json) -> bool:
    return isinstance(value, str) and bool(value.strip())


def public_url(text: str | None) -> str | None:
    """LEDGER_PUBLIC_URL checked (an absolute http(s) URL, no query or fragment), without a trailing
    slash; None when unset."""
    if not text or not text.strip():
        return None
    value = text.strip()
    why = _url_problem(value)
    if why is not None:
        # a value with a user name may hold a password: it is not echoed
        shown = "" if "@" in value else f", got {text!r}"
        raise ValueError(
            f"{ENV_PUBLIC_URL} must be an absolute http(s) URL without a query or fragment "
            f"(e.g. https://ledger.example.org): {why}{shown}"
        )
    return value.rstrip("/")


def _url_problem(value: str) -> str | None:
    if not value.isascii() or not value.isprintable() or " " in value:
        return "it holds spaces, control or non-ASCII characters (percent-encode them)"
    try:
        parts = urlsplit(value)
        parts.port  # noqa: B018 (a bad port raises ValueError here)
    except ValueError as e:
        return str(e)
    if parts.scheme not in ("http", "https"):
        return "the scheme is not http or https"
    if not parts.hostname:
        return "there is no host"
    if "@" in parts.netloc:
        return "it holds a user name (a public link must not carry credentials)"
    if parts.query or "?" in value:
        return "it has a query"
    if parts.fragment or "#" in value:
        return "it has a fragment"
    return None


def _choice(text: str | None, choices: tuple[str, ...], name: str) -> str:
    """One of `choices` (any case, spaces ignored); the first when unset."""
    value = (text or "").strip().lower()
    if not value:
        return choices[0]
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}, got {text!r}")
    return value


def _positive_int(text: str | None, default: int, name: str, unit: str) -> int:
    value = _number(text, name, f"a positive integer ({unit})", int)
    return default if value is None else int(value)


def _positive_float(
    text: str | None, default: float, name: str, what: str = "a positive number of seconds"
) -> float:
    value = _number(text, name, what)
    return default if value is None else value


def _per_minute(text: str | None) -> int:
    if text and text.strip() == "0":
        return 0  # explicitly off
    return _positive_int(text, DEFAULT_RESOLVE_PER_MINUTE, ENV_RESOLVE_PER_MINUTE, "references per minute")


def _rate(text: str | None) -> float:
    if text and text.strip() == "0":
        return 0.0  # explicitly off
    value = _number(text, ENV_RATE_LIMIT, "a positive number of events per second")
    return 0.0 if value is None else value


def _number(text: str | None, name: str, what: str, kind: Callable[[str], float] = float) -> float | None:
    """A positive, finite number (`kind` parses it) from the environment; None when unset."""
    if not text:
        return None
    try:
        value = kind(text)
    except ValueError:
        raise ValueError(f"{name} must be {what}, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise ValueError(f"{name} must be {what}, got {text!r}")
    return value
