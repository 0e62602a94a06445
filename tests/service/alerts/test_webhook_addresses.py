"""Which addresses a webhook may reach (service/address_table.py): every IANA special-purpose range, at
watch creation over a served API (POST /watches with the address as the callback's host) and at
delivery (the sender, with the name resolving to the address; it must refuse before connecting)."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from api.alerts.webhooks import sender
from service.alerts import address_table as t
from service.alerts.address_policy import AddressPolicy
from service.alerts.webhooks import Sent
from tests.api_fixtures import running_server

TOKEN = "address-token"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
PAPER = "2101.00001"
IP = ipaddress.IPv4Address | ipaddress.IPv6Address


def _ends(r: t.Range) -> list[IP]:
    return [r.network[0], r.network[-1]]


def _holder(ip: IP) -> t.Range | None:
    """The most specific range holding `ip`, found the slow way (every range, not the sorted table)."""
    holding = [r for r in t.TABLE if r.network.version == ip.version and ip in r.network]
    return max(holding, key=lambda r: r.network.prefixlen, default=None)


def _expected(ip: IP) -> t.Range | None:
    """The range that should refuse `ip`: an IPv4-mapped address is judged by its IPv4 address."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return _expected(ip.ipv4_mapped)
    holder = _holder(ip)
    return holder if holder is not None and holder.refused else None


# The cases of the issue, and neighbours just outside refused ranges (public: allowed).
NAMED_CASES: list[tuple[str, bool, str]] = [
    ("192.0.0.8", True, "ipv4-dummy-delivery-connected"),
    ("64:ff9b::a9fe:a9fe", True, "nat64-to-metadata"),
    ("64:ff9b::808:808", True, "nat64-to-public"),
    ("64:ff9b:1::a9fe:a9fe", True, "nat64-local-use"),
    ("::a9fe:a9fe", True, "ipv4-compatible-metadata"),
    ("::808:808", True, "ipv4-compatible-public"),
    ("fec0::1", True, "site-local"),
    ("192.88.99.1", True, "6to4-relay-anycast"),
    ("2002:a9fe:a9fe::1", True, "6to4-of-metadata"),
    ("2001:0:a9fe:a9fe::1", True, "teredo"),
    ("::ffff:169.254.169.254", True, "mapped-metadata"),
    ("::ffff:8.8.8.8", False, "mapped-public"),
    ("192.0.0.9", True, "pcp-anycast"),
    ("240.0.0.1", True, "reserved"),
    ("239.255.255.255", True, "multicast-last"),
    ("ff02::1", True, "multicast-v6"),
    ("5f00::1", True, "srv6"),
    ("4000::1", True, "outside-2000-3"),
    ("192.88.98.255", False, "below-6to4-relay"),
    ("192.88.100.0", False, "above-6to4-relay"),
    ("100.63.255.255", False, "below-shared"),
    ("100.128.0.0", False, "above-shared"),
    ("172.15.255.255", False, "below-private-172"),
    ("172.32.0.0", False, "above-private-172"),
    ("198.17.255.255", False, "below-benchmarking"),
    ("198.20.0.0", False, "above-benchmarking"),
    ("223.255.255.255", False, "below-multicast"),
    ("192.31.196.1", False, "as112-reachable"),
    ("2001:200::1", False, "above-ietf-v6"),
    ("2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", False, "below-documentation-v6"),
    ("2001:db9::", False, "above-documentation-v6"),
    ("2606:4700::1111", False, "public-v6"),
]
NAMED = [pytest.param(address, refused, id=name) for address, refused, name in NAMED_CASES]


def test_every_range_names_its_rfc_and_every_unreachable_one_is_refused() -> None:
    for r in t.TABLE:
        assert r.name and r.rfc.startswith("RFC ") and r.network.network_address == r.network[0]
        assert r.refused == (r.reachable is not True or bool(r.why)), r
        assert not (r.reachable is True and r.refused and not r.why), f"{r.network}: refused with no reason"
    assert len({r.network for r in t.TABLE}) == len(t.TABLE)


@pytest.mark.parametrize("r", t.TABLE, ids=[str(r.network) for r in t.TABLE])
def test_the_policy_decides_each_ranges_ends_by_the_most_specific_range(r: t.Range) -> None:
    policy = AddressPolicy()
    for ip in _ends(r):
        why = policy.refused("hook.example", ip)
        want = _expected(ip)
        assert (why is not None) == (want is not None), f"{ip}: {why}"
        if want is not None:
            assert why is not None and f"in {want.network} ({want.name}, {want.rfc}" in why
            assert "server-side request forgery" in why and "LEDGER_WEBHOOK_ALLOW" in why
    if r.refused:
        assert policy.refused("hook.example", r.network[-1]) is not None  # its last address is its own


