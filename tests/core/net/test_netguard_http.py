"""The guarded client against real HTTP servers on 127.0.0.1: allowances, pinning, redirects, caps, time.

Each server is a small threaded `http.server`; 127.0.0.1 is reachable only when a test lists it (or a
name the fake resolver maps to it) in `allowed_private_hosts`.
"""

from __future__ import annotations

import contextlib
import datetime
import gzip
import http.server
import socket
import ssl
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpcore
import httpx
import pytest

from fermix_cli import __version__
from fermix_cli.core.errors import ToolError
from fermix_cli.core.net.guard import HostGuard
from fermix_cli.core.net.guarded import guarded_client
from fermix_cli.core.net.response import BoundedDecoder
from fermix_cli.core.net.transport import GuardedTransport
from fermix_cli.mcp import wire
from fermix_cli.mcp.wire import http_client

MiB = 1_048_576
Route = Callable[["Handler"], None]


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes


class Handler(http.server.BaseHTTPRequestHandler):
    server: _Server

    def _dispatch(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        self.server.owner.seen.append(Seen(self.command, self.path, headers, body))
        route = self.server.owner.routes.get(self.path.split("?")[0])
        try:
            if route is None:
                reply(self, 404, b"no route")
            else:
                route(self)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up on purpose (caps and timeouts)

    do_GET = do_POST = do_PUT = do_HEAD = _dispatch

    def log_message(self, format: str, *args: Any) -> None:
        pass


class KeepAliveHandler(Handler):
    protocol_version = "HTTP/1.1"


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    owner: LocalServer


class LocalServer:
    def __init__(self, *, keep_alive: bool = False, tls: ssl.SSLContext | None = None) -> None:
        self.routes: dict[str, Route] = {}
        self.seen: list[Seen] = []
        self._server = _Server(("127.0.0.1", 0), KeepAliveHandler if keep_alive else Handler)
        self._server.owner = self
        if tls is not None:
            self._server.socket = tls.wrap_socket(self._server.socket, server_side=True)
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05})
        self._thread.daemon = True
        self._thread.start()

    def url(self, path: str = "/", host: str = "127.0.0.1", scheme: str = "http") -> str:
        return f"{scheme}://{host}:{self.port}{path}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()


def reply(h: Handler, status: int = 200, body: bytes = b"ok", headers: dict[str, str] | None = None) -> None:
    h.send_response(status)
    headers = {"Content-Length": str(len(body)), **(headers or {})}
    for name, value in headers.items():
        if value is not None:
            h.send_header(name, value)
    h.end_headers()
    if h.command != "HEAD":
        h.wfile.write(body)


def redirect(location: str | None, status: int = 302) -> Route:
    def route(h: Handler) -> None:
        reply(h, status, b"", {} if location is None else {"Location": location})

    return route


@pytest.fixture
def server() -> Iterator[LocalServer]:
    local = LocalServer()
    yield local
    local.close()


def fake_dns(mapping: dict[str, list[str]]) -> Callable[[str], list[str]]:
    def resolve(host: str) -> list[str]:
        if host in mapping:
            return mapping[host]
        raise socket.gaierror(socket.EAI_NONAME, "unknown in test")

    return resolve


LOCAL = ["127.0.0.1"]


# --- allowances and pinning ------------------------------------------------------------------------


def test_allowed_local_server_is_reached(server: LocalServer) -> None:
    server.routes["/"] = lambda h: reply(h, body=b"hello")
    with guarded_client(allowed_private_hosts=LOCAL) as client:
        response = client.get(server.url())
    assert (response.status_code, response.content, response.url) == (200, b"hello", server.url())
    assert server.seen[0].headers["user-agent"] == f"fermix/{__version__}"
    assert server.seen[0].headers["accept-encoding"] == "gzip, deflate"


def test_local_server_is_refused_without_allowance(server: LocalServer) -> None:
    with guarded_client() as client, pytest.raises(ToolError) as caught:
        client.get(server.url())
    assert caught.value.code == "blocked_url"
    assert "[fermix_core.net] allowed_private_hosts" in caught.value.message
    assert server.seen == []


