"""`ledger serve`: load the samples into an empty ledger, print a record URL, run uvicorn."""

from __future__ import annotations

import asyncio
import errno
import functools
import json
import logging
import logging.config
import os
import re
import shutil
import socket
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from http import HTTPStatus
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

import h11
import uvicorn
import uvicorn.config
from starlette.types import ASGIApp
from uvicorn.config import Config
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

from api.errors import error_body
from api.ops import logs
from api.ops.serve_start import mark_server_start
from api.settings import ENV_DB, ENV_READ_ONLY, Settings
from ledger.model.jsonvalue import JsonObject
from service.ledger import Ledger, is_pg_url
from service.ops.projector import max_lag
from service.resolver.match import max_text

# prometheus-client's multiprocess directory; set here before any worker imports it (api/ops/metrics.py)
MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
SHUTDOWN_GRACE_S = 3
KEEP_ALIVE_S = 5
SAMPLES = Path(__file__).resolve().parent.parent / "ledger" / "samples"


@functools.cache
def _settings() -> Settings:
    return Settings.from_env()


def _idle_timeout() -> float:
    return _settings().idle_timeout


# A request line and headers above this are refused with 431 (h11's own bound, in our error shape).
MAX_HEAD_BYTES = 16 * 1024
# After a refusal, what the client still sends is read and dropped, so that closing does not reset the
# connection before the client has read the answer (a lingering close, as httpd and nginx do). Clients
# that send a whole body before reading (urllib) see the refusal only if all of it is taken: the rest
# gets LINGER_S, plus a second per LEDGER_BODY_MIN_RATE bytes that arrive, never more than a body
# itself may take (LEDGER_BODY_TIMEOUT).
LINGER_S = 2.0


def linger_allowed(received: int, body_timeout: float, body_min_rate: int) -> float:
    """Seconds a refused connection is read and dropped, once `received` bytes came after the answer."""
    return min(LINGER_S + received / body_min_rate, max(LINGER_S, body_timeout))


def raw_error(status: int, code: str, message: str) -> bytes:
    """A whole HTTP/1.1 error answer in the JSON error shape, closing the connection."""
    body = json.dumps(error_body(code, message)).encode()
    phrase = HTTPStatus(status).phrase
    head = (
        f"HTTP/1.1 {status} {phrase}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n\r\n"
    )
    return head.encode() + body


