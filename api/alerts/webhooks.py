"""The server's HTTP POST of an alert to a watch's callback, guarded against server-side request forgery.

A callback URL is a request the server makes on someone's behalf. The name is resolved at each
delivery (DNS can change), every address it gives is held to the policy (service/alerts/address_policy.py
AddressPolicy: no loopback, private, link-local or metadata address unless LEDGER_WEBHOOK_ALLOW opens
it: an address or CIDR listed, or a private one of a host listed by name), and the request goes to
an allowed address itself (the URL names the checked IP; the Host header and TLS's SNI and
certificate check name the host): what was checked is what is connected to. https
only (http for allowed hosts), no redirect followed, no proxy from the environment, a bound on what is
read back. The deliverer (service/alerts/webhooks.py) holds each attempt to its deadline.

Name resolution (`getaddrinfo`) cannot be cancelled, so it runs in a thread of its own that an
attempt can abandon at its deadline: a name still being resolved is shared by the attempts that ask
for it meanwhile, and a bounded number of names are resolved at once.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import ipaddress
import socket
import ssl
import threading
from collections.abc import Callable, Mapping, Sequence
from urllib.parse import SplitResult, urlsplit

import httpx

from service.alerts.address_policy import AddressPolicy
from service.alerts.webhooks import DEADLINE_S, Sent

MAX_ANSWER = 64 * 1024  # bytes of an answer read (the status is what counts)
MAX_RESOLVING = 64  # names being resolved at once (a resolver that hangs holds one thread per name)

# (host, port) -> the addresses it resolves to; blocking, like socket.getaddrinfo
Resolve = Callable[[str, int], Sequence[str]]
IP = ipaddress.IPv4Address | ipaddress.IPv6Address


def getaddrinfo(host: str, port: int) -> list[str]:
    """The system resolver's addresses for a host, in its order."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


def sender(policy: AddressPolicy, timeout: float = DEADLINE_S, resolve: Resolve = getaddrinfo) -> _Sender:
    """A webhooks.Send over this policy (`timeout` bounds each network step; the deliverer the whole)."""
    return _Sender(policy, timeout, resolve)


class _Resolver:
    """Names resolved in threads an awaiting attempt can abandon; one thread per name at a time."""

    def __init__(self, resolve: Resolve) -> None:
        self.resolve = resolve
        self.lock = threading.Lock()
        self.pending: dict[tuple[str, int], concurrent.futures.Future[Sequence[str]]] = {}

    async def __call__(self, host: str, port: int) -> Sequence[str]:
        key = (host, port)
        with self.lock:
            future = self.pending.get(key)
            if future is None:
                if len(self.pending) >= MAX_RESOLVING:
                    raise OSError(f"{MAX_RESOLVING} names are being resolved already")
                future = concurrent.futures.Future()
                future.set_running_or_notify_cancel()  # an attempt abandoning it cannot cancel it for others
                self.pending[key] = future
                threading.Thread(target=self._run, args=(key, future), daemon=True).start()
        return await asyncio.wrap_future(future)

    def _run(self, key: tuple[str, int], future: concurrent.futures.Future[Sequence[str]]) -> None:
        try:
            future.set_result(self.resolve(*key))
        except BaseException as e:  # handed to whoever awaits the name, whatever it is
            future.set_exception(e)
        finally:
            with self.lock:
                self.pending.pop(key, None)


class _Sender:
    def __init__(self, policy: AddressPolicy, timeout: float, resolve: Resolve) -> None:
        self.policy = policy
        self.timeout = timeout
        self.resolve = _Resolver(resolve)
        self.context = ssl.create_default_context()

    async def __call__(self, url: str, body: bytes, headers: Mapping[str, str]) -> Sent:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port or (443 if parts.scheme == "https" else 80)
        if parts.scheme != "https" and not (parts.scheme == "http" and self.policy.names(host)):
            return Sent(None, None, "refused: http only for a host LEDGER_WEBHOOK_ALLOW names")
        try:
            addresses = await self._addresses(host, port)
        except (OSError, UnicodeError, ValueError) as e:  # an IDNA label too long is a UnicodeError
            return Sent(None, None, f"cannot resolve {host}: {type(e).__name__}: {e}")
        why: list[str] = []
        for ip in addresses:
            refused = self.policy.refused(host, ip)
            if refused is not None:
                why.append(refused)
                continue
            try:
                return await self._post(ip, host, port, parts, body, headers)
            except (httpx.ConnectError, httpx.ConnectTimeout) as e:
                why.append(f"cannot connect to {ip}: {type(e).__name__}: {e}")
        return Sent(None, None, "; ".join(why) or f"no address for {host}")

    async def _addresses(self, host: str, port: int) -> list[IP]:
        try:
            return [ipaddress.ip_address(host)]  # a literal is not resolved
        except ValueError:
            pass
        seen: dict[IP, None] = {}
        for text in await self.resolve(host, port):
            seen.setdefault(ipaddress.ip_address(text.split("%", 1)[0]), None)
        return list(seen)

    async def _post(
        self, ip: IP, host: str, port: int, url: SplitResult, body: bytes, headers: Mapping[str, str]
    ) -> Sent:
        literal = f"[{ip}]" if ip.version == 6 else str(ip)
        target = f"{url.scheme}://{literal}:{port}{url.path or '/'}" + (f"?{url.query}" if url.query else "")
        # the checked address is dialled; the name is what Host, SNI and the certificate check see
        extensions = {"sni_hostname": host} if url.scheme == "https" else {}
        async with httpx.AsyncClient(
            verify=self.context, trust_env=False, follow_redirects=False, timeout=self.timeout
        ) as client:
            asked = client.build_request(
                "POST", target, content=body, headers={**headers, "Host": url.netloc}, extensions=extensions
            )
            try:
                answer = await client.send(asked, stream=True)
                try:
                    read = 0
                    async for chunk in answer.aiter_raw():
                        read += len(chunk)
                        if read >= MAX_ANSWER:
                            break
                finally:
                    await answer.aclose()
                return Sent(answer.status_code, str(ip), None)
            except (httpx.ConnectError, httpx.ConnectTimeout):
                raise
            except (httpx.HTTPError, OSError, ssl.SSLError) as e:
                return Sent(None, str(ip), f"{type(e).__name__}: {e}")