def test_connection_is_pinned_and_keeps_the_original_host_header(server: LocalServer) -> None:
    server.routes["/"] = lambda h: reply(h)
    resolver = fake_dns({"intranet.test": LOCAL, "other.test": LOCAL})
    with guarded_client(allowed_private_hosts=["intranet.test"], resolver=resolver) as client:
        assert client.get(server.url(host="intranet.test")).status_code == 200
        with pytest.raises(ToolError) as caught:
            client.get(server.url(host="other.test"))
    assert server.seen[0].headers["host"] == f"intranet.test:{server.port}"
    assert caught.value.message.startswith("resolved to 127.0.0.1")
    assert len(server.seen) == 1


def test_bare_transport_guards_a_plain_httpx_client(server: LocalServer) -> None:
    server.routes["/"] = lambda h: reply(h)
    with httpx.Client(transport=GuardedTransport(HostGuard()), trust_env=False) as plain:
        with pytest.raises(ToolError) as caught:
            plain.get(server.url())
        assert caught.value.code == "blocked_url"
    with httpx.Client(transport=GuardedTransport(HostGuard(LOCAL)), trust_env=False) as plain:
        assert plain.get(server.url()).status_code == 200


# --- redirects ---------------------------------------------------------------------------------------


def chain(server: LocalServer, length: int) -> str:
    """Routes /hop{length} -> ... -> /hop1 -> /end; returns the first URL."""
    for n in range(length, 0, -1):
        server.routes[f"/hop{n}"] = redirect(f"/hop{n - 1}" if n > 1 else "/end")
    server.routes["/end"] = lambda h: reply(h, body=b"end")
    return server.url(f"/hop{length}")


def test_five_redirects_are_followed(server: LocalServer) -> None:
    with guarded_client(allowed_private_hosts=LOCAL) as client:
        response = client.get(chain(server, 5))
    assert response.content == b"end"
    assert response.url == server.url("/end")
    assert len(response.redirects) == 5


def test_a_sixth_redirect_is_refused(server: LocalServer) -> None:
    with guarded_client(allowed_private_hosts=LOCAL) as client, pytest.raises(ToolError) as caught:
        client.get(chain(server, 6))
    assert (caught.value.code, caught.value.message) == ("redirect_limit", "exceeded 5 redirects")
    assert [seen.path for seen in server.seen] == [f"/hop{n}" for n in range(6, 0, -1)]


def test_location_is_resolved_against_the_hop_that_sent_it(server: LocalServer) -> None:
    server.routes["/a/b"] = redirect("c")
    server.routes["/a/c"] = redirect("../d?x=1")
    server.routes["/d"] = lambda h: reply(h, body=b"d")
    with guarded_client(allowed_private_hosts=LOCAL) as client:
        response = client.get(server.url("/a/b"))
    assert [seen.path for seen in server.seen] == ["/a/b", "/a/c", "/d?x=1"]
    assert response.url == server.url("/d?x=1")


@pytest.mark.parametrize(
    ("location", "reason"),
    [
        ("http://10.0.0.1/", "non_global_address"),
        ("http://169.254.169.254/latest/meta-data/", "non_global_address"),
        ("http://rebound.test:{port}/secret", "non_global_answer"),
        ("http://localhost:{port}/secret", "blocked_name"),
        ("http://2130706433:{port}/secret", "non_global_answer"),
        ("file:///etc/passwd", "unsupported_scheme"),
        ("http://user:pw@127.0.0.1:{port}/secret", "userinfo"),
    ],
)
def test_redirect_to_a_refused_target_is_blocked(server: LocalServer, location: str, reason: str) -> None:
    server.routes["/start"] = redirect(location.format(port=server.port))
    server.routes["/secret"] = lambda h: reply(h, body=b"secret")
    resolver = fake_dns({"allowed.test": LOCAL, "rebound.test": LOCAL, "2130706433": LOCAL})
    client = guarded_client(allowed_private_hosts=["allowed.test"], resolver=resolver)
    with client, pytest.raises(ToolError) as caught:
        client.get(server.url("/start", host="allowed.test"))
    assert (caught.value.code, caught.value.details["reason"]) == ("blocked_url", reason)
    assert [seen.path for seen in server.seen] == ["/start"]
    start = server.url("/start", host="allowed.test")
    assert caught.value.message.startswith(f"the server at {start} redirected to ")
    assert caught.value.details["redirected_from"] == start