class _H11Connection(h11.Connection):
    """h11's server side, remembering why it refused a request (uvicorn keeps only that it did), and
    saying `connection: close` on an answer that starts before the request's body was read:
    GuardedH11Protocol closes such a connection after the answer, and a keep-alive client not told so
    sends its next request down it."""

    head_too_large = False
    # why a head h11 took was refused all the same (the answer's message)
    refusal: str | None = None

    def next_event(self) -> h11.Event | type[h11.NEED_DATA] | type[h11.PAUSED]:  # type: ignore[override]
        """The next event; whether a protocol error was an oversized head is kept for the answer."""
        waiting_for_head = self.their_state is h11.IDLE
        try:
            event = super().next_event()
        except h11.RemoteProtocolError as e:
            # h11 hints 431 for anything it buffered past its bound, a chunk-size line too
            self.head_too_large = waiting_for_head and e.error_status_hint == 431
            raise
        if type(event) is h11.Request:
            names = {name for name, _ in event.headers}
            if b"content-length" in names and b"transfer-encoding" in names:
                # RFC 9112 6.1: two framings a proxy and this server may read differently (request
                # smuggling); it may be refused, and the connection must not carry another request
                self.refusal = "the request has both Content-Length and Transfer-Encoding"
                raise h11.RemoteProtocolError(self.refusal, error_status_hint=400)
        return event

    def send(self, event: h11.Event) -> bytes | None:  # type: ignore[override]
        """The event's bytes; an early answer's head gets `connection: close` after its status line."""
        data = super().send(event)
        if (
            data
            and type(event) is h11.Response
            and self.their_state is h11.SEND_BODY
            and not any(name == b"connection" for name, _ in event.headers)
        ):
            # Only the bytes change: h11 marking the connection closed would make uvicorn close it at
            # once, resetting it under the client's body before the client has read the answer.
            data = data.replace(b"\r\n", b"\r\nconnection: close\r\n", 1)
        return data


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol, plus deadlines for each request head and for a client to read its answer,
    and JSON refusals of bad heads.

    uvicorn times out a connection only while it is silent: one that sends a header line now and then
    would be held for ever, and enough of them exhaust the server's descriptors. Here the whole request
    line and headers must arrive within LEDGER_IDLE_TIMEOUT of the connection (or of the last answer).
    The head's size is h11's own bound: only what it buffers before the head is complete counts, never
    the body bytes a client sends in the same packet as its head.
    """

    _head_timer: asyncio.TimerHandle | None = None
    _write_timer: asyncio.TimerHandle | None = None
    _head_begun = False
    _lingering = 0  # 1 + the bytes dropped since the answer, 0 when not lingering
    _linger_started = 0.0
    _raw: asyncio.Transport  # the transport itself; self.transport is it with close() through _close

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],  # uvicorn's own type: the lifespan's state, passed on
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        """uvicorn's protocol over an h11 connection that refuses heads above MAX_HEAD_BYTES."""
        super().__init__(config, server_state, app_state, _loop)
        self.conn = _H11Connection(h11.SERVER, max_incomplete_event_size=MAX_HEAD_BYTES)

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Start the head deadline; uvicorn's own closes go through `_close`."""
        super().connection_made(transport)
        self._raw = transport
        self.transport = _ClosedThrough(transport, self._close)  # type: ignore[assignment]
        self._start_head_timer()

    def _close(self) -> None:
        """Close, or linger if the answer is out while the client still sends its body: uvicorn closes
        at once after answering a client that asked for `Connection: close` (urllib always does), and a
        close with the body unread resets the connection before the client reads the answer."""
        if self._lingering:
            return  # the linger's own deadline closes
        answered = self.conn.our_state in _ANSWERED
        if answered and self.conn.their_state is h11.SEND_BODY and not self._raw.is_closing():
            self._linger()
        else:
            self._raw.close()

    def _start_head_timer(self) -> None:
        self._stop_head_timer()
        self._head_begun = False
        self._head_timer = self.loop.call_later(_idle_timeout(), self._head_timeout)

    def _stop_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _waiting_for_head(self) -> bool:
        return self.conn.their_state is h11.IDLE

    def data_received(self, data: bytes) -> None:
        """Feed h11 (which refuses an oversized head); stop the deadline once a head is complete."""
        if self._lingering:
            self._lingering += len(data)
            return
        if self._waiting_for_head():
            self._head_begun = True
        super().data_received(data)
        if not self._waiting_for_head():
            self._stop_head_timer()

    def on_response_complete(self) -> None:
        """The next request's head gets its own deadline (pipelined heads may already be complete)."""
        super().on_response_complete()
        if self._lingering:
            self._unset_keepalive_if_required()  # armed by uvicorn just now; the linger's deadline rules
            return
        if self.transport.is_closing() or not self._waiting_for_head():
            self._stop_head_timer()
            if not self.transport.is_closing() and self.conn.their_state is h11.SEND_BODY:
                # answered before its body was read (a refusal, a GET with a body): the connection
                # cannot carry another request, and a body trickled after the answer must not hold it
                self._linger()
        elif self._head_timer is None:
            self._start_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        """Drop the deadlines with the connection."""
        self._stop_head_timer()
        self._stop_write_timer()
        super().connection_lost(exc)

    def pause_writing(self) -> None:
        """The client is not reading its answer as fast as it comes: it has a deadline to make room."""
        super().pause_writing()
        if self._write_timer is None:
            self._write_timer = self.loop.call_later(_idle_timeout(), self._write_timeout)

    def resume_writing(self) -> None:
        """The client made room: no deadline until the buffer fills again."""
        super().resume_writing()
        self._stop_write_timer()

    def _stop_write_timer(self) -> None:
        if self._write_timer is not None:
            self._write_timer.cancel()
            self._write_timer = None

    def _write_timeout(self) -> None:
        self._write_timer = None
        # part of an answer is out: nothing more can be said on this connection, only dropped
        self.logger.info(
            "dropped a connection whose client read nothing for %g s (LEDGER_IDLE_TIMEOUT)", _idle_timeout()
        )
        self.transport.abort()

    def send_400_response(self, msg: str) -> None:
        """A refused head gets the JSON error shape, like every other refusal: 431 when h11 found it
        too large, else 400."""
        if isinstance(self.conn, _H11Connection) and self.conn.head_too_large:
            self._refuse(
                431,
                "request_header_fields_too_large",
                f"the request line and headers exceed {MAX_HEAD_BYTES} bytes",
            )
        else:
            why = self.conn.refusal if isinstance(self.conn, _H11Connection) else None
            self._refuse(400, "bad_request", why or "the request is not valid HTTP/1.1")

    def _head_timeout(self) -> None:
        self._head_timer = None
        if self.transport.is_closing() or not self._waiting_for_head():
            return
        if self._head_begun:
            self._refuse(
                408,
                "request_timeout",
                f"the request line and headers did not arrive within {_idle_timeout():g} s "
                "(LEDGER_IDLE_TIMEOUT)",
            )
        else:  # nothing asked: nothing to answer
            self.transport.close()

    def _refuse(self, status: int, code: str, message: str) -> None:
        self._stop_head_timer()
        self._unset_keepalive_if_required()
        self.logger.info("refused a connection's request head: %d %s", status, message)
        self.transport.write(raw_error(status, code, message))
        self._linger()

    def _linger(self) -> None:
        """End our side after what was written; read and drop the client's rest for a while, then close."""
        if self._lingering:
            return
        if self._raw.can_write_eof():
            # the keep-alive deadline would close first: the linger's own deadline decides
            self._unset_keepalive_if_required()
            self._raw.write_eof()  # the answer, then end of stream: the client reads it whole
            self._lingering = 1
            self._linger_started = self.loop.time()
            self.loop.call_later(LINGER_S, self._linger_deadline)
        else:
            self._raw.close()

    def _linger_deadline(self) -> None:
        """Close, unless what arrived since the answer earns the connection more time."""
        if self._raw.is_closing():
            return
        s = _settings()
        end = self._linger_started + linger_allowed(self._lingering - 1, s.body_timeout, s.body_min_rate)
        if self.loop.time() >= end:
            self._raw.close()
        else:
            self.loop.call_at(end, self._linger_deadline)

    def shutdown(self) -> None:
        """A server shutting down does not wait for a refused client's rest."""
        if self._lingering:
            self._raw.close()
        else:
            super().shutdown()


