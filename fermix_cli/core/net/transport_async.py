"""The async twin of `transport.GuardedTransport`, for async HTTP clients (the MCP SDK's).

Generated from `transport.py` by `python -m fermix_cli.build docs` (fermix_cli/build/unasync.py);
do not edit: change `transport.py` and regenerate.

Same rules, same judge: the URL is checked and the host judged on every request (`check_url`,
`HostGuard.addresses`), and below httpcore's connection pool every new connection is resolved once,
judged, and opened to an approved address only, within one connect deadline for all of a host's
addresses. Name resolution runs in a worker thread so the event loop never blocks on DNS. Imported only
when an async client is built.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterable, AsyncIterator, Iterable
from typing import Any

import anyio
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


class AsyncPinnedBackend(httpcore.AsyncNetworkBackend):
    """An httpcore network backend that connects only to addresses the `HostGuard` approved."""

    def __init__(self, guard: HostGuard, socket_backend: httpcore.AsyncNetworkBackend | None = None) -> None:
        self._guard = guard
        self._sockets = socket_backend or httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = await anyio.to_thread.run_sync(self._guard.addresses, host)
        deadline = connect_deadline(timeout)
        failure: Exception | None = None
        # Try each approved answer in resolver order within one connect budget; never the name itself.
        for address in addresses:
            try:
                return await self._sockets.connect_tcp(
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

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[Any] | None = None
    ) -> httpcore.AsyncNetworkStream:
        raise blocked_url_error(
            "unix_socket", "unix sockets are not reachable through the network guard", path=path
        )

    async def sleep(self, seconds: float) -> None:
        await anyio.sleep(seconds)


class _AsyncGuardedByteStream(httpx.AsyncByteStream):
    """The raw response body, with httpcore failures turned into `network` ToolErrors."""

    def __init__(self, stream: AsyncIterable[bytes], request: httpx.Request) -> None:
        self._stream = stream
        self._request = request

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._stream:
                yield chunk
        except (httpcore.TimeoutException, httpcore.NetworkError, httpcore.ProtocolError) as exc:
            raise network_error(exc, self._request) from exc

    async def aclose(self) -> None:
        close = getattr(self._stream, "aclose", None)
        if close is not None:
            await close()


class AsyncGuardedTransport(httpx.AsyncBaseTransport):
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
        socket_backend: httpcore.AsyncNetworkBackend | None = None,
        max_connections: int = 10,
        keepalive_expiry: float = 5.0,
        judge_each_request: bool = True,
    ) -> None:
        self._judge_each_request = judge_each_request
        # trust_env=False: SSL_CERT_FILE / SSL_CERT_DIR from the environment are ignored.
        self._guard = guard
        ssl_context = verify or httpx.create_ssl_context(trust_env=False)
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context,
            max_connections=max_connections,
            keepalive_expiry=keepalive_expiry,
            http1=True,
            http2=False,
            retries=0,
            network_backend=AsyncPinnedBackend(guard, socket_backend),
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        check_url(str(request.url))
        # Judge the host on every request, even one that will reuse a pooled connection: a name that now
        # resolves to a private address is refused although the open connection goes to a checked one.
        if self._judge_each_request:
            await anyio.to_thread.run_sync(self._guard.addresses, request.url.host)
        assert isinstance(request.stream, httpx.AsyncByteStream)
        core_request = to_core_request(request)
        with core_errors(request):
            core_response = await self._pool.handle_async_request(core_request)
        assert isinstance(core_response.stream, AsyncIterable)
        return httpx.Response(
            status_code=core_response.status,
            headers=core_response.headers,
            stream=_AsyncGuardedByteStream(core_response.stream, request),
            extensions=core_response.extensions,
            request=request,
        )

    async def aclose(self) -> None:
        await self._pool.aclose()
