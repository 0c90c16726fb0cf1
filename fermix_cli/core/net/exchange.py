"""What the sync and async guarded transports share: the request handed to httpcore, its failures as
fermix's, and the one connect deadline spread over a host's approved addresses.

Imported only when a client is built, so it may import httpx at the top.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator

import httpcore
import httpx

from fermix_cli.core.errors import ToolError
from fermix_cli.core.net.guard import blocked_url_error, redact_url

MIN_CONNECT_SECONDS = 0.001
"""What an address still gets once the connect budget is spent (httpcore reads 0 as "no time at all")."""


def connect_deadline(timeout: float | None) -> float | None:
    """The monotonic time by which a connection must be open: one budget for all of a host's addresses."""
    return None if timeout is None else time.monotonic() + timeout


def time_left(deadline: float | None) -> float | None:
    """The connect timeout for the next address: what is left of the budget (never quite zero)."""
    return None if deadline is None else max(deadline - time.monotonic(), MIN_CONNECT_SECONDS)


def to_core_request(request: httpx.Request) -> httpcore.Request:
    """The httpcore request for an httpx one, for the guarded transports (sync and async)."""
    # SNI and certificate checks must use the URL's own host, so a caller cannot override them.
    extensions = {k: v for k, v in request.extensions.items() if k != "sni_hostname"}
    return httpcore.Request(
        method=request.method,
        url=httpcore.URL(
            scheme=request.url.raw_scheme,
            host=request.url.raw_host,
            port=request.url.port,
            target=request.url.raw_path,
        ),
        headers=request.headers.raw,
        content=request.stream,
        extensions=extensions,
    )


@contextlib.contextmanager
def core_errors(request: httpx.Request) -> Iterator[None]:
    """httpcore's failures as fermix's (`timeout`, `connect_failed`, `network`) or `unsupported_scheme`."""
    try:
        yield
    except (httpcore.TimeoutException, httpcore.NetworkError, httpcore.ProtocolError) as exc:
        raise network_error(exc, request) from exc
    except httpcore.UnsupportedProtocol as exc:
        raise blocked_url_error("unsupported_scheme", str(exc), url=str(request.url)) from exc


def network_error(exc: Exception, request: httpx.Request) -> ToolError:
    """The ToolError for an httpcore failure: `timeout` (naming which), `connect_failed` or `network`."""
    timeouts = request.extensions.get("timeout", {})
    host = request.url.host
    details = {"url": redact_url(str(request.url)), "error": type(exc).__name__}
    code = "timeout" if isinstance(exc, httpcore.TimeoutException) else "network"
    if isinstance(exc, httpcore.ConnectTimeout):
        message = f"connect timeout: {host} did not accept a connection within {timeouts.get('connect')} s"
    elif isinstance(exc, httpcore.ReadTimeout):
        message = f"read timeout: {host} sent nothing for {timeouts.get('read')} s"
    elif isinstance(exc, httpcore.WriteTimeout):
        message = f"write timeout: {host} accepted nothing for {timeouts.get('write')} s"
    elif isinstance(exc, httpcore.PoolTimeout):
        message = f"timed out waiting for a free connection to {host}"
    elif isinstance(exc, httpcore.ConnectError):
        # A TLS failure (certificate, handshake) reached the host: it stays `network`.
        code = "network" if _tls_failure(exc) else "connect_failed"
        message = f"could not connect to {host}: {exc or 'connection failed'}"
    else:
        message = f"connection to {host} failed ({type(exc).__name__}: {exc})"
    return ToolError(code, message, details)


def _tls_failure(exc: BaseException) -> bool:
    import ssl

    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return False
        if isinstance(seen, ssl.SSLError):
            return True
        seen = seen.__cause__ or seen.__context__
    return False