@pytest.mark.parametrize(
    ("location", "path"),
    [
        ("/a file.html", "/a%20file.html"),
        ("/search?q=two words", "/search?q=two%20words"),
        ("/caf\u00e9/men\u00fc", "/caf%C3%A9/men%C3%BC"),
        ("http://127.0.0.1:{port}/x y", "/x%20y"),
    ],
)
def test_a_location_with_spaces_or_non_ascii_is_percent_encoded(
    server: LocalServer, location: str, path: str
) -> None:
    server.routes["/start"] = lambda h: (
        h.send_response(302),
        h.send_header("Location", location.format(port=server.port)),
        h.send_header("Content-Length", "0"),
        h.end_headers(),
    )
    server.routes[path.split("?")[0]] = lambda h: reply(h, body=b"landed")
    with guarded_client(allowed_private_hosts=LOCAL) as client:
        response = client.get(server.url("/start"))
    assert server.seen[1].path == path
    assert (response.url, response.content) == (server.url(path), b"landed")


def test_redirect_without_location_is_a_network_error(server: LocalServer) -> None:
    server.routes["/"] = redirect(None, 301)
    with guarded_client(allowed_private_hosts=LOCAL) as client, pytest.raises(ToolError) as caught:
        client.get(server.url())
    assert (caught.value.code, caught.value.message) == ("network", "redirect missing location")


@pytest.mark.parametrize(
    ("status", "method", "after", "body"),
    [
        (303, "POST", "GET", b""),
        (303, "PUT", "GET", b""),
        (302, "POST", "GET", b""),
        (301, "POST", "GET", b""),
        (302, "PUT", "PUT", b"payload"),
        (307, "POST", "POST", b"payload"),
        (308, "POST", "POST", b"payload"),
    ],
)
def test_redirect_method_rules(
    server: LocalServer, status: int, method: str, after: str, body: bytes
) -> None:
    server.routes["/form"] = redirect("/done", status)
    server.routes["/done"] = lambda h: reply(h)
    with guarded_client(allowed_private_hosts=LOCAL) as client:
        client.request(
            method, server.url("/form"), content=b"payload", headers={"content-type": "text/plain"}
        )
    done = server.seen[1]
    assert (done.method, done.body) == (after, body)
    assert ("content-type" in done.headers) == bool(body)


def test_cross_origin_redirect_drops_credentials(server: LocalServer) -> None:
    other = LocalServer()
    try:
        server.routes["/same"] = redirect("/landing")
        server.routes["/cross"] = redirect(other.url("/landing", host="intranet.test"))
        server.routes["/landing"] = other.routes["/landing"] = lambda h: reply(h)
        secrets = {"Authorization": "Bearer s3cret", "x-api-key": "k", "Cookie": "a=b", "accept": "text/html"}
        resolver = fake_dns({"intranet.test": LOCAL})
        with guarded_client(allowed_private_hosts=[*LOCAL, "intranet.test"], resolver=resolver) as client:
            client.get(server.url("/same"), headers=secrets)
            client.get(server.url("/cross"), headers=secrets)
        same, cross = server.seen[1].headers, other.seen[0].headers
        assert (same["authorization"], same["x-api-key"], same["cookie"]) == ("Bearer s3cret", "k", "a=b")
        assert not {"authorization", "x-api-key", "cookie"} & set(cross)
        assert cross["accept"] == "text/html"
    finally:
        other.close()


# --- body caps ---------------------------------------------------------------------------------------


def body_route(body: bytes, *, length: bool = True, encoding: str | None = None) -> Route:
    def route(h: Handler) -> None:
        h.send_response(200)
        if length:
            h.send_header("Content-Length", str(len(body)))
        if encoding:
            h.send_header("Content-Encoding", encoding)
        h.end_headers()
        h.wfile.write(body)  # without a length, HTTP/1.0 ends the body by closing

    return route


@pytest.mark.parametrize("length", [True, False], ids=["content-length", "until-close"])
def test_body_at_the_cap_is_read_and_one_byte_more_is_too_large(server: LocalServer, length: bool) -> None:
    server.routes["/fits"] = body_route(b"x" * MiB, length=length)
    server.routes["/over"] = body_route(b"x" * (MiB + 1), length=length)
    with guarded_client(allowed_private_hosts=LOCAL) as client:
        assert len(client.get(server.url("/fits")).content) == MiB
        with pytest.raises(ToolError) as caught:
            client.get(server.url("/over"))
    assert (caught.value.code, caught.value.message) == ("too_large", "response body exceeded 1048576 bytes")


