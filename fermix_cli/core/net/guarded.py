"""The guarded HTTP client every fermix request goes through: `guarded_client()`.

Building a client is the only step that imports httpx, so this module imports the client and transport
modules inside the factory; `guard` (the rules) sits below it and never imports them.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING

from fermix_cli.core.net.guard import DEFAULT_MAX_BODY, HostGuard, Resolver

if TYPE_CHECKING:
    import ssl

    import httpcore

    from fermix_cli.core.net.httpclient import GuardedClient


def guarded_client(
    *,
    allowed_private_hosts: Iterable[str] = (),
    resolver: Resolver | None = None,
    max_body: int = DEFAULT_MAX_BODY,
    user_agent: str | None = None,
    follow_redirects: bool = True,
    max_redirects: int = 5,
    connect_timeout: float = 3.0,
    read_timeout: float = 15.0,
    total_timeout: float | None = 60.0,
    verify: ssl.SSLContext | None = None,
    socket_backend: httpcore.NetworkBackend | None = None,
) -> GuardedClient:
    """The HTTP client every fermix request goes through; close it (or use `with`) when done.

    `max_body` caps decoded response bytes; `total_timeout` bounds a whole exchange including redirects
    and body (None: no overall bound, for long model streams). `verify` replaces the certifi trust
    store; `socket_backend` opens sockets to addresses the guard has already approved (a test seam).
    The user agent defaults to `fermix/<version>`.
    """
    if "httpx" not in sys.modules:
        # httpx imports its optional command line (rich, click, pygments: ~90 ms) when they are installed;
        # fermix never uses it, so a machine call that sends a request does not pay for it.
        sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
    from fermix_cli.core.net.httpclient import GuardedClient, NetLimits

    guard = HostGuard(allowed_private_hosts, resolver)
    limits = NetLimits(
        max_body=max_body,
        max_redirects=max_redirects if follow_redirects else 0,
        connect_timeout=connect_timeout,
        read_timeout=read_timeout,
        total_timeout=total_timeout,
    )
    return GuardedClient(
        guard,
        limits=limits,
        follow_redirects=follow_redirects,
        user_agent=user_agent,
        verify=verify,
        socket_backend=socket_backend,
    )
