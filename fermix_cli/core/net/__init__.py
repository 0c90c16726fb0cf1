"""The network guard, shared by every family that talks HTTP: one transport judges every connection.

- `guard`: URL and host checks, the allowed-private-hosts table.
- `guarded`: `guarded_client()`, the factory every request starts from.
- `iptable`: the explicit table of non-global address ranges.
- `transport`: the httpx transport that resolves, judges and pins each connection; `transport_async` is
  generated from it (`fermix_cli/build/unasync.py`). `exchange`: what the two share.
- `httpclient`: `GuardedClient`, redirects followed by fermix with per-exchange time limits.
- `response`: reading a guarded response under size and decompression caps.
- `following`: `FollowingTransport`, the same redirect and decoding rules for a stock httpx client.
- `deadline`: the exchange's total deadline, enforced on every socket wait (headers included).
- `socketguard`: `guarded_sockets()`, the same rules at the socket for a library with its own network
  stack (Apprise): every resolve and connect in the calling thread is judged while the block runs.

httpx is imported only by `httpclient`, `response` and the transports, so importing this package is free.
"""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .guard import HostGuard, blocked_url_error, check_url
    from .guarded import guarded_client
    from .httpclient import GuardedClient

_EXPORTS = {
    "HostGuard": "guard",
    "blocked_url_error": "guard",
    "check_url": "guard",
    "guarded_client": "guarded",
    "GuardedClient": "httpclient",
}

__all__ = [
    "GuardedClient",
    "HostGuard",
    "blocked_url_error",
    "check_url",
    "guarded_client",
]


def __getattr__(name: str) -> Any:  # PEP 562: submodules load on first use
    if name in _EXPORTS:
        return getattr(import_module(f"{__name__}.{_EXPORTS[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