def test_truncate_returns_the_first_bytes_and_says_so(server: LocalServer) -> None:
    server.routes["/"] = body_route(bytes(range(256)) * 10)
    with guarded_client(allowed_private_hosts=LOCAL, max_body=1000) as client:
        response = client.get(server.url(), truncate=True)
    assert response.truncated and response.content == (bytes(range(256)) * 10)[:1000]


@pytest.fixture(scope="module")
def gzip_bomb() -> bytes:
    """64 MiB of zeros in about 64 KiB of gzip."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, zlib.MAX_WBITS | 16)
    block = bytes(MiB)
    return b"".join(compressor.compress(block) for _ in range(64)) + compressor.flush()


def test_gzip_bomb_is_too_large(server: LocalServer, gzip_bomb: bytes) -> None:
    assert len(gzip_bomb) < 100_000
    server.routes["/"] = body_route(gzip_bomb, encoding="gzip")
    with guarded_client(allowed_private_hosts=LOCAL) as client, pytest.raises(ToolError) as caught:
        client.get(server.url())
    assert (caught.value.code, caught.value.message) == ("too_large", "response body exceeded 1048576 bytes")


def test_decompression_never_produces_more_than_asked(gzip_bomb: bytes) -> None:
    decoder = BoundedDecoder("gzip")
    assert len(decoder.decode(gzip_bomb, 4096)) == 4096


@pytest.mark.parametrize(
    ("encoding", "encode"),
    [
        ("gzip", gzip.compress),
        ("deflate", zlib.compress),
        ("deflate", lambda data: zlib.compress(data)[2:-4]),  # raw deflate, as some servers send it
        ("identity", lambda data: data),
    ],
)
def test_compressed_bodies_are_decoded(
    server: LocalServer, encoding: str, encode: Callable[[bytes], bytes]
) -> None:
    text = b"fermix " * 5000
    server.routes["/"] = body_route(encode(text), encoding=encoding)
    with guarded_client(allowed_private_hosts=LOCAL, max_body=len(text)) as client:
        assert client.get(server.url()).content == text


def test_every_member_of_a_multi_member_gzip_body_is_decoded(server: LocalServer) -> None:
    members = [gzip.compress(f"member {n} ".encode() * 2000) for n in range(3)]
    whole = b"".join(f"member {n} ".encode() * 2000 for n in range(3))
    server.routes["/multi"] = body_route(b"".join(members), encoding="gzip")
    server.routes["/padded"] = body_route(b"".join(members) + bytes(512), encoding="gzip")
    with guarded_client(allowed_private_hosts=LOCAL) as client:
        assert client.get(server.url("/multi")).content == whole
        assert client.get(server.url("/padded")).content == whole
    with guarded_client(allowed_private_hosts=LOCAL, max_body=len(whole) - 1) as client:
        with pytest.raises(ToolError) as caught:
            client.get(server.url("/multi"))
        assert caught.value.code == "too_large"


@pytest.mark.parametrize("step", [1, 7, 4096])
def test_multi_member_gzip_decodes_across_any_chunking(step: int) -> None:
    body = gzip.compress(b"a" * 3000) + gzip.compress(b"b" * 3000) + gzip.compress(b"")
    decoder = BoundedDecoder("gzip")
    out = b"".join(
        b"".join(decoder.decode_pieces(body[i : i + step], 1000)) for i in range(0, len(body), step)
    )
    assert out == b"a" * 3000 + b"b" * 3000


def test_unrequested_content_encoding_is_refused(server: LocalServer) -> None:
    server.routes["/"] = body_route(b"\x1b\x00", encoding="br")
    with guarded_client(allowed_private_hosts=LOCAL) as client, pytest.raises(ToolError) as caught:
        client.get(server.url())
    assert caught.value.code == "network" and "br" in caught.value.message


# --- a stock httpx client (the MCP client's) --------------------------------------------------------


def test_mcp_http_client_keeps_credentials_to_their_origin(server: LocalServer) -> None:
    other = LocalServer()  # another port: another origin
    try:
        server.routes["/same"] = redirect("/landing", status=307)
        server.routes["/cross"] = redirect(other.url("/landing"), status=307)
        server.routes["/landing"] = other.routes["/landing"] = lambda h: reply(h, body=b"landed")
        secrets = {"Authorization": "Bearer s3cret", "x-api-key": "k", "Cookie": "a=b"}
        with http_client(LOCAL, {"x-api-key": "k"}) as client:
            same = client.post(server.url("/same"), content=b"{}", headers=secrets)
            cross = client.post(server.url("/cross"), content=b"{}", headers=secrets)
        assert (same.status_code, same.text, cross.text) == (200, "landed", "landed")
        landed_same, landed_cross = server.seen[1], other.seen[0]
        assert (landed_same.method, landed_same.body, landed_same.headers["x-api-key"]) == (
            "POST",
            b"{}",
            "k",
        )
        assert landed_same.headers["authorization"] == "Bearer s3cret"
        assert (landed_cross.method, landed_cross.body) == ("POST", b"{}")
        assert not {"authorization", "x-api-key", "cookie"} & set(landed_cross.headers)
    finally:
        other.close()


def test_mcp_http_client_checks_every_hop_and_counts_them(server: LocalServer) -> None:
    server.routes["/private"] = redirect("http://10.1.2.3/x")
    with http_client(LOCAL, {}) as client:
        with pytest.raises(ToolError) as caught:
            client.get(server.url("/private"))
        assert caught.value.code == "blocked_url" and caught.value.details["ip"] == "10.1.2.3"
        assert client.get(chain(server, 5)).text == "end"
        with pytest.raises(ToolError) as caught:
            client.get(chain(server, 6))
        assert caught.value.code == "redirect_limit"


def test_mcp_http_client_bounds_decompression(
    server: LocalServer, gzip_bomb: bytes, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(wire, "HTTP_MAX_DECODED", 4 * MiB)
    text = b"fermix " * 50_000
    server.routes["/bomb"] = body_route(gzip_bomb, encoding="gzip")
    server.routes["/fine"] = body_route(gzip.compress(text), encoding="gzip")
    with http_client(LOCAL, {}) as client:
        assert client.get(server.url("/fine")).content == text
        with pytest.raises(ToolError) as caught:
            client.get(server.url("/bomb"))
    assert caught.value.code == "too_large" and caught.value.details["limit"] == 4 * MiB
    assert server.seen[0].headers["accept-encoding"] == "gzip, deflate"


# --- time ---------------------------------------------------------------------------------------------


def slow_headers(h: Handler) -> None:
    time.sleep(5.0)
    reply(h)


def stalled_body(h: Handler) -> None:
    h.send_response(200)
    h.send_header("Content-Length", "100")
    h.end_headers()
    h.wfile.write(b"x" * 10)
    h.wfile.flush()
    time.sleep(5.0)


def trickle(h: Handler) -> None:
    h.send_response(200)
    h.send_header("Content-Length", "20")
    h.end_headers()
    for _ in range(20):
        h.wfile.write(b"x")
        h.wfile.flush()
        time.sleep(0.03)


@pytest.mark.parametrize(
    ("route", "phrase"), [(slow_headers, "read timeout"), (stalled_body, "read timeout")]
)
def test_slow_server_hits_the_read_timeout(server: LocalServer, route: Route, phrase: str) -> None:
    server.routes["/"] = route
    started = time.monotonic()
    with (
        guarded_client(allowed_private_hosts=LOCAL, read_timeout=0.3) as client,
        pytest.raises(ToolError) as caught,
    ):
        client.get(server.url())
    assert caught.value.code == "timeout" and phrase in caught.value.message
    assert time.monotonic() - started < 4  # well before the server would have answered (5 s)


def test_trickling_server_hits_the_total_timeout(server: LocalServer) -> None:
    server.routes["/"] = trickle
    with guarded_client(allowed_private_hosts=LOCAL, read_timeout=1.0, total_timeout=0.25) as client:
        with pytest.raises(ToolError) as caught:
            client.get(server.url())
        assert caught.value.code == "timeout" and "total time limit" in caught.value.message
        assert client.get(server.url(), total_timeout=5.0).content == b"x" * 20


class DrippingServer:
    """A raw socket server that sends `payload` one byte every `gap` seconds, whatever is asked."""

    def __init__(self, payload: bytes, gap: float) -> None:
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._payload, self._gap = payload, gap
        self._stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        with contextlib.suppress(OSError):
            conn, _ = self._listener.accept()
            with conn:
                conn.recv(65536)
                for byte in self._payload:
                    if self._stop.wait(self._gap):
                        return
                    conn.sendall(bytes([byte]))

    def close(self) -> None:
        self._stop.set()
        self._listener.close()


@pytest.mark.parametrize(
    "payload",
    [
        b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 200 + b"\r\nContent-Length: 2\r\n\r\nok",
        b"HTTP/1.1 200 OK\r\nContent-Length: 200\r\n\r\n" + b"x" * 200,
    ],
    ids=["headers", "body"],
)
def test_a_server_dripping_bytes_hits_the_total_timeout(payload: bytes) -> None:
    drip = DrippingServer(payload, gap=0.05)
    started = time.monotonic()
    try:
        with (
            guarded_client(allowed_private_hosts=LOCAL, read_timeout=1.0, total_timeout=0.5) as client,
            pytest.raises(ToolError) as caught,
        ):
            client.get(f"http://127.0.0.1:{drip.port}/")
    finally:
        drip.close()
    assert caught.value.code == "timeout" and "total time limit" in caught.value.message
    assert caught.value.details["url"] == f"http://127.0.0.1:{drip.port}/"
    assert time.monotonic() - started < 2.0  # each byte resets the 1 s read timeout; only the total stops it


def test_closed_port_is_connect_failed() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with guarded_client(allowed_private_hosts=LOCAL) as client, pytest.raises(ToolError) as caught:
        client.get(f"http://127.0.0.1:{port}/")
    assert caught.value.code == "connect_failed" and "could not connect" in caught.value.message


# --- environment ----------------------------------------------------------------------------------------


def test_proxy_netrc_and_cert_environment_are_ignored(
    server: LocalServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    proxy = LocalServer()
    try:
        proxy.routes["/"] = lambda h: reply(h, body=b"proxied")
        server.routes["/"] = lambda h: reply(h, body=b"direct")
        for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
            monkeypatch.setenv(name, proxy.url())
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        netrc = tmp_path / ".netrc"
        netrc.write_text("machine 127.0.0.1 login alice password wonderland\n")
        monkeypatch.setenv("NETRC", str(netrc))
        monkeypatch.setenv("HOME", str(tmp_path))
        monkeypatch.setenv("SSL_CERT_FILE", str(tmp_path / "missing.pem"))
        with guarded_client(allowed_private_hosts=LOCAL) as client:
            assert client.get(server.url()).content == b"direct"
        assert proxy.seen == []
        assert "authorization" not in server.seen[0].headers
    finally:
        proxy.close()


# --- DNS rebinding -------------------------------------------------------------------------------------


class DialLocal(httpcore.NetworkBackend):
    """Stands a 127.0.0.1 server in for whatever address the guard approved, and records that address."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.dialled: list[str] = []
        self._inner = httpcore.SyncBackend()

    def connect_tcp(
        self, host: str, port: int, timeout: float | None = None, **kwargs: Any
    ) -> httpcore.NetworkStream:
        self.dialled.append(host)
        return self._inner.connect_tcp("127.0.0.1", self.port, timeout=timeout, **kwargs)


