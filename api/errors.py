"""HTTP errors: the API's own LedgerError subclasses and the handlers giving one JSON shape."""

from __future__ import annotations

import logging
from http import HTTPStatus
from typing import TypedDict

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from ledger.model.errors import LedgerError
from ledger.model.jsonvalue import JsonIn, JsonInObject

log = logging.getLogger("api")


# How the API answers each code of the ledger's errors: the core names what went wrong, the API says
# it in HTTP. A broken chain or checkpoint state is 503: unavailable until an operator looks, not a crash.
STATUS_OF_CODE = {
    "invalid": 422,
    "invalid_note": 422,
    "unstorable": 422,
    "conflict": 409,
    "too_many_watches": 409,
    "not_signed": 409,
    "not_found": 404,
    "not_supported": 501,
    "chain_broken": 503,
    "checkpoint_refused": 503,
}


class ApiError(LedgerError):
    """A refusal made by the HTTP layer itself (auth, size), with its status; may carry headers."""

    http_status = 500
    headers: dict[str, str] | None = None

    def __init_subclass__(cls, *, code: str | None = None, status: int | None = None) -> None:
        # `class X(ApiError, code=..., status=...)`: a refusal's code and status stand on its first line
        super().__init_subclass__()
        if code is not None:
            cls.code = code
        if status is not None:
            cls.http_status = status


def status_of(err: LedgerError) -> int:
    """The HTTP status that answers `err` (500 for a code the API does not know: a bug to look at)."""
    if isinstance(err, ApiError):
        return err.http_status
    return STATUS_OF_CODE.get(err.code, 500)


class ErrorDetail(TypedDict):
    code: str
    message: str
    details: JsonIn


class ErrorAnswer(TypedDict):
    """The one error shape (docs.py's ErrorBody documents it)."""

    error: ErrorDetail


def error_answer(err: LedgerError) -> ErrorAnswer:
    """The JSON body that answers `err`."""
    return error_body(err.code, err.message, err.details)


class Unauthorized(ApiError, code="unauthorized", status=401):
    """No bearer token, or one that matches no configured token."""

    def __init__(self, message: str, *, invalid_token: bool = False) -> None:
        super().__init__(message)
        # RFC 6750: say which scheme is expected, and flag a token that was given but refused.
        self.headers = {
            "WWW-Authenticate": 'Bearer realm="ledger", error="invalid_token"'
            if invalid_token
            else 'Bearer realm="ledger"'
        }


class WritesDisabled(ApiError, code="writes_disabled", status=403):
    """The server refuses every write (no token configured, or --read-only)."""


class PayloadTooLarge(ApiError, code="payload_too_large", status=413):
    """The request body is above the configured limit."""


class BatchTooLarge(ApiError, code="batch_too_large", status=413):
    """More events in one write than the configured batch limit."""


class RetryLater(ApiError):
    """A refusal that passes with time: it says when to come back (Retry-After, in seconds)."""

    def __init__(self, message: str, *, retry_after: str, details: JsonInObject | None = None) -> None:
        super().__init__(message, details=details)
        self.headers = {"Retry-After": retry_after}


class RateLimited(RetryLater, code="rate_limited", status=429):
    """The token has sent more events per second than the configured rate; retry after a while."""


class RequestTimeout(ApiError, code="request_timeout", status=408):
    """The client did not send its whole body in time (a slow or stalled client)."""

    def __init__(self, message: str, *, details: JsonInObject | None = None) -> None:
        super().__init__(message, details=details)
        # the rest of the body may still arrive: the connection cannot be reused
        self.headers = {"Connection": "close"}


def error_body(code: str, message: str, details: JsonIn = None) -> ErrorAnswer:
    """The one error shape: {"error": {code, message, details}}."""
    return {"error": {"code": code, "message": message, "details": details}}


def _status_code_name(status: int) -> str:
    try:
        return HTTPStatus(status).phrase.lower().replace(" ", "_").replace("-", "_")
    except ValueError:
        return f"http_{status}"


async def _ledger_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, LedgerError)
    return JSONResponse(error_answer(exc), status_code=status_of(exc), headers=getattr(exc, "headers", None))


_METHODS = ("GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS")


def allowed_methods(request: Request) -> str:
    """Every method some route takes at this path, for a 405's `Allow` (RFC 9110 section 15.5.6).
    Starlette names only the first route whose path matched, and a path often has one route a method;
    each method is tried on the whole router, so routes included from other routers count too."""
    routes = request.app.router.routes
    allowed = [
        m for m in _METHODS if any(r.matches({**request.scope, "method": m})[0] == Match.FULL for r in routes)
    ]
    return ", ".join(allowed)


async def http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    message = exc.detail if isinstance(exc.detail, str) else _status_code_name(exc.status_code)
    headers = dict(exc.headers or {})
    if exc.status_code == 405 and (allow := allowed_methods(request)):
        headers["Allow"] = allow
    return JSONResponse(
        error_body(_status_code_name(exc.status_code), message),
        status_code=exc.status_code,
        headers=headers,
    )


async def _validation_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = jsonable_encoder(exc.errors(), exclude={"url", "ctx"})
    first = errors[0] if errors else {}
    where = ".".join(str(p) for p in first.get("loc", ()))
    message = f"{where}: {first.get('msg', 'invalid request')}" if where else "invalid request"
    return JSONResponse(error_body("invalid", message, {"where": where, "errors": errors}), status_code=422)


class Moved(Exception):
    """A paper path spelled with an id as pasted: answered 308 to `location`, the canonical path."""

    def __init__(self, location: str) -> None:
        super().__init__(location)
        self.location = location


async def _moved(_: Request, exc: Exception) -> RedirectResponse:
    assert isinstance(exc, Moved)
    return RedirectResponse(exc.location, status_code=308)


async def _unexpected(_: Request, exc: Exception) -> JSONResponse:
    log.exception("unhandled error", exc_info=exc)
    return JSONResponse(
        error_body("internal_error", "the server failed to answer; see its log"), status_code=500
    )


def install_error_handlers(app: FastAPI) -> None:
    """Every error leaves as {"error": {...}}: ledger errors, routing 404/405, validation, crashes;
    a paper id as pasted leaves as a 308 to its canonical path."""
    app.add_exception_handler(Moved, _moved)
    app.add_exception_handler(LedgerError, _ledger_error)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(Exception, _unexpected)


class TooManySubscribers(RetryLater, code="too_many_subscribers", status=503):
    """This server process already serves its LEDGER_SSE_MAX_SUBSCRIBERS live subscriptions."""


class ChainUnhealthy(ApiError, code="chain_broken", status=503):
    """The last recorded full walk of the chain (scrub or verify) found it broken: /healthz says so."""
