"""The async twin of `nettransport.GuardedTransport`, for async HTTP clients (the MCP SDK's).

Same rules, same judge: the URL is checked and the host judged on every request (`check_url`,
`HostGuard.addresses`), and below httpcore's connection pool every new connection is resolved once,
judged, and opened to an approved address only. Name resolution runs in a worker thread so the event
loop never blocks on DNS. Imported only when an async client is built.
"""

from __future__ import annotations

import ssl
from collections.abc import AsyncIterable, AsyncIterator, Iterable
from typing import Any

import anyio
import httpcore
import httpx

from fermix_cli.core.net.guard import HostGuard, blocked_url_error, check_url
from fermix_cli.core.net.transport import core_errors, network_error, to_core_request


class AsyncPinnedBackend(httpcore.AsyncNetworkBackend):
    """Connects only to addresses the `HostGuard` approved for the requested host."""

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
        failure: Exception | None = None
        for address in addresses:
            try:
                return await self._sockets.connect_tcp(
                    address, port, timeout=timeout, local_address=local_address, socket_options=socket_options
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
    """Every request judged, every connection pinned; HTTP/1.1, no proxies, no retries."""

    def __init__(
        self,
        guard: HostGuard,
        *,
        verify: ssl.SSLContext | None = None,
        socket_backend: httpcore.AsyncNetworkBackend | None = None,
        max_connections: int = 10,
    ) -> None:
        self._guard = guard
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=verify or httpx.create_ssl_context(trust_env=False),
            max_connections=max_connections,
            http1=True,
            http2=False,
            retries=0,
            network_backend=AsyncPinnedBackend(guard, socket_backend),
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        check_url(str(request.url))
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


def guarded_async_client(
    *,
    allowed_private_hosts: Iterable[str] = (),
    headers: dict[str, str] | None = None,
    timeout: httpx.Timeout | None = None,
    auth: httpx.Auth | None = None,
) -> httpx.AsyncClient:
    """An `httpx.AsyncClient` whose every request goes through the network guard (redirects included)."""
    transport = AsyncGuardedTransport(HostGuard(allowed_private_hosts))
    return httpx.AsyncClient(
        transport=transport,
        headers=headers,
        timeout=timeout if timeout is not None else httpx.Timeout(30.0, read=300.0),
        auth=auth,
        follow_redirects=True,
        max_redirects=5,
        trust_env=False,
    )
