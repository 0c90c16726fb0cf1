"""Local stand-ins for the web: a small HTTP server on 127.0.0.1 and a fermix home configured to use it.

Each fake answers in the wire format of the service it replaces (DuckDuckGo's HTML page, Brave's, Exa's,
... JSON). The server records every request, so a test can assert that nothing was sent.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import tomli_w

from tests.conftest import Env

KEY_VARS = (
    "BRAVE_API_KEY",
    "BRAVE_SEARCH_API_KEY",
    "EXA_API_KEY",
    "FIRECRAWL_API_KEY",
    "PARALLEL_API_KEY",
    "PERPLEXITY_API_KEY",
    "TAVILY_API_KEY",
)


@dataclass
class Reply:
    """What the fake sends: a status, headers and a body (optionally in chunks, slowly, or after a pause)."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # before the status line
    chunks: list[bytes] | None = None  # chunked transfer encoding, no Content-Length
    chunk_delay: float = 0.0


def json_reply(data: Any, status: int = 200, headers: dict[str, str] | None = None) -> Reply:
    return Reply(status, json.dumps(data).encode(), {"Content-Type": "application/json", **(headers or {})})


def html_reply(html: str | bytes, status: int = 200, content_type: str = "text/html; charset=utf-8") -> Reply:
    body = html.encode() if isinstance(html, str) else html
    return Reply(status, body, {"Content-Type": content_type})


@dataclass
class Hit:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)

    def form(self) -> dict[str, list[str]]:
        return parse_qs(self.body.decode())


Route = Callable[[Hit], Reply] | Reply


class FakeWeb:
    """A threaded HTTP/1.1 server on 127.0.0.1 with a route per path; every request lands in `hits`."""

    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        self.hits: list[Hit] = []
        owner = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _serve(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                parts = urlsplit(self.path)
                hit = Hit(
                    self.command,
                    parts.path,
                    parse_qs(parts.query),
                    {k.lower(): v for k, v in self.headers.items()},
                    body,
                )
                owner.hits.append(hit)
                route = owner.routes.get(parts.path)
                reply = Reply(404, b"no such route") if route is None else route
                if callable(reply):
                    reply = reply(hit)
                # The client may give up on purpose (caps and timeouts).
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    owner._send(self, reply)

            do_GET = do_POST = _serve

            def log_message(self, format: str, *args: Any) -> None:
                pass

        class Server(http.server.ThreadingHTTPServer):
            daemon_threads = True

            def handle_error(self, request: Any, client_address: Any) -> None:
                # A client that hangs up between keep-alive requests is normal here (caps, timeouts).
                if not isinstance(sys.exc_info()[1], ConnectionError):
                    super().handle_error(request, client_address)

        self._server = Server(("127.0.0.1", 0), Handler)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05})
        self._thread.daemon = True
        self._thread.start()

    @staticmethod
    def _send(h: http.server.BaseHTTPRequestHandler, reply: Reply) -> None:
        if reply.delay:
            time.sleep(reply.delay)
        h.send_response(reply.status)
        for name, value in reply.headers.items():
            h.send_header(name, value)
        if reply.chunks is not None:
            h.send_header("Transfer-Encoding", "chunked")
            h.end_headers()
            for chunk in reply.chunks:
                if reply.chunk_delay:
                    time.sleep(reply.chunk_delay)
                h.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                h.wfile.flush()
            h.wfile.write(b"0\r\n\r\n")
        else:
            h.send_header("Content-Length", str(len(reply.body)))
            h.end_headers()
            h.wfile.write(reply.body)

    def url(self, path: str = "/") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def hits_on(self, path: str) -> list[Hit]:
        return [h for h in self.hits if h.path == path]

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@contextlib.contextmanager
def running(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeWeb]:
    """A fake server for one test, with every search-provider key removed from the environment."""
    for name in KEY_VARS:
        monkeypatch.delenv(name, raising=False)
    server = FakeWeb()
    try:
        yield server
    finally:
        server.close()


ENDPOINTS = {
    "duckduckgo_url": "/ddg/html/",
    "brave_url": "/brave/res/v1/web/search",
    "brave_place_url": "/brave/res/v1/local/place_search",
    "exa_url": "/exa/search",
    "firecrawl_url": "/firecrawl/v1/search",
    "parallel_url": "/parallel/v1/search",
    "perplexity_url": "/perplexity/search",
    "tavily_url": "/tavily/search",
}


def configure(
    world: Env,
    server: FakeWeb,
    *,
    allow_local: bool = True,
    web_search: dict[str, Any] | None = None,
) -> None:
    """Write config.toml: 127.0.0.1 allowed (unless told not to) and every backend pointed at the fake."""
    section: dict[str, Any] = {key: server.url(path) for key, path in ENDPOINTS.items()}
    section.update(web_search or {})
    data: dict[str, Any] = {
        "fermix_core": {
            "net": {"allowed_private_hosts": ["127.0.0.1"] if allow_local else []},
            "tools": {"web_search": section, "web": {"exa_url": server.url("/exa/search")}},
        }
    }
    world.fermix_home.mkdir(parents=True, exist_ok=True)
    (world.fermix_home / "config.toml").write_text(tomli_w.dumps(data))


