"""The async guarded transport (used by the MCP SDK's HTTP clients): the same judge as the sync one."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import httpx
import pytest
from pytest_httpserver import HTTPServer

from fermix_cli.core.errors import ToolError
from fermix_cli.core.net.transport_async import guarded_async_client


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
        async with guarded_async_client(allowed_private_hosts=allowed) as client:
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
