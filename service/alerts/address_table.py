"""The special-purpose IP address ranges, as IANA registers them, and which a webhook may not reach.

Every entry of the IANA IPv4 and IPv6 Special-Purpose Address Registries (RFC 6890, RFC 8190 and the
RFCs that added entries since), with its RFC and its "Globally Reachable" value, plus the ranges no
public receiver lives in that those registries leave out (multicast, site-local, the deprecated
IPv4-compatible form, address space IANA has not allocated for unicast). The table is written out
here rather than taken from Python's `ipaddress.is_global`, whose answers changed between patch
releases: what the server refuses should not depend on which Python runs it.

The most specific range holding an address decides. A range is refused when IANA says it is not
globally reachable (False or N/A), and some reachable ones are refused too, each saying why: NAT64
prefixes reach any IPv4 address through a local translator (the cloud metadata one included), and
service anycast addresses reach the nearest server, which is on the local network by design.
"""

from __future__ import annotations

import ipaddress
from typing import NamedTuple

IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class Range(NamedTuple):
    """One special-purpose range: its block, name, defining RFC and whether a webhook may reach it."""

    network: IPNetwork
    name: str
    rfc: str
    reachable: bool | None  # IANA's "Globally Reachable"; None where it says N/A or lists none
    refused: bool  # whether a webhook may not connect to an address in it
    why: str = ""  # why a range IANA calls reachable is refused all the same


def _range(block: str, name: str, rfc: str, reachable: bool | None, why: str = "") -> Range:
    return Range(ipaddress.ip_network(block), name, rfc, reachable, reachable is not True or bool(why), why)


_ANYCAST = "anycast to the nearest server, which is on the local network by design"

# -- IANA IPv4 Special-Purpose Address Registry ------------------------------------------------

THIS_NETWORK = _range("0.0.0.0/8", "this network", "RFC 791 §3.2", False)
THIS_HOST = _range("0.0.0.0/32", "this host on this network", "RFC 1122 §3.2.1.3", False)
PRIVATE_10 = _range("10.0.0.0/8", "private-use", "RFC 1918", False)
SHARED = _range("100.64.0.0/10", "shared address space (carrier-grade NAT)", "RFC 6598", False)
LOOPBACK_V4 = _range("127.0.0.0/8", "loopback", "RFC 1122 §3.2.1.3", False)
LINK_LOCAL_V4 = _range("169.254.0.0/16", "link-local (cloud metadata lives here)", "RFC 3927", False)
PRIVATE_172 = _range("172.16.0.0/12", "private-use", "RFC 1918", False)
IETF_PROTOCOL_V4 = _range("192.0.0.0/24", "IETF protocol assignments", "RFC 6890 §2.1", False)
SERVICE_CONTINUITY = _range("192.0.0.0/29", "IPv4 service continuity prefix", "RFC 7335", False)
DUMMY_V4 = _range("192.0.0.8/32", "IPv4 dummy address", "RFC 7600", False)
PCP_ANYCAST_V4 = _range("192.0.0.9/32", "port control protocol anycast", "RFC 7723", True, _ANYCAST)
TURN_ANYCAST_V4 = _range("192.0.0.10/32", "TURN anycast", "RFC 8155", True, _ANYCAST)
NAT64_DISCOVERY_170 = _range("192.0.0.170/32", "NAT64/DNS64 discovery", "RFC 8880, RFC 7050 §2.2", False)
NAT64_DISCOVERY_171 = _range("192.0.0.171/32", "NAT64/DNS64 discovery", "RFC 8880, RFC 7050 §2.2", False)
TEST_NET_1 = _range("192.0.2.0/24", "documentation (TEST-NET-1)", "RFC 5737", False)
AS112_V4 = _range("192.31.196.0/24", "AS112-v4", "RFC 7535", True)
AMT_V4 = _range("192.52.193.0/24", "AMT", "RFC 7450", True)
RELAY_6TO4 = _range("192.88.99.0/24", "deprecated 6to4 relay anycast", "RFC 7526", None)
RELAY_6A44 = _range("192.88.99.2/32", "6a44 relay anycast", "RFC 6751", False)
PRIVATE_192 = _range("192.168.0.0/16", "private-use", "RFC 1918", False)
AS112_DIRECT_V4 = _range("192.175.48.0/24", "direct delegation AS112 service", "RFC 7534", True)
BENCHMARKING_V4 = _range("198.18.0.0/15", "benchmarking", "RFC 2544", False)
TEST_NET_2 = _range("198.51.100.0/24", "documentation (TEST-NET-2)", "RFC 5737", False)
TEST_NET_3 = _range("203.0.113.0/24", "documentation (TEST-NET-3)", "RFC 5737", False)
RESERVED_V4 = _range("240.0.0.0/4", "reserved", "RFC 1112 §4", False)
BROADCAST = _range("255.255.255.255/32", "limited broadcast", "RFC 8190, RFC 919 §7", False)
# not in the special-purpose registry, in the IPv4 address space one
MULTICAST_V4 = _range("224.0.0.0/4", "multicast", "RFC 5771", None)

