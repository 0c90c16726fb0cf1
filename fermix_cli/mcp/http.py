"""The HTTP client the MCP SDK gets for a URL server: `httpx2` on the outside, fermix's network guard inside.

The SDK (mcp 2.x) speaks `httpx2`, a fork of httpx with its own types, and refuses httpx objects. fermix
judges every request with its guarded httpx transport (`core.net.transport_async`), so this bridge hands
each httpx2 request to that transport and streams the raw answer back as an httpx2 response: one guard,
one set of rules, whatever the client library. Redirects are left to the SDK (it follows them only
within the endpoint's origin), and each of them passes through here, so the guard judges it too.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx
    import httpx2

MCP_TIMEOUT_S = 30.0
MCP_READ_TIMEOUT_S = 300.0  # a server may hold a response stream open


def guarded_httpx2_client(
    allowed_private_hosts: Iterable[str],
    *,
    headers: dict[str, str] | None = None,
    timeout: Any = None,
    auth: Any = None,
) -> httpx2.AsyncClient:
    """An `httpx2.AsyncClient` whose every request goes through fermix's network guard."""
    import httpx2

    from ..core.net.guard import HostGuard
    from ..core.net.transport_async import AsyncGuardedTransport

    inner = AsyncGuardedTransport(HostGuard(allowed_private_hosts))
    return httpx2.AsyncClient(
        transport=_bridge_class()(inner),
        headers=headers,
        timeout=timeout if timeout is not None else httpx2.Timeout(MCP_TIMEOUT_S, read=MCP_READ_TIMEOUT_S),
        auth=auth,
        trust_env=False,
    )


_BRIDGE: Any = None


def _bridge_class() -> Any:
    """The bridge transport class, defined on first use so importing this module loads neither library."""
    global _BRIDGE
    if _BRIDGE is not None:
        return _BRIDGE
    import httpx
    import httpx2

    class Body(httpx2.AsyncByteStream):
        def __init__(self, response: httpx.Response) -> None:
            self._response = response

        async def __aiter__(self) -> AsyncIterator[bytes]:
            stream = self._response.stream
            assert isinstance(stream, httpx.AsyncByteStream)
            async for chunk in stream:
                yield chunk

        async def aclose(self) -> None:
            await self._response.aclose()

    class GuardBridge(httpx2.AsyncBaseTransport):
        """httpx2 requests through an httpx transport (fermix's guarded one); raw bodies both ways."""

        def __init__(self, inner: httpx.AsyncBaseTransport) -> None:
            self._inner = inner

        async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
            body = await request.aread()  # MCP requests are small JSON-RPC messages
            timeout = request.extensions.get("timeout")
            out = httpx.Request(
                request.method,
                str(request.url),
                headers=list(request.headers.raw),
                content=body,
                extensions={"timeout": timeout} if timeout is not None else {},
            )
            response = await self._inner.handle_async_request(out)
            keep = ("http_version", "reason_phrase")
            return httpx2.Response(
                status_code=response.status_code,
                headers=list(response.headers.raw),
                stream=Body(response),
                extensions={k: v for k, v in response.extensions.items() if k in keep},
                request=request,
            )

        async def aclose(self) -> None:
            await self._inner.aclose()

    _BRIDGE = GuardBridge
    return _BRIDGE