def test_rebinding_between_requests_is_refused_even_on_a_kept_alive_connection() -> None:
    server = LocalServer(keep_alive=True)
    try:
        server.routes["/"] = lambda h: reply(h, body=b"public content")
        answers = {"rebind.test": ["93.184.216.34"]}
        dialler = DialLocal(server.port)
        with guarded_client(resolver=fake_dns(answers), socket_backend=dialler) as client:
            assert client.get(f"http://rebind.test:{server.port}/").content == b"public content"
            assert client.get(f"http://rebind.test:{server.port}/").content == b"public content"
            assert dialler.dialled == ["93.184.216.34"]  # one connection, reused
            answers["rebind.test"] = ["127.0.0.1"]
            with pytest.raises(ToolError) as caught:
                client.get(f"http://rebind.test:{server.port}/")
        assert caught.value.message.startswith("resolved to 127.0.0.1")
        assert len(server.seen) == 2
        assert dialler.dialled == ["93.184.216.34"]
    finally:
        server.close()


# --- TLS: SNI and certificate checks use the name while the socket goes to the pinned address ------------


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    x509 = pytest.importorskip("cryptography.x509")
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    folder = tmp_path_factory.mktemp("tls")
    now = datetime.datetime.now(datetime.UTC)

    def build(subject: str, issuer_key: Any, issuer: Any, *, ca: bool, dns: str | None) -> tuple[Any, Any]:
        key = ec.generate_private_key(ec.SECP256R1())
        name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
        builder = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(issuer or name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True)
        )
        if dns:
            builder = builder.add_extension(x509.SubjectAlternativeName([x509.DNSName(dns)]), critical=False)
        return key, builder.sign(issuer_key or key, hashes.SHA256())

    def write(path: Path, key: Any, cert: Any) -> None:
        pem = cert.public_bytes(serialization.Encoding.PEM)
        path.with_suffix(".crt").write_bytes(pem)
        path.with_suffix(".key").write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
            )
        )

    ca_key, ca_cert = build("fermix test CA", None, None, ca=True, dns=None)
    write(folder / "ca", ca_key, ca_cert)
    for name in ("secure.test", "other.test"):
        key, cert = build(name, ca_key, ca_cert.subject, ca=False, dns=name)
        write(folder / name, key, cert)
    return {name: folder / name for name in ("ca", "secure.test", "other.test")}


