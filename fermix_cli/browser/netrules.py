"""Which URLs the browser may load: the network guard's rules applied to navigations and requests."""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING

from ..core.errors import ExitClass, ToolError

if TYPE_CHECKING:
    from ..core.net.guard import HostGuard

# Loaded by the page without a network request: never sent to a host, so nothing to judge.
LOCAL_SCHEMES = ("data:", "blob:", "about:")


def judge(url: str, guard: HostGuard, local_ports: frozenset[int] = frozenset()) -> str | None:
    """Why the browser must not fetch `url` (a ToolError message), or None when it may.

    `local_ports` (the browser's DevTools and proxy ports) are refused on this machine's own addresses
    even for an allowed host: see `guardproxy`.
    """
    lowered = url[:16].lower()
    if lowered.startswith(LOCAL_SCHEMES):
        return None
    from ..core.net.guard import check_url

    try:
        checked = check_url(url)
        addresses = guard.addresses(checked.host)
    except ToolError as exc:
        return exc.message
    if checked.port in local_ports and any(is_local_address(a) for a in addresses):
        return own_port_reason(checked.port)
    return None


def is_local_address(address: str) -> bool:
    """Loopback or unspecified (which reaches this machine too), IPv4-mapped forms included."""
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback or ip.is_unspecified


def own_port_reason(port: int) -> str:
    return (
        f"port {port} on this machine is the browser's own DevTools or proxy port, never reachable from a "
        "page (allowed_private_hosts does not change that)"
    )


def check_navigation(url: str, guard: HostGuard, local_ports: frozenset[int] = frozenset()) -> None:
    """Refuse a navigation target before the browser sees it: only http(s) to allowed hosts and about:blank."""
    if url == "about:blank":
        return
    scheme = url.split(":", 1)[0].lower() if ":" in url else ""
    if scheme not in ("http", "https"):
        raise ToolError(
            "navigation_blocked",
            f"the browser opens only http://, https:// and about:blank URLs, not {scheme or 'this'}:",
            {"url": url[:200], "reason": "unsupported_scheme"},
            exit_class=ExitClass.REFUSED,
        )
    why = judge(url, guard, local_ports)
    if why is not None:
        raise navigation_blocked(url, why)


def navigation_blocked(url: str, why: str) -> ToolError:
    return ToolError(
        "navigation_blocked",
        f"navigation to {url[:200]} refused by the network guard: {why}",
        {"url": url[:200]},
        exit_class=ExitClass.REFUSED,
    )
