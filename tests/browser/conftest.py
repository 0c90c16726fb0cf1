"""Fixtures for the browser tests: one real headless Chromium per test module, pages on 127.0.0.1.

Chromium start-up is the expensive part on a shared machine, so each module starts one browser
(module-scoped) and its tests share it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from http.server import ThreadingHTTPServer

import pytest

from tests.browser.browser_world import BrowserWorld, Site, make_world, serve


@pytest.fixture(scope="module")
def browser_world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrowserWorld]:
    """One world with a running browser for the whole module; stopped (and killed if need be) after."""
    config = '[fermix_core.net]\nallowed_private_hosts = ["127.0.0.1"]\n[fermix_core.browser]\nmax_tabs = 4\n'
    world = make_world(tmp_path_factory.mktemp("browser"), config)
    world.call({"action": "start"})
    yield world
    world.call({"action": "stop"})


@pytest.fixture(scope="module")
def page_server(request: pytest.FixtureRequest) -> Iterator[Callable[..., Site]]:
    servers: list[ThreadingHTTPServer] = []

    def start(pages: dict[str, tuple[int, dict[str, str], bytes]]) -> Site:
        site, server = serve(pages)
        servers.append(server)
        return site

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()