@pytest.mark.parametrize(("served", "ok"), [("secure.test", True), ("other.test", False)])
def test_tls_uses_the_original_name_for_sni_and_certificate(
    tls_files: dict[str, Path], served: str, ok: bool
) -> None:
    server_names: list[str | None] = []
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tls_files[served].with_suffix(".crt"), tls_files[served].with_suffix(".key"))
    context.sni_callback = lambda _sock, name, _ctx: server_names.append(name)
    server = LocalServer(tls=context)
    try:
        server.routes["/"] = lambda h: reply(h, body=b"over tls")
        verify = ssl.create_default_context(cafile=str(tls_files["ca"].with_suffix(".crt")))
        resolver = fake_dns({"secure.test": LOCAL})
        with guarded_client(
            allowed_private_hosts=["secure.test"], resolver=resolver, verify=verify
        ) as client:
            url = server.url(host="secure.test", scheme="https")
            if ok:
                assert client.get(url).content == b"over tls"
                assert server.seen[0].headers["host"] == f"secure.test:{server.port}"
            else:
                with pytest.raises(ToolError) as caught:
                    client.get(url)
                assert caught.value.code == "network" and "CERTIFICATE_VERIFY_FAILED" in caught.value.message
        assert server_names and set(server_names) == {"secure.test"}
    finally:
        server.close()