# our side's states once the answer is complete
_ANSWERED = (h11.DONE, h11.MUST_CLOSE, h11.CLOSED)


class _ClosedThrough:
    """A transport whose close() is the protocol's choice (close, or linger); the rest is the transport's."""

    def __init__(self, transport: asyncio.Transport, close: Callable[[], None]) -> None:
        self._transport = transport
        self.close = close

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


def sample_records(samples: Path = SAMPLES) -> list[tuple[bytes, str, str]]:
    """(bytes, arxiv_id, as_of) of every sample record."""
    out = []
    for path in sorted(samples.glob("*.json")):
        raw = path.read_bytes()
        record = json.loads(raw)
        out.append((raw, record["paper"]["arxiv_id"], record["as_of"]))
    return out


def load_samples(ledger: Ledger, samples: Path = SAMPLES) -> list[tuple[str, str]]:
    """Import the sample records into an empty ledger; (arxiv_id, as_of) of those loaded."""
    if ledger.head().seq != 0:
        return []
    loaded = []
    for raw, arxiv_id, as_of in sample_records(samples):
        ledger.import_bytes(raw)
        loaded.append((arxiv_id, as_of))
    return loaded


def shown_db(db: str) -> str:
    """`db` as safe to print: a postgresql:// URL's password (user:pw@ or ?password=) as ***."""
    if not is_pg_url(db):
        return db
    parts = urlsplit(db)
    if parts.password is not None:
        userinfo, _, hostport = parts.netloc.rpartition("@")
        parts = parts._replace(netloc=f"{userinfo.partition(':')[0]}:***@{hostport}")
    if parts.query:  # libpq also takes ?password=...
        params = parts.query.split("&")
        hidden = ["password=***" if p.lower().startswith("password=") else p for p in params]
        parts = parts._replace(query="&".join(hidden))
    return urlunsplit(parts)


