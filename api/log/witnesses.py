"""The server's cosigner (service/ops/witnessing.py) as background work of the app, over HTTP to the
witnesses named by LEDGER_WITNESSES; off the append path: appends never wait for a witness."""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path

import httpx

from api.ops import metrics
from api.ops.background import start_thread
from api.settings import Settings
from service.ledger import Ledger
from service.ops.witnessing import Cosigner, read_witnesses, run_cosigner

TIMEOUT_S = 10.0  # a witness slower than this misses the round; it is asked again at the next one
MAX_ANSWER = 64 * 1024  # a cosignature line is about 150 bytes


def cosigner_for(ledger: Ledger, settings: Settings) -> tuple[Cosigner | None, WitnessClients | None]:
    """An app's cosigner and the clients it posts with, when LEDGER_WITNESSES is set; else None."""
    if settings.witnesses_file is None:
        return None, None
    witnesses = read_witnesses(Path(settings.witnesses_file))
    clients = WitnessClients()
    answered = metrics.witness_answered if settings.counting else None
    return ledger.log.cosigner(witnesses, clients.post, answered), clients


async def start(
    settings: Settings, cosigner: Cosigner | None, clients: WitnessClients | None
) -> Callable[[], Awaitable[None]]:
    """Start this process's cosigner thread (a writable server with witnesses); returns its stop()."""
    if cosigner is None or clients is None or settings.read_only:

        async def nothing() -> None:
            return None

        return nothing
    interval = settings.checkpoint_interval
    return start_thread("ledger-cosign", partial(run_cosigner, cosigner, interval), then=clients.close)


class WitnessClients:
    """One HTTP client per witness URL, kept open: a checkpoint costs each witness one round trip on a
    connection it already has, not a new TCP (and TLS) handshake."""

    def __init__(self) -> None:
        self._clients: dict[str, httpx.Client] = {}
        self._lock = threading.Lock()

    def post(self, url: str, body: bytes) -> tuple[int, bytes]:
        """One add-checkpoint request: no redirect followed, a timeout, the answer read up to MAX_ANSWER."""
        headers = {"Content-Type": "text/plain"}
        with self.client(url).stream("POST", url, content=body, headers=headers) as answer:
            data = bytearray()
            for chunk in answer.iter_bytes():
                data += chunk
                if len(data) > MAX_ANSWER:
                    break
            return answer.status_code, bytes(data[:MAX_ANSWER])

    def client(self, url: str) -> httpx.Client:
        """The client for this URL, made on first use."""
        with self._lock:
            client = self._clients.get(url)
            if client is None:
                client = self._clients[url] = httpx.Client(timeout=TIMEOUT_S, follow_redirects=False)
            return client

    def close(self) -> None:
        """Close every client (their idle connections)."""
        with self._lock:
            clients, self._clients = list(self._clients.values()), {}
        for client in clients:
            client.close()