# -- IANA IPv6 Special-Purpose Address Registry ------------------------------------------------

LOOPBACK_V6 = _range("::1/128", "loopback", "RFC 4291", False)
UNSPECIFIED_V6 = _range("::/128", "unspecified", "RFC 4291", False)
IPV4_MAPPED = _range("::ffff:0:0/96", "IPv4-mapped", "RFC 4291", False)
_NAT64 = "a NAT64 translator on the path turns it into any IPv4 address, the metadata one included"
NAT64 = _range("64:ff9b::/96", "NAT64 well-known prefix", "RFC 6052", True, _NAT64)
NAT64_LOCAL = _range("64:ff9b:1::/48", "NAT64 local-use prefix", "RFC 8215", False)
DISCARD_ONLY = _range("100::/64", "discard-only", "RFC 6666", False)
DUMMY_V6 = _range("100:0:0:1::/64", "dummy IPv6 prefix", "RFC 9780", False)
IETF_PROTOCOL_V6 = _range("2001::/23", "IETF protocol assignments", "RFC 2928", False)
TEREDO = _range("2001::/32", "Teredo", "RFC 4380, RFC 8190", None)
PCP_ANYCAST_V6 = _range("2001:1::1/128", "port control protocol anycast", "RFC 7723", True, _ANYCAST)
TURN_ANYCAST_V6 = _range("2001:1::2/128", "TURN anycast", "RFC 8155", True, _ANYCAST)
SRP_ANYCAST = _range("2001:1::3/128", "DNS-SD service registration protocol anycast", "RFC 9665", True,
                     _ANYCAST)  # fmt: skip
