"""The async guarded transport (used by the MCP SDK's HTTP clients): the same judge as the sync one."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import anyio
import httpcore
import httpx
import pytest
from pytest_httpserver import HTTPServer

from fermix_cli.core.errors import ToolError
from fermix_cli.core.net.guard import HostGuard
from fermix_cli.core.net.transport import PinnedBackend
from fermix_cli.core.net.transport_async import AsyncGuardedTransport, AsyncPinnedBackend


@pytest.fixture
def httpserver() -> Iterator[HTTPServer]:
    server = HTTPServer(host="127.0.0.1", port=0)
    server.start()
    yield server
    server.clear()
    server.stop()


def local(server: HTTPServer, path: str) -> str:
    return f"http://127.0.0.1:{server.port}{path}"


def fetch(url: str, allowed: list[str]) -> Any:
    async def main() -> Any:
        transport = AsyncGuardedTransport(HostGuard(allowed))
        async with httpx.AsyncClient(transport=transport, follow_redirects=True, trust_env=False) as client:
            response = await client.get(url)
            return response.status_code, await response.aread()

    return anyio.run(main)


def test_loopback_refused_unless_allowed(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/ok").respond_with_data("fine")
    url = local(httpserver, "/ok")
    with pytest.raises(ToolError) as e:
        fetch(url, [])
    assert e.value.code == "blocked_url" and e.value.details["reason"] == "non_global_address"
    assert fetch(url, ["127.0.0.1"]) == (200, b"fine")


def test_redirect_to_a_blocked_host_is_refused(httpserver: HTTPServer) -> None:
    httpserver.expect_request("/hop").respond_with_data(
        "", status=302, headers={"Location": "http://10.1.2.3/x"}
    )
    with pytest.raises(ToolError) as e:
        fetch(local(httpserver, "/hop"), ["127.0.0.1"])
    assert e.value.code == "blocked_url" and e.value.details["ip"] == "10.1.2.3"


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("ftp://example.com/", "unsupported_scheme"),
        ("http://user:pw@example.com/", "userinfo"),
        ("http://localhost/", "blocked_name"),
    ],
)
def test_urls_refused_before_any_connection(url: str, reason: str) -> None:
    with pytest.raises((ToolError, httpx.UnsupportedProtocol)) as e:
        fetch(url, [])
    if isinstance(e.value, ToolError):
        assert e.value.details["reason"] == reason


# ----- one connect deadline for all of a host's addresses, in both transports ---------------------------

BLACKHOLED = ["93.184.216.34", "93.184.216.35", "2606:2800:220:1:248:1893:25c8:1946"]
BUDGET = 0.3


def blackholed_guard() -> HostGuard:
    return HostGuard(resolver=lambda host: BLACKHOLED if host == "blackhole.test" else [])


class BlackholeSockets(httpcore.NetworkBackend):
    """Every address swallows the SYN: a connect waits out its whole timeout, then fails."""

    def __init__(self) -> None:
        self.tried: list[tuple[str, float | None]] = []

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, **_: Any) -> Any:
        self.tried.append((host, timeout))
        time.sleep(timeout or 0)
        raise httpcore.ConnectTimeout(f"{host} did not answer")


class AsyncBlackholeSockets(httpcore.AsyncNetworkBackend):
    def __init__(self) -> None:
        self.tried: list[tuple[str, float | None]] = []

    async def connect_tcp(self, host: str, port: int, timeout: float | None = None, **_: Any) -> Any:
        self.tried.append((host, timeout))
        await anyio.sleep(timeout or 0)
        raise httpcore.ConnectTimeout(f"{host} did not answer")


def connect_sync() -> list[tuple[str, float | None]]:
    sockets = BlackholeSockets()
    with pytest.raises(httpcore.ConnectTimeout):
        PinnedBackend(blackholed_guard(), sockets).connect_tcp("blackhole.test", 443, timeout=BUDGET)
    return sockets.tried


def connect_async() -> list[tuple[str, float | None]]:
    sockets = AsyncBlackholeSockets()

    async def main() -> None:
        with pytest.raises(httpcore.ConnectTimeout):
            await AsyncPinnedBackend(blackholed_guard(), sockets).connect_tcp(
                "blackhole.test", 443, timeout=BUDGET
            )

    anyio.run(main)
    return sockets.tried


@pytest.mark.parametrize("connect", [connect_sync, connect_async], ids=["sync", "async"])
def test_one_connect_deadline_is_spread_across_the_addresses(connect: Any) -> None:
    t0 = time.monotonic()
    tried = connect()
    elapsed = time.monotonic() - t0
    # Every approved address is tried, in resolver order, but all of them within one budget: the first
    # takes it all, the others get what is left (next to nothing), not a fresh timeout each.
    assert [host for host, _ in tried] == BLACKHOLED
    timeouts = [t for _, t in tried]
    assert all(t is not None for t in timeouts)
    assert timeouts[0] == pytest.approx(BUDGET, abs=0.05)
    assert all(t is not None and t < 0.05 for t in timeouts[1:])
    assert elapsed < BUDGET * 2, f"{len(tried)} addresses took {elapsed:.2f} s for a {BUDGET} s budget"


def test_the_async_transport_is_generated_from_the_sync_one() -> None:
    from fermix_cli.build.unasync import SOURCE, TARGET, unasync
    from tests.conftest import REPO

    assert (REPO / TARGET).read_text() == unasync((REPO / SOURCE).read_text())
    assert "do not edit" in (REPO / TARGET).read_text().split('"""')[1]