def base_url(host: str, port: int) -> str:
    """http://host:port, with IPv6 hosts bracketed."""
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}"


def record_url(base: str, arxiv_id: str, as_of: str | None = None) -> str:
    """The record page URL, as of the given instant when there is one."""
    url = f"{base}/paper/{arxiv_id}/citation-record"
    return f"{url}?as_of={quote(as_of, safe=':')}" if as_of else url


def check_can_listen(host: str, port: int) -> None:
    """Exit with one line naming host and port unless a server can listen there now (every address the
    host resolves to, as uvicorn binds them), so nothing says `Serving` for a port another holds."""
    try:
        addresses = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
        for family, kind, proto, _, address in addresses:
            with socket.socket(family, kind, proto) as s:
                # as uvicorn's own socket: a port left in TIME_WAIT by a stopped server is free
                s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                s.bind(address)
    except OSError as e:
        why = (e.strerror or str(e)).lower()
        hint = " (another server holds it: choose another with --port)" if e.errno == errno.EADDRINUSE else ""
        raise SystemExit(f"error: cannot listen on {host} port {port}: {why}{hint}") from None


def first_page(ledger: Ledger, base: str, loaded: Sequence[tuple[str, str]] = ()) -> str:
    """The page to show: the sample as it was when this start `loaded` it into an empty ledger; else
    the ledger as it is now (no as_of), a sample's record if it holds one, the most observed paper's
    otherwise, or / when it holds none. A page dated as of the sample would hide all added since."""
    for arxiv_id, as_of in loaded:
        return record_url(base, arxiv_id, as_of)
    for _, arxiv_id, _ in sample_records():
        if ledger.records.paper_history(arxiv_id):
            return record_url(base, arxiv_id)
    papers = ledger.records.papers(1)
    return record_url(base, papers[0]) if papers else base + "/"


def _check_state_dir(db: str) -> None:
    """A PostgreSQL ledger keeps its signing key and token files in LEDGER_STATE_DIR: a directory that
    is not there would fail the first request that signs, so the server refuses to start instead."""
    state_dir = os.environ.get("LEDGER_STATE_DIR")
    if is_pg_url(db) and state_dir and not os.path.isdir(state_dir):
        raise ValueError(
            f"LEDGER_STATE_DIR={state_dir!r} is not a directory: a PostgreSQL ledger's signing key "
            "and token files live there"
        )


