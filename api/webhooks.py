"""The server's HTTP POST of an alert to a watch's callback, guarded against server-side request forgery.

A callback URL is a request the server makes on someone's behalf. The name is resolved at each
delivery (DNS can change), every address it gives is held to the policy (service/alerts.py
AddressPolicy: no loopback, private, link-local or metadata address unless LEDGER_WEBHOOK_ALLOW names
it), and the request goes to the socket connected to an allowed address, checked again on the peer
the socket reports: what was checked is what was connected to. https only (http for allowed hosts),
TLS verified against the name, no redirect followed (http.client follows none), a deadline on the
whole exchange and a bound on what is read back.
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import ssl
import time
from collections.abc import Mapping
from urllib.parse import SplitResult, urlsplit

from service.alerts import AddressPolicy
from service.webhooks import Sent

TIMEOUT_S = 10.0
MAX_ANSWER = 64 * 1024  # bytes of an answer read (the status is what counts)


def sender(policy: AddressPolicy, timeout: float = TIMEOUT_S) -> _Sender:
    """A webhooks.Send over this policy."""
    return _Sender(policy, timeout)


class _Sender:
    def __init__(self, policy: AddressPolicy, timeout: float) -> None:
        self.policy = policy
        self.timeout = timeout
        self.context = ssl.create_default_context()

    def __call__(self, url: str, body: bytes, headers: Mapping[str, str]) -> Sent:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port or (443 if parts.scheme == "https" else 80)
        if parts.scheme != "https" and not (parts.scheme == "http" and self.policy.names(host)):
            return Sent(None, None, "refused: http only for a host LEDGER_WEBHOOK_ALLOW names")
        deadline = time.monotonic() + self.timeout
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as e:
            return Sent(None, None, f"cannot resolve {host}: {e}")
        why: list[str] = []
        for family, kind, proto, _, address in infos:
            refused = self.policy.refused(host, ipaddress.ip_address(address[0]))
            if refused is not None:
                why.append(refused)
                continue
            try:
                sock = socket.socket(family, kind, proto)
                sock.settimeout(self.timeout)
                sock.connect(address)
            except OSError as e:
                why.append(f"cannot connect to {address[0]}: {e}")
                continue
            peer = sock.getpeername()[0]
            refused = self.policy.refused(host, ipaddress.ip_address(peer))
            if refused is not None:  # the address connected to, not only the one asked for
                sock.close()
                return Sent(None, peer, refused)
            return self._post(sock, host, parts, body, headers, peer, deadline)
        return Sent(None, None, "; ".join(why) or f"no address for {host}")

    def _post(
        self,
        sock: socket.socket,
        host: str,
        url: SplitResult,
        body: bytes,
        headers: Mapping[str, str],
        peer: str,
        deadline: float,
    ) -> Sent:
        try:
            if url.scheme == "https":
                sock = self.context.wrap_socket(sock, server_hostname=host)
            conn = http.client.HTTPConnection(host, timeout=self.timeout)
            conn.sock = sock
            path = (url.path or "/") + (f"?{url.query}" if url.query else "")
            conn.request("POST", path, body=body, headers={**headers, "Host": url.netloc})
            answer = conn.getresponse()
            read = 0
            while read < MAX_ANSWER and time.monotonic() < deadline:
                chunk = answer.read(min(8192, MAX_ANSWER - read))
                if not chunk:
                    break
                read += len(chunk)
            status = answer.status
            conn.close()
        except (OSError, http.client.HTTPException, ssl.SSLError) as e:
            return Sent(None, peer, f"{type(e).__name__}: {e}")
        finally:
            sock.close()
        if time.monotonic() > deadline:
            return Sent(None, peer, f"no whole answer within {self.timeout:g} s")
        return Sent(status, peer, None)