BENCHMARKING_V6 = _range("2001:2::/48", "benchmarking", "RFC 5180, RFC Errata 1752", False)
AMT_V6 = _range("2001:3::/32", "AMT", "RFC 7450", True)
AS112_V6 = _range("2001:4:112::/48", "AS112-v6", "RFC 7535", True)
ORCHID = _range("2001:10::/28", "deprecated ORCHID", "RFC 4843", None)
ORCHID_V2 = _range("2001:20::/28", "ORCHIDv2", "RFC 7343", True)
DRONE_DET = _range("2001:30::/28", "drone remote ID protocol entity tags", "RFC 9374", True)
DOCUMENTATION_V6 = _range("2001:db8::/32", "documentation", "RFC 3849", False)
SIX_TO_FOUR = _range("2002::/16", "6to4", "RFC 3056", None)
AS112_DIRECT_V6 = _range("2620:4f:8000::/48", "direct delegation AS112 service", "RFC 7534", True)
DOCUMENTATION_3FFF = _range("3fff::/20", "documentation", "RFC 9637", False)
SRV6_SIDS = _range("5f00::/16", "segment routing (SRv6) SIDs", "RFC 9602", False)
UNIQUE_LOCAL = _range("fc00::/7", "unique-local (cloud metadata lives here too)", "RFC 4193, RFC 8190", False)
LINK_LOCAL_V6 = _range("fe80::/10", "link-local", "RFC 4291", False)
# not in the special-purpose registry: deprecated forms and the rest of the IPv6 address space
IPV4_COMPATIBLE = _range("::/96", "deprecated IPv4-compatible", "RFC 4291 §2.5.5.1", None)
SITE_LOCAL = _range("fec0::/10", "deprecated site-local", "RFC 3879", None)
MULTICAST_V6 = _range("ff00::/8", "multicast", "RFC 4291 §2.7", None)
# IANA allocates only 2000::/3 for global unicast; the rest of the space is reserved by the IETF
NOT_GLOBAL_UNICAST = _range("::/0", "outside 2000::/3, the only global unicast space", "RFC 4291 §2.4", None)
GLOBAL_UNICAST = _range("2000::/3", "global unicast", "RFC 4291 §2.4, RFC 3587", True)

IPV4_TABLE: tuple[Range, ...] = (
    THIS_NETWORK, THIS_HOST, PRIVATE_10, SHARED, LOOPBACK_V4, LINK_LOCAL_V4, PRIVATE_172, IETF_PROTOCOL_V4,
    SERVICE_CONTINUITY, DUMMY_V4, PCP_ANYCAST_V4, TURN_ANYCAST_V4, NAT64_DISCOVERY_170, NAT64_DISCOVERY_171,
    TEST_NET_1, AS112_V4, AMT_V4, RELAY_6TO4, RELAY_6A44, PRIVATE_192, AS112_DIRECT_V4, BENCHMARKING_V4,
    TEST_NET_2, TEST_NET_3, RESERVED_V4, BROADCAST, MULTICAST_V4,
)  # fmt: skip
IPV6_TABLE: tuple[Range, ...] = (
    LOOPBACK_V6, UNSPECIFIED_V6, IPV4_MAPPED, NAT64, NAT64_LOCAL, DISCARD_ONLY, DUMMY_V6, IETF_PROTOCOL_V6,
    TEREDO, PCP_ANYCAST_V6, TURN_ANYCAST_V6, SRP_ANYCAST, BENCHMARKING_V6, AMT_V6, AS112_V6, ORCHID,
    ORCHID_V2, DRONE_DET, DOCUMENTATION_V6, SIX_TO_FOUR, AS112_DIRECT_V6, DOCUMENTATION_3FFF, SRV6_SIDS,
    UNIQUE_LOCAL, LINK_LOCAL_V6, IPV4_COMPATIBLE, SITE_LOCAL, MULTICAST_V6, NOT_GLOBAL_UNICAST,
    GLOBAL_UNICAST,
)  # fmt: skip
TABLE: tuple[Range, ...] = IPV4_TABLE + IPV6_TABLE
# most specific first, so the first range holding an address is the one that decides
_BY_PREFIX = sorted(TABLE, key=lambda r: (r.network.version, -r.network.prefixlen))


def range_of(ip: IPAddress) -> Range | None:
    """The most specific range of the table holding `ip`, or None (an ordinary public IPv4 address)."""
    for r in _BY_PREFIX:
        if r.network.version == ip.version and ip in r.network:
            return r
    return None


def refusal(ip: IPAddress) -> Range | None:
    """The range that refuses `ip` to a webhook, or None when it may be connected to.

    An IPv4-mapped address (what a dual-stack socket reports for an IPv4 peer) is judged by the
    IPv4 address it carries; every other embedding (IPv4-compatible, 6to4, Teredo, NAT64) is refused.
    """
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        return refusal(ip.ipv4_mapped)
    found = range_of(ip)
    return found if found is not None and found.refused else None