# --- streaming and statuses ------------------------------------------------------------------------------


def test_stream_yields_sse_lines(server: LocalServer) -> None:
    events = "data: one\r\n\r\ndata: two\n\ndata: tr\u00e9s\r\r: end"
    server.routes["/events"] = body_route(events.encode(), length=False)
    client = guarded_client(allowed_private_hosts=LOCAL)
    with client, client.stream("POST", server.url("/events"), json={"q": 1}) as response:
        lines = list(response.iter_lines())
    assert lines == ["data: one", "", "data: two", "", "data: trés", "", ": end"]
    assert server.seen[0].body == b'{"q":1}'


def test_stream_is_capped_too(server: LocalServer) -> None:
    server.routes["/"] = body_route(b"x" * 5000)
    client = guarded_client(allowed_private_hosts=LOCAL)
    with (
        client,
        client.stream("GET", server.url(), max_body=4096) as response,
        pytest.raises(ToolError) as caught,
    ):
        for _chunk in response.iter_bytes():
            pass
    assert (caught.value.code, caught.value.message) == ("too_large", "response body exceeded 4096 bytes")


def test_non_2xx_is_returned_and_raise_for_status_gives_http_n(server: LocalServer) -> None:
    server.routes["/missing"] = lambda h: reply(h, 404, b'{"error": "nope"}')
    with guarded_client(allowed_private_hosts=LOCAL) as client:
        response = client.get(server.url("/missing"))
    assert response.json() == {"error": "nope"}
    with pytest.raises(ToolError) as caught:
        response.raise_for_status()
    assert (caught.value.code, caught.value.message) == ("network", "HTTP 404")
