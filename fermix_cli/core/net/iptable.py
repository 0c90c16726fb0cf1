"""The explicit table of non-global IP ranges that fermix never connects to (reference section 5.2).

`ipaddress.is_global` and `is_private` are deliberately not used: CPython has shipped wrong tables for
them (CVE-2024-4032) and still reports, for example, `100.64.0.1` as not private and `::127.0.0.1`,
`64:ff9b::7f00:1`, `2002:7f00:1::` and `fec0::1` as global.
"""

from __future__ import annotations

import ipaddress
from typing import Literal

from ..records import Record

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

# Where a row comes from: the original Fermix table, the reference's [R] hardening, or fermix's own.
RowSource = Literal["original", "R", "fermix"]


class BlockedRange(Record, frozen=True):
    """One row of the non-global table."""

    network: IPNetwork
    name: str
    source: RowSource


def _row(cidr: str, name: str, source: RowSource) -> BlockedRange:
    return BlockedRange(ipaddress.ip_network(cidr), name, source)


IPV4_TABLE: tuple[BlockedRange, ...] = (
    _row("0.0.0.0/8", "this network (incl. 0.0.0.0)", "original"),
    _row("10.0.0.0/8", "private (RFC 1918)", "original"),
    _row("127.0.0.0/8", "loopback", "original"),
    _row("169.254.0.0/16", "link-local (incl. cloud metadata 169.254.169.254)", "original"),
    _row("172.16.0.0/12", "private (RFC 1918)", "original"),
    _row("192.168.0.0/16", "private (RFC 1918)", "original"),
    _row("100.64.0.0/10", "shared address space (CGNAT)", "original"),
    _row("192.0.2.0/24", "documentation (TEST-NET-1)", "original"),
    _row("198.51.100.0/24", "documentation (TEST-NET-2)", "original"),
    _row("203.0.113.0/24", "documentation (TEST-NET-3)", "original"),
    _row("198.18.0.0/15", "benchmarking", "original"),
    _row("192.88.99.0/24", "6to4 relay anycast", "original"),
    _row("224.0.0.0/4", "multicast", "original"),
    _row("240.0.0.0/4", "reserved (incl. broadcast 255.255.255.255)", "original"),
    _row("192.0.0.0/24", "IETF protocol assignments", "R"),
)

IPV6_TABLE: tuple[BlockedRange, ...] = (
    _row("::/96", "unspecified, loopback and IPv4-compatible", "original"),
    _row("64:ff9b::/96", "NAT64 well-known prefix", "original"),
    _row("2002::/16", "6to4", "original"),
    _row("2001::/32", "Teredo", "original"),
    _row("fc00::/7", "unique local (ULA)", "original"),
    _row("fe80::/10", "link-local", "original"),
    _row("ff00::/8", "multicast", "original"),
    _row("fec0::/10", "site-local (deprecated)", "R"),
    _row("100::/64", "discard-only", "R"),
    _row("2001:db8::/32", "documentation", "R"),
    _row("64:ff9b:1::/48", "local-use NAT64", "R"),
    _row("2001:10::/28", "ORCHID", "R"),
    _row("2001:20::/28", "ORCHIDv2", "R"),
    _row("3fff::/20", "documentation (RFC 9637)", "fermix"),
)

# Global unicast IPv6 is 2000::/3; everything outside it (except IPv4-mapped, judged by its IPv4) is
# reserved or special-purpose, so it is refused even where no row above names it.
_IPV6_GLOBAL_UNICAST = ipaddress.IPv6Network("2000::/3")
_IPV6_OUTSIDE_UNICAST = BlockedRange(
    ipaddress.IPv6Network("::/0"), "outside global unicast 2000::/3", "fermix"
)


def parse_address(text: str) -> IPAddress | None:
    """The address `text` spells in canonical notation (brackets and `%zone` allowed), else None.

    Only standard dotted-quad IPv4 is accepted; spellings such as `0177.0.0.1` are not addresses here
    (the resolver decides what they mean, and its answers are judged).
    """
    candidate = text.strip()
    if candidate.startswith("[") and candidate.endswith("]"):
        candidate = candidate[1:-1]
    candidate = candidate.split("%", 1)[0]
    try:
        return ipaddress.ip_address(candidate)
    except ValueError:
        return None


def blocked_range(address: IPAddress | str) -> BlockedRange | None:
    """The table row that blocks `address`, or None when the address is global.

    IPv4-mapped IPv6 (`::ffff:a.b.c.d`) is judged by its embedded IPv4 address. A string that is not an
    address is blocked (fail closed) by a row named "not an IP address".
    """
    ip = parse_address(address) if isinstance(address, str) else address
    if ip is None:
        return BlockedRange(ipaddress.IPv6Network("::/0"), "not an IP address", "fermix")
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    table = IPV4_TABLE if isinstance(ip, ipaddress.IPv4Address) else IPV6_TABLE
    for row in table:
        if ip in row.network:
            return row
    if isinstance(ip, ipaddress.IPv6Address) and ip not in _IPV6_GLOBAL_UNICAST:
        return _IPV6_OUTSIDE_UNICAST
    return None


def is_blocked_address(address: IPAddress | str) -> bool:
    """Whether fermix refuses to connect to `address` (True for anything that is not an IP address)."""
    return blocked_range(address) is not None
