"""The guarded httpx transport: hosts judged on every request and connection, connections pinned.

Imported only when a client is built (`net.client.guarded_client`), so it may import httpx at the top.

The host is judged twice: per request in `GuardedTransport.handle_request` (so a name that rebinds to a
private address is refused even when a pooled connection exists), and per connection, where pinning
happens below httpcore's connection pool, in its network backend: httpcore asks to connect to
`(host, port)`, and `PinnedBackend` resolves `host` once, judges every answer, then opens the socket to
an approved address. The request URL keeps its host name, so the `Host` header, TLS SNI and certificate
verification all use the original name, and the pool keys connections by name. (Rewriting the URL to
the IP and passing `sni_hostname` would also pin, but would pool TLS connections by IP, so a second host
on the same IP could reuse a connection whose certificate was checked for the first.)

`transport_async` is generated from this file (`fermix_cli/build/unasync.py`, run by
`python -m fermix_cli.build docs`): edit this one and regenerate, so the two cannot drift.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Iterable, Iterator
from typing import Any

import httpcore
import httpx

from fermix_cli.core.net.exchange import (
    connect_deadline,
    core_errors,
    network_error,
    time_left,
    to_core_request,
)
from fermix_cli.core.net.guard import HostGuard, blocked_url_error, check_url


class PinnedBackend(httpcore.NetworkBackend):
    """An httpcore network backend that connects only to addresses the `HostGuard` approved."""

    def __init__(self, guard: HostGuard, socket_backend: httpcore.NetworkBackend | None = None) -> None:
        self._guard = guard
        self._sockets = socket_backend or httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        addresses = self._guard.addresses(host)
        deadline = connect_deadline(timeout)
        failure: Exception | None = None
        # Try each approved answer in resolver order within one connect budget; never the name itself.
        for address in addresses:
            try:
                return self._sockets.connect_tcp(
                    address,
                    port,
                    timeout=time_left(deadline),
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                failure = exc
        assert failure is not None  # addresses() never returns an empty list
        raise failure

    def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.NetworkStream:
        raise blocked_url_error(
            "unix_socket", "unix sockets are not reachable through the network guard", path=path
        )

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


class _GuardedByteStream(httpx.SyncByteStream):
    """The raw response body, with httpcore failures turned into `network` ToolErrors."""

    def __init__(self, stream: Iterable[bytes], request: httpx.Request) -> None:
        self._stream = stream
        self._request = request

    def __iter__(self) -> Iterator[bytes]:
        try:
            yield from self._stream
        except (httpcore.TimeoutException, httpcore.NetworkError, httpcore.ProtocolError) as exc:
            raise network_error(exc, self._request) from exc

    def close(self) -> None:
        close = getattr(self._stream, "close", None)
        if close is not None:
            close()


class GuardedTransport(httpx.BaseTransport):
    """The httpx transport for every fermix request: URL and address checks per request and per connection.

    No proxies, no retries, HTTP/1.1. Failures raise `ToolError` (`blocked_url` or `network`), also when
    the transport is mounted in a plain httpx client. `verify` replaces the certifi trust store.
    `judge_each_request=False` is for callers that judge every request themselves (`GuardedClient`);
    new connections are judged and pinned regardless.
    """

    def __init__(
        self,
        guard: HostGuard,
        *,
        verify: ssl.SSLContext | None = None,
        socket_backend: httpcore.NetworkBackend | None = None,
        max_connections: int = 10,
        keepalive_expiry: float = 5.0,
        judge_each_request: bool = True,
    ) -> None:
        self._judge_each_request = judge_each_request
        # trust_env=False: SSL_CERT_FILE / SSL_CERT_DIR from the environment are ignored.
        self._guard = guard
        ssl_context = verify or httpx.create_ssl_context(trust_env=False)
        self._pool = httpcore.ConnectionPool(
            ssl_context=ssl_context,
            max_connections=max_connections,
            keepalive_expiry=keepalive_expiry,
            http1=True,
            http2=False,
            retries=0,
            network_backend=PinnedBackend(guard, socket_backend),
        )

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        check_url(str(request.url))
        # Judge the host on every request, even one that will reuse a pooled connection: a name that now
        # resolves to a private address is refused although the open connection goes to a checked one.
        if self._judge_each_request:
            self._guard.addresses(request.url.host)
        assert isinstance(request.stream, httpx.SyncByteStream)
        core_request = to_core_request(request)
        with core_errors(request):
            core_response = self._pool.handle_request(core_request)
        assert isinstance(core_response.stream, Iterable)
        return httpx.Response(
            status_code=core_response.status,
            headers=core_response.headers,
            stream=_GuardedByteStream(core_response.stream, request),
            extensions=core_response.extensions,
            request=request,
        )

    def close(self) -> None:
        self._pool.close()
