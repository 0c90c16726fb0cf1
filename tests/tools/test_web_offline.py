"""Offline is not forbidden: failing to reach a host is exit 1 with its own code, never a refusal.

Through the real CLI: a host name that cannot resolve (`.invalid`, RFC 6761) and a closed port on
127.0.0.1, against web_fetch, web_search (a keyed backend falls back to DuckDuckGo) and place_search
(no fallback, as the seed says). A policy refusal stays exit 3, as the control rows show.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import Env
from tests.tools.webfakes import ENDPOINTS, FakeWeb, configure, ddg_page, html_reply, running

DDG_ROWS = [("https://ddg.example.org/p", "From DDG", "fallback row")]
FALLBACK = [{"title": "From DDG", "url": "https://ddg.example.org/p", "snippet": "fallback row"}]
KEY = "test-key-0123456789"


@pytest.fixture
def web(world: Env, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeWeb]:
    with running(monkeypatch) as server:
        server.routes[ENDPOINTS["duckduckgo_url"]] = html_reply(ddg_page(DDG_ROWS))
        yield server


def _dead_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _unreachable(kind: str, path: str = "/x") -> str:
    return (
        f"http://nowhere-{kind}.invalid{path}" if kind == "dns" else f"http://127.0.0.1:{_dead_port()}{path}"
    )


CODE = {"dns": "dns_failure", "port": "connect_failed"}


@pytest.mark.parametrize("kind", ["dns", "port"])
def test_web_fetch_of_an_unreachable_host_is_a_tool_failure(world: Env, web: FakeWeb, kind: str) -> None:
    configure(world, web)
    r = world.tool("web_fetch", {"url": _unreachable(kind)})
    assert (r.code, r.error()["code"]) == (1, CODE[kind]), r
    assert r.stdout == ""


@pytest.mark.parametrize("backend", ["brave", "tavily"])
@pytest.mark.parametrize("kind", ["dns", "port"])
def test_web_search_with_an_unreachable_keyed_backend_falls_back(
    world: Env, web: FakeWeb, kind: str, backend: str
) -> None:
    url = _unreachable(kind, ENDPOINTS[f"{backend}_url"])
    configure(world, web, web_search={"backend": backend, f"{backend}_api_key": KEY, f"{backend}_url": url})
    r = world.tool("web_search", {"query": "pinning"})
    assert r.code == 0, r
    result = json.loads(r.stdout)
    assert result["results"] == FALLBACK
    assert result["metadata"]["degraded"] is True
    assert result["metadata"]["fallback_reason"].startswith(CODE[kind] + ": ")


@pytest.mark.parametrize("kind", ["dns", "port"])
def test_web_search_offline_without_a_fallback_left_fails_with_exit_1(
    world: Env, web: FakeWeb, kind: str
) -> None:
    configure(world, web, web_search={"duckduckgo_url": _unreachable(kind, "/html/")})
    r = world.tool("web_search", {"query": "pinning"})
    assert (r.code, r.error()["code"]) == (1, CODE[kind]), r


@pytest.mark.parametrize("kind", ["dns", "port"])
def test_place_search_offline_fails_with_exit_1_and_no_fallback(world: Env, web: FakeWeb, kind: str) -> None:
    url = _unreachable(kind, ENDPOINTS["brave_place_url"])
    configure(world, web, web_search={"brave_api_key": KEY, "brave_place_url": url})
    r = world.tool("place_search", {"query": "coffee", "location": "Berlin"})
    assert (r.code, r.error()["code"]) == (1, CODE[kind]), r
    assert web.hits_on(ENDPOINTS["duckduckgo_url"]) == []


@pytest.mark.parametrize(
    ("tool", "args"),
    [
        ("web_fetch", {"url": "http://10.0.0.5/"}),
        ("web_fetch", {"url": "http://localhost/"}),
        ("web_fetch", {"url": "http://[::1]/"}),
    ],
)
def test_a_policy_refusal_stays_exit_3(world: Env, web: FakeWeb, tool: str, args: dict[str, Any]) -> None:
    configure(world, web, allow_local=False)
    r = world.tool(tool, args)
    assert (r.code, r.error()["code"]) == (3, "blocked_url"), r
