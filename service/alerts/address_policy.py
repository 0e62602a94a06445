"""Which addresses a webhook may connect to, by the special-purpose table (address_table.py) and
what the operator opens with LEDGER_WEBHOOK_ALLOW."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

from service.alerts.address_table import metadata, named_may_reach, refusal


class AddressPolicy:
    """Which addresses a webhook may connect to: public ones, and what LEDGER_WEBHOOK_ALLOW opens
    (an address or CIDR: what it holds; a host name: the private ranges it resolves to; http is
    allowed for both). Refused by default: every special-purpose range of service/alerts/address_table.py
    that is not globally reachable, NAT64, multicast and reserved."""

    def __init__(self, allow: Iterable[str] = ()) -> None:
        self.hosts: set[str] = set()
        self.networks: list[ipaddress.IPv4Network | ipaddress.IPv6Network] = []
        for item in allow:
            item = item.strip().lower()
            if not item:
                continue
            try:
                self.networks.append(ipaddress.ip_network(item, strict=False))
            except ValueError:
                self.hosts.add(item)

    def names(self, host: str) -> bool:
        """Whether the operator allowed this host by name or by one of its networks (a literal)."""
        host = host.lower()
        if host in self.hosts:
            return True
        try:
            ip = ipaddress.ip_address(host)
        except ValueError:
            return False
        return any(ip in n for n in self.networks if n.version == ip.version)

    def refused(self, host: str, ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
        """Why connecting to `ip` (resolved from `host`) is refused, or None when it is allowed.

        An address or CIDR listed opens what it holds; a host listed by name opens only the private
        ranges (address_table.NAMED_MAY_REACH) it resolves into, never loopback, link-local or metadata.
        """
        mapped = ip.ipv4_mapped if isinstance(ip, ipaddress.IPv6Address) else None
        forms = [a for a in (ip, mapped) if a is not None]
        if any(a in n for a in forms for n in self.networks if n.version == a.version):
            return None
        special = refusal(ip)
        if special is None:
            return None
        named = host.lower() in self.hosts
        if named and named_may_reach(ip):
            return None
        why = f"; {special.why}" if special.why else ""
        cloud = metadata(ip)
        why += f"; {cloud}" if cloud else ""
        fix = (
            f"LEDGER_WEBHOOK_ALLOW names {host}, which opens only private ranges to it: list the "
            "address or a CIDR to allow this one"
            if named
            else "LEDGER_WEBHOOK_ALLOW can name it"
        )
        return f"{host} is {ip}, in {special.network} ({special.name}, {special.rfc}{why}): refused " + (
            f"(server-side request forgery); {fix}"
        )