@pytest.mark.parametrize(("address", "refused"), NAMED)
def test_the_named_cases_and_their_neighbours(address: str, refused: bool) -> None:
    assert (AddressPolicy().refused("hook.example", ipaddress.ip_address(address)) is not None) == refused


def test_an_allowed_network_opens_its_ipv4_mapped_form_too() -> None:
    policy = AddressPolicy(["127.0.0.1"])
    assert policy.refused("h", ipaddress.ip_address("::ffff:127.0.0.1")) is None
    assert policy.refused("h", ipaddress.ip_address("::ffff:127.0.0.2")) is not None


# -- at watch creation, over HTTP --------------------------------------------------------------


@pytest.fixture(scope="module")
def client(db_factory: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[httpx.Client]:
    """A client of one `ledger serve` for the module (one kept-alive connection)."""
    directory = tmp_path_factory.mktemp("addresses")
    db = db_factory(directory)
    with (
        running_server(db, env={"LEDGER_TOKENS": TOKEN}, cwd=directory) as s,
        httpx.Client(base_url=s.base, headers=AUTH, timeout=30) as c,
    ):
        yield c


def _url(ip: IP) -> str:
    return f"https://[{ip}]/hook" if ip.version == 6 else f"https://{ip}/hook"


def _post(client: httpx.Client, ip: IP) -> httpx.Response:
    return client.post("/watches", json={"arxiv_id": PAPER, "callback_url": _url(ip)})


# each refused end of a range once (a /128's two ends are one address)
REFUSED_ENDS = list({ip: (r, ip) for r in t.TABLE for ip in _ends(r) if _expected(ip) is not None}.values())


@pytest.mark.parametrize(("r", "ip"), REFUSED_ENDS, ids=[f"{r.network}-{ip}" for r, ip in REFUSED_ENDS])
def test_a_watch_with_a_refused_callback_is_a_422_naming_it_and_nothing_is_stored(
    client: httpx.Client, r: t.Range, ip: IP
) -> None:
    answer = _post(client, ip)
    assert answer.status_code == 422, answer.text
    error = answer.json()["error"]
    want = _expected(ip)
    assert want is not None and error["details"]["where"] == "callback_url"
    assert f"in {want.network} ({want.name}" in error["message"] and "forgery" in error["message"]
    assert client.get("/watches").json()["watches"] == []


@pytest.mark.parametrize("address", [pytest.param(a, id=name) for a, refused, name in NAMED_CASES if refused])
def test_the_named_cases_are_refused_at_creation(client: httpx.Client, address: str) -> None:
    answer = _post(client, ipaddress.ip_address(address))
    assert answer.status_code == 422 and "callback_url" in answer.json()["error"]["message"], answer.text


# -- at delivery: the name resolves to the address ----------------------------------------------


@pytest.fixture
def resolving(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Make every name resolve to the address put in the list it returns; any socket made fails the
    test (the sender must refuse before connecting, and no traffic may leave this machine)."""
    answer: list[str] = []

    def getaddrinfo(host: str, port: int, *args: Any, **kw: Any) -> list[Any]:
        ip = ipaddress.ip_address(answer[0])
        family = socket.AF_INET6 if ip.version == 6 else socket.AF_INET
        where = (str(ip), port, 0, 0) if ip.version == 6 else (str(ip), port)
        return [(family, socket.SOCK_STREAM, socket.IPPROTO_TCP, "", where)]

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    return answer


def _no_socket(*args: Any, **kw: Any) -> None:
    raise AssertionError("the sender opened a socket to a refused address")


NAMED_REFUSED = [ipaddress.ip_address(a) for a, refused, _ in NAMED_CASES if refused]
DELIVERY = [*REFUSED_ENDS, *((_holder(ip), ip) for ip in NAMED_REFUSED)]


@pytest.mark.parametrize(("r", "ip"), DELIVERY, ids=[str(ip) for _, ip in DELIVERY])
def test_delivery_refuses_a_name_resolving_to_a_refused_address_before_connecting(
    resolving: list[str], monkeypatch: pytest.MonkeyPatch, r: t.Range | None, ip: IP
) -> None:
    resolving.append(str(ip))

    async def attempt() -> Sent:
        # from here on any socket fails the test (the event loop has made its own already)
        monkeypatch.setattr(socket, "socket", _no_socket)
        return await sender(AddressPolicy())("https://hook.example/h", b"{}", {})

    sent = asyncio.run(attempt())
    assert sent.status is None and sent.address is None
    assert sent.error is not None and f"hook.example is {ip}" in sent.error and "forgery" in sent.error


# -- a host allowed by name: private ranges only ------------------------------------------------

# What a name in LEDGER_WEBHOOK_ALLOW may not be made to reach, whoever runs its DNS.
NAMED_NEVER = [
    pytest.param("169.254.169.254", "169.254.0.0/16", id="metadata"),
    pytest.param("169.254.1.1", "169.254.0.0/16", id="link-local"),
    pytest.param("127.0.0.1", "127.0.0.0/8", id="loopback"),
    pytest.param("127.1.2.3", "127.0.0.0/8", id="loopback-other"),
    pytest.param("fe80::1", "fe80::/10", id="link-local-v6"),
    pytest.param("::1", "::1/128", id="loopback-v6"),
    pytest.param("::ffff:127.0.0.1", "127.0.0.0/8", id="mapped-loopback"),
    pytest.param("::ffff:169.254.169.254", "169.254.0.0/16", id="mapped-metadata"),
    pytest.param("fd00:ec2::254", "fc00::/7", id="aws-metadata-v6"),
    pytest.param("100.100.100.200", "100.64.0.0/10", id="alibaba-metadata"),
    pytest.param("0.0.0.0", "0.0.0.0/32", id="this-host"),
    pytest.param("64:ff9b::a9fe:a9fe", "64:ff9b::/96", id="nat64-metadata"),
]
# What it may: the private ranges an organisation numbers its own hosts from.
NAMED_PRIVATE = [
    pytest.param("10.0.0.5", id="private-10"),
    pytest.param("172.16.0.1", id="private-172"),
    pytest.param("192.168.1.1", id="private-192"),
    pytest.param("100.64.0.1", id="shared"),
    pytest.param("fd12:3456::1", id="unique-local"),
    pytest.param("::ffff:10.0.0.5", id="mapped-private"),
]


@pytest.mark.parametrize(("address", "network"), NAMED_NEVER)
def test_a_name_allowed_still_may_not_resolve_to_loopback_link_local_or_metadata(
    resolving: list[str], monkeypatch: pytest.MonkeyPatch, address: str, network: str
) -> None:
    resolving.append(address)

    async def attempt() -> Sent:
        monkeypatch.setattr(socket, "socket", _no_socket)  # refused before any connection
        return await sender(AddressPolicy(["hooks.internal"]))("http://hooks.internal/h", b"{}", {})

    sent = asyncio.run(attempt())
    assert sent.status is None and sent.address is None and sent.error is not None
    assert f"hooks.internal is {ipaddress.ip_address(address)}, in {network} " in sent.error
    assert "LEDGER_WEBHOOK_ALLOW names hooks.internal" in sent.error
    assert "list the address or a CIDR" in sent.error


def _dialled(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Record the address the sender dials instead of dialling it (no traffic leaves this machine)."""
    dialled: list[str] = []

    async def post(self: Any, ip: IP, *args: Any) -> Sent:
        dialled.append(str(ip))
        return Sent(200, str(ip), None)

    monkeypatch.setattr(type(sender(AddressPolicy())), "_post", post)
    return dialled


@pytest.mark.parametrize("address", NAMED_PRIVATE)
def test_a_name_allowed_reaches_the_private_ranges_it_resolves_to(
    resolving: list[str], monkeypatch: pytest.MonkeyPatch, address: str
) -> None:
    resolving.append(address)
    dialled = _dialled(monkeypatch)
    sent = asyncio.run(sender(AddressPolicy(["hooks.internal"]))("http://hooks.internal/h", b"{}", {}))
    assert sent == Sent(200, str(ipaddress.ip_address(address)), None)
    assert dialled == [str(ipaddress.ip_address(address))]
    # a name not listed reaches none of them
    refused = asyncio.run(sender(AddressPolicy(["hooks.internal"]))("https://other.internal/h", b"{}", {}))
    assert refused.status is None and "forgery" in (refused.error or "") and len(dialled) == 1


@pytest.mark.parametrize(
    ("allow", "address"),
    [
        pytest.param(["hooks.internal", "127.0.0.1"], "127.0.0.1", id="address"),
        pytest.param(["hooks.internal", "127.0.0.0/8"], "127.0.0.9", id="cidr"),
        pytest.param(["hooks.internal", "169.254.169.254"], "169.254.169.254", id="metadata-address"),
        pytest.param(["hooks.internal", "::1"], "::1", id="address-v6"),
        pytest.param(["hooks.internal", "fe80::/10"], "fe80::1", id="cidr-v6"),
    ],
)
def test_an_address_or_cidr_listed_opens_what_a_name_cannot(
    resolving: list[str], monkeypatch: pytest.MonkeyPatch, allow: list[str], address: str
) -> None:
    resolving.append(address)
    dialled = _dialled(monkeypatch)
    sent = asyncio.run(sender(AddressPolicy(allow))("http://hooks.internal/h", b"{}", {}))
    assert sent == Sent(200, address, None) and dialled == [address]
