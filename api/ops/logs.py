"""LEDGER_LOG_FORMAT=json: every log record as one JSON object per line (uvicorn's, the app's), and the
line of each request and each append, carrying the request's id (also answered as X-Request-Id).

What a line may hold is chosen here, field by field: never a header's value (a bearer token), never a
body; a client's own text only as its path (bounded) and a request id of a safe shape.
"""

from __future__ import annotations

import json
import logging
import os
import re
from contextvars import ContextVar
from datetime import UTC, datetime

from ledger.model.jsonvalue import JsonObject

REQUEST_ID_HEADER = "X-Request-Id"
# the id of the request being served (set by the telemetry middleware; None outside a request)
REQUEST_ID: ContextVar[str | None] = ContextVar("ledger_request_id", default=None)
# a client's own request id is kept when it has this shape (a proxy's UUID, a trace id), else replaced
_CLIENT_ID = re.compile(r"[A-Za-z0-9._:-]{1,128}")
MAX_PATH = 512  # characters of a request's path kept in its line

requests_log = logging.getLogger("ledger.http")
appends_log = logging.getLogger("ledger.append")
serve_log = logging.getLogger("ledger.serve")


def request_id(header: bytes | None) -> str:
    """The client's X-Request-Id when it is a safe token, else a new random id."""
    if header is not None:
        text = header.decode("latin-1")
        if _CLIENT_ID.fullmatch(text):
            return text
    return os.urandom(8).hex()


class JsonFormatter(logging.Formatter):
    """One JSON object per record: time, level, logger, message, pid, the record's `fields`, exception."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as one line of JSON (newlines in any value are escaped)."""
        out: JsonObject = {
            "time": datetime.fromtimestamp(record.created, UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
            "pid": record.process,
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            out.update(fields)
        rid = REQUEST_ID.get()
        if rid is not None and "request_id" not in out:  # a line logged while serving a request
            out["request_id"] = rid
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        return json.dumps(out, default=str, separators=(",", ":"))


def log_config(json_format: bool) -> JsonObject | None:
    """uvicorn's log_config: every logger (its own, the app's, the root) JSON on stderr; None keeps
    uvicorn's own text configuration."""
    if not json_format:
        return None
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "formatters": {"json": {"()": "api.ops.logs.JsonFormatter"}},
        "handlers": {
            "stderr": {"class": "logging.StreamHandler", "formatter": "json", "stream": "ext://sys.stderr"}
        },
        "loggers": {
            "uvicorn": {"handlers": ["stderr"], "level": "INFO", "propagate": False},
            "uvicorn.error": {"level": "INFO"},
            # the app logs each request itself, with its id: uvicorn's access line would repeat it in text
            "uvicorn.access": {"handlers": [], "level": "WARNING", "propagate": False},
            "py.warnings": {"handlers": ["stderr"], "level": "WARNING", "propagate": False},
        },
        "root": {"handlers": ["stderr"], "level": "INFO"},
    }


def log_request(method: str, path: str, route: str, status: int, seconds: float, client: str | None) -> None:
    """The line of one request answered."""
    shown = path if len(path) <= MAX_PATH else path[:MAX_PATH] + "..."
    requests_log.info(
        "%s %s %d",
        method[:16],
        route,
        status,
        extra={
            "fields": {
                "method": method[:16],
                "path": shown,
                "route": route,
                "status": status,
                "seconds": round(seconds, 6),
                "client": client,
                "request_id": REQUEST_ID.get(),
            }
        },
    )


def log_append(
    route: str,
    events: int,
    appended: int,
    duplicates: int,
    head_seq: int,
    seconds: float,
    source: str | None = None,
) -> None:
    """The line of one committed append."""
    fields: JsonObject = {
        "route": route,
        "events": events,
        "appended": appended,
        "duplicates": duplicates,
        "head_seq": head_seq,
        "seconds": round(seconds, 6),
        "request_id": REQUEST_ID.get(),
    }
    if source is not None:
        fields["source"] = source
    appends_log.info("append of %d events via %s: %d new", events, route, appended, extra={"fields": fields})
