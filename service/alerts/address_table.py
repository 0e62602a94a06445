"""The special-purpose IP address ranges, as IANA registers them, and which a webhook may not reach.

Every entry of the IANA IPv4 and IPv6 Special-Purpose Address Registries (RFC 6890, RFC 8190 and the
RFCs that added entries since), with its RFC and its "Globally Reachable" value, plus the ranges no
public receiver lives in that those registries leave out (multicast, site-local, the deprecated
IPv4-compatible form, and the IPv6 space outside 2000::/3, the only space IANA allocates for global
unicast). The table is written out in `special_purpose.csv` beside this module, a row a range in the
columns of IANA's own CSV files, so that each row can be checked against the registry as published,
rather than taken from Python's `ipaddress.is_global`, whose answers changed between patch releases:
what the server refuses should not depend on which Python runs it.

The most specific range holding an address decides. A range is refused when IANA says it is not
globally reachable (False or N/A), and some reachable ones are refused too, each saying why: NAT64
prefixes reach any IPv4 address through a local translator (the cloud metadata one included), and
service anycast addresses reach the nearest server, which is on the local network by design.
"""

from __future__ import annotations

import csv
import io
import ipaddress
from importlib import resources
from typing import NamedTuple

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
# IANA's columns (Address Block, Name, RFC, Globally Reachable) and two of ours: "Refused Because", a
# key of WHY, and "Registry", the IANA registry that lists the range (read by people, not here)
TABLE_FILE = "special_purpose.csv"


class Range(NamedTuple):
    """One special-purpose range: its block, name, defining RFC and whether a webhook may reach it."""

    network: IPNetwork
    name: str
    rfc: str
    reachable: bool | None  # IANA's "Globally Reachable"; None where it says N/A or lists none
    refused: bool  # whether a webhook may not connect to an address in it
    why: str = ""  # why a range IANA calls reachable is refused all the same


# What the CSV's "Refused Because" names: why a range IANA calls reachable is refused all the same.
WHY = {
    "": "",
    "anycast": "anycast to the nearest server, which is on the local network by design",
    "nat64": "a NAT64 translator on the path turns it into any IPv4 address, the metadata one included",
}
_REACHABLE = {"True": True, "False": False, "N/A": None}


def _row(row: dict[str, str]) -> Range:
    reachable, why = _REACHABLE[row["Globally Reachable"]], WHY[row["Refused Because"]]
    network = ipaddress.ip_network(row["Address Block"])
    return Range(network, row["Name"], row["RFC"], reachable, reachable is not True or bool(why), why)


def _read_table() -> tuple[Range, ...]:
    text = resources.files("service.alerts").joinpath(TABLE_FILE).read_text(encoding="utf-8")
    return tuple(_row(row) for row in csv.DictReader(io.StringIO(text)))


TABLE: tuple[Range, ...] = _read_table()
# most specific first, so the first range holding an address is the one that decides
_BY_PREFIX = sorted(TABLE, key=lambda r: (r.network.version, -r.network.prefixlen))


def range_of(ip: IPAddress) -> Range | None:
    """The most specific range of the table holding `ip`, or None (an ordinary public IPv4 address)."""
    for r in _BY_PREFIX:
        if r.network.version == ip.version and ip in r.network:
            return r
    return None


# The ranges a host LEDGER_WEBHOOK_ALLOW names by NAME may resolve into: the ones an organisation
# numbers its own hosts from. A name can be made to resolve anywhere (by whoever runs its DNS), so it
# never opens loopback, link-local or a cloud metadata address: only an address or a CIDR listed does.
NAMED_MAY_REACH: tuple[IPNetwork, ...] = tuple(
    ipaddress.ip_network(n)
    for n in (
        "10.0.0.0/8",  # private-use, RFC 1918
        "172.16.0.0/12",
        "192.168.0.0/16",
        "100.64.0.0/10",  # shared address space: carrier-grade NAT and overlay networks
        "fc00::/7",  # unique-local, RFC 4193
    )
)
# Cloud metadata services inside those ranges (169.254.169.254, the common one, is link-local anyway).
METADATA: dict[IPAddress, str] = {
    ipaddress.ip_address("fd00:ec2::254"): "AWS instance metadata over IPv6",
    ipaddress.ip_address("100.100.100.200"): "Alibaba Cloud instance metadata",
}


def _v4(ip: IPAddress) -> IPAddress:
    """An IPv4-mapped address as the IPv4 address it carries; any other as it is."""
    mapped = ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) else None
    return ip if mapped is None else mapped


def metadata(ip: IPAddress) -> str | None:
    """Which cloud's metadata service `ip` is, or None."""
    return METADATA.get(_v4(ip))


def named_may_reach(ip: IPAddress) -> bool:
    """Whether a host the operator allowed by name may connect to `ip`: the range that decides for it
    is one of NAMED_MAY_REACH, and it is no metadata address."""
    found = range_of(_v4(ip))
    return found is not None and found.network in NAMED_MAY_REACH and metadata(ip) is None


def refusal(ip: IPAddress) -> Range | None:
    """The range that refuses `ip` to a webhook, or None when it may be connected to.

    An IPv4-mapped address (what a dual-stack socket reports for an IPv4 peer) is judged by the
    IPv4 address it carries; every other embedding (IPv4-compatible, 6to4, Teredo, NAT64) is refused.
    """
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return refusal(ip.ipv4_mapped)
    found = range_of(ip)
    return found if found is not None and found.refused else None