# ----- real-format payloads ----------------------------------------------------------------------


def ddg_page(rows: list[tuple[str, str, str]], *, ads: tuple[tuple[str, str], ...] = ()) -> str:
    """A DuckDuckGo HTML results page: (href, title, snippet) rows, ad rows first."""
    parts = [
        '<!DOCTYPE html><html><head><title>q at DuckDuckGo</title></head><body><div id="links" class="results">'
    ]
    for href, title in ads:
        parts.append(
            '<div class="result results_links results_links_deep result--ad ">'
            '<div class="links_main links_deep result__body"><h2 class="result__title">'
            f'<a rel="nofollow" class="result__a" href="{href}">{title}</a>'
            '<button class="badge--ad">Ad</button></h2>'
            f'<a class="result__snippet" href="{href}">Sponsored</a></div></div>'
        )
    for href, title, snippet in rows:
        parts.append(
            '<div class="result results_links results_links_deep web-result ">'
            '<div class="links_main links_deep result__body"><h2 class="result__title">'
            f'<a rel="nofollow" class="result__a" href="{href}">{title}</a></h2>'
            '<div class="result__extras"><div class="result__extras__url"><span class="result__icon">'
            '<img class="result__icon__img" width="16" height="16" alt="" src="//external-content.duckduckgo.com/ip3/x.ico" />'
            "</span></div></div>"
            f'<a class="result__snippet" href="{href}">{snippet}</a><div class="clear"></div></div></div>'
        )
    parts.append("</div></body></html>")
    return "".join(parts)


DDG_NO_RESULTS = (
    '<!DOCTYPE html><html><body><div id="links" class="results">'
    '<div class="no-results">No  results.</div></div></body></html>'
)
DDG_CHALLENGE = (
    "<!DOCTYPE html><html><head><title>DuckDuckGo</title></head><body>"
    '<form id="challenge-form" action="//duckduckgo.com/anomaly.js?sv=html&cc=botnet">'
    '<div class="anomaly-modal__title">Unfortunately, bots use DuckDuckGo too.</div>'
    '<img class="anomaly-modal__image" src="x"></form></body></html>'
)
DDG_CHANGED = (
    "<!DOCTYPE html><html><body><main><article><a href='https://x.org'>x</a></article></main></body></html>"
)


def brave_web(results: list[tuple[str, str, str]]) -> dict[str, Any]:
    return {
        "type": "search",
        "query": {"original": "q", "more_results_available": False},
        "web": {
            "type": "search",
            "results": [
                {
                    "title": t,
                    "url": u,
                    "description": d,
                    "meta_url": {"scheme": "https", "hostname": urlsplit(u).hostname},
                    "language": "en",
                }
                for u, t, d in results
            ],
            "family_friendly": True,
        },
        "mixed": {"type": "mixed", "main": [{"type": "web", "index": 0, "all": False}]},
    }


def brave_error(status: int, code: str, detail: str) -> Reply:
    return json_reply(
        {
            "type": "ErrorResponse",
            "error": {"id": "4f6e1c7e", "status": status, "code": code, "detail": detail, "meta": {}},
            "time": 1754364294,
        },
        status,
    )


def exa_results(results: list[tuple[str, str, str]]) -> dict[str, Any]:
    return {
        "requestId": "b5947044c4b78efa9552a7c89b306d95",
        "resolvedSearchType": "neural",
        "results": [
            {
                "id": u,
                "title": t,
                "url": u,
                "publishedDate": "2024-05-01T00:00:00.000Z",
                "author": None,
                "text": x,
            }
            for u, t, x in results
        ],
        "costDollars": {"total": 0.005},
    }


def tavily_results(results: list[tuple[str, str, str]]) -> dict[str, Any]:
    return {
        "query": "q",
        "answer": None,
        "images": [],
        "results": [
            {"title": t, "url": u, "content": c, "score": 0.9, "raw_content": None} for u, t, c in results
        ],
        "response_time": 1.2,
    }


def firecrawl_results(results: list[tuple[str, str, str]]) -> dict[str, Any]:
    return {"success": True, "data": [{"title": t, "url": u, "description": d} for u, t, d in results]}


def parallel_results(results: list[tuple[str, str, str]]) -> dict[str, Any]:
    return {
        "search_id": "search_e749586f",
        "results": [
            {"url": u, "title": t, "publish_date": None, "excerpts": [e, "more"]} for u, t, e in results
        ],
    }


def perplexity_results(results: list[tuple[str, str, str]]) -> dict[str, Any]:
    return {
        "id": "e38104d5-6bd7-4d82-bc4e-0a21179d1f77",
        "results": [
            {"title": t, "url": u, "snippet": s, "date": "2025-03-20", "last_updated": "2025-09-19"}
            for u, t, s in results
        ],
    }