def run(
    *,
    db: str,
    host: str = "127.0.0.1",
    port: int = 8000,
    workers: int = 1,
    read_only: bool = False,
    samples: bool = True,
) -> None:
    """Serve the API and pages over `db` with uvicorn (an app factory, so workers > 1 work)."""
    try:
        settings = Settings.from_env()  # a bad LEDGER_* value fails here, once, not in every worker
        max_text()  # the resolver's own setting too
        max_lag()  # and the projector's
        _check_state_dir(db)
    except ValueError as e:
        raise SystemExit(f"error: {e}") from None
    check_can_listen(host, port)  # before the samples are written or `Serving` is said
    config = logs.log_config(settings.json_logs)
    if config is not None:
        logging.config.dictConfig(config)  # this process's own lines too, before uvicorn's
        logging.captureWarnings(True)
    ledger = Ledger(db)
    loaded = load_samples(ledger) if samples and not read_only else []  # read-only writes nothing
    if loaded:
        ledger.ops.project()  # what the samples imply, before any worker reads them
    for arxiv_id, as_of in loaded:
        _say(settings, f"Loaded the sample record of arXiv:{arxiv_id} (as of {as_of}) into {shown_db(db)}")
    url = first_page(ledger, base_url(host, port), loaded)
    ledger.close()
    # Workers are separate processes that build the app from the environment, so everything
    # the app needs travels there (tokens and the body limit are read from it already).
    os.environ[ENV_DB] = db if is_pg_url(db) else str(Path(db).resolve())
    if read_only:
        os.environ[ENV_READ_ONLY] = "1"
    mark_server_start(
        ledger.clock
    )  # the workers walk the whole chain once after this instant (api/ops/scrub.py)
    with metrics_dir(workers if settings.counting else 0):
        _say(settings, f"Serving {url}", url=url)
        run_guarded(
            "api.app:create_app",
            factory=True,
            host=host,
            port=port,
            workers=workers if workers > 1 else None,
            log_level="info",
            log_config=config if config is not None else uvicorn.config.LOGGING_CONFIG,
            # with JSON logs the app logs every request itself, with its id
            access_log=config is None,
        )


def run_guarded(
    app: ASGIApp | str,
    *,
    host: str,
    port: int,
    log_level: str,
    factory: bool = False,
    workers: int | None = None,
    log_config: JsonObject = uvicorn.config.LOGGING_CONFIG,
    access_log: bool = True,
) -> None:
    """uvicorn.run with the guards every server of this project needs against hostile clients."""
    uvicorn.run(
        app,
        host=host,
        port=port,
        log_level=log_level,
        factory=factory,
        workers=workers,
        log_config=log_config,
        access_log=access_log,
        # by name, so each worker process imports it: head deadline and size, lingering close
        http="api.server:GuardedH11Protocol",
        timeout_keep_alive=KEEP_ALIVE_S,
        # An SSE subscription never ends by itself: without a bound, shutdown waits for clients.
        timeout_graceful_shutdown=SHUTDOWN_GRACE_S,
    )


def _say(settings: Settings, line: str, **fields: str) -> None:
    """A line for the operator: printed, or a JSON log line with LEDGER_LOG_FORMAT=json."""
    if settings.json_logs:
        logs.serve_log.info(line, extra={"fields": fields})
    else:
        print(line, flush=True)


# the files prometheus-client's multiprocess mode writes (one per metric kind and process)
_METRIC_FILE = re.compile(r"(counter|gauge|histogram|summary)_.*\.db")


@contextmanager
def metrics_dir(workers: int) -> Iterator[None]:
    """The directory where every worker keeps its metrics (PROMETHEUS_MULTIPROC_DIR), for several workers
    or when the operator names one: emptied of an earlier run's files before any worker starts (their
    counts would be added to this run's); one made here is removed when the server stops."""
    given = os.environ.get(MULTIPROC_ENV)
    if workers <= 1 and not given:
        yield  # one process (or nothing counted): its own registry, in memory
        return
    made = None
    if given:
        directory = Path(given)
        directory.mkdir(parents=True, exist_ok=True)
        for path in directory.iterdir():
            if _METRIC_FILE.fullmatch(path.name):
                path.unlink(missing_ok=True)
    else:
        made = directory = Path(tempfile.mkdtemp(prefix="ledger-metrics-"))
        os.environ[MULTIPROC_ENV] = str(directory)
    try:
        yield
    finally:
        if made is not None:
            shutil.rmtree(made, ignore_errors=True)
            os.environ.pop(MULTIPROC_ENV, None)
