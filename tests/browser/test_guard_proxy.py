"""The guarding proxy on its own, over real sockets: what it relays, rewrites and refuses (no Chromium)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest

from fermix_cli.browser.guardproxy import GuardProxy, listen
from fermix_cli.browser.netrules import is_local_address, judge
from fermix_cli.core.net.guard import HostGuard


class Upstream:
    """A TCP server on every address that records what each connection sent and answers `reply`."""

    def __init__(self, reply: bytes = b"", echo: bool = False) -> None:
        self.sock = socket.create_server(("0.0.0.0", 0))
        self.port = int(self.sock.getsockname()[1])
        self.received: list[bytes] = []
        self.reply = reply
        self.echo = echo
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                data = b""
                while chunk := conn.recv(65536):
                    data += chunk
                    if self.echo:
                        conn.sendall(chunk)
                    elif b"\r\n\r\n" in data and (data.endswith(b"body!") or b"Content-Length" not in data):
                        break  # a whole request: the test's body, or a head without one
                self.received.append(data)
                if self.reply:
                    conn.sendall(self.reply)


@pytest.fixture
def proxy() -> Iterator[tuple[GuardProxy, list[str]]]:
    refused: list[str] = []
    made = GuardProxy(
        listen(), HostGuard(["127.0.0.1"]), forbidden_local_ports=[9], on_refused=refused.append
    )
    made.start()
    yield made, refused
    made.close()


def exchange(port: int, request: bytes, more: bytes = b"") -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        if more:
            sock.sendall(more)
            sock.shutdown(socket.SHUT_WR)
        data = b""
        while chunk := sock.recv(65536):
            data += chunk
        return data


def test_connect_to_an_allowed_host_is_a_tunnel(proxy: tuple[GuardProxy, list[str]]) -> None:
    server = Upstream(echo=True)
    request = f"CONNECT 127.0.0.1:{server.port} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n\r\n".encode()
    answer = exchange(proxy[0].port, request, b"bytes through the tunnel")
    assert answer == b"HTTP/1.1 200 Connection established\r\n\r\nbytes through the tunnel"
    assert server.received == [b"bytes through the tunnel"]


@pytest.mark.parametrize(
    ("authority", "why"),
    [
        ("127.0.0.2:{port}", "not global (loopback)"),
        ("10.0.0.1:443", "not global (private"),
        ("169.254.169.254:80", "link-local"),
        ("[::1]:{port}", "not global"),
        ("localhost:{port}", "local-only host name"),
        ("127.0.0.1:9", "own DevTools or proxy port"),
        ("127.0.0.1:{proxy}", "own DevTools or proxy port"),
    ],
)
def test_connect_to_a_refused_address_is_403(
    proxy: tuple[GuardProxy, list[str]], authority: str, why: str
) -> None:
    server = Upstream(echo=True)
    target = authority.format(port=server.port, proxy=proxy[0].port)
    answer = exchange(proxy[0].port, f"CONNECT {target} HTTP/1.1\r\n\r\n".encode())
    assert answer.startswith(b"HTTP/1.1 403 Forbidden\r\n") and why.encode() in answer
    assert len(proxy[1]) == 1 and why in proxy[1][0] and f"CONNECT {target}" in proxy[1][0]
    assert server.received == []


def test_an_absolute_form_request_goes_on_as_origin_form_with_connection_close(
    proxy: tuple[GuardProxy, list[str]],
) -> None:
    reply = (
        b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\n\r\nok"
    )
    server = Upstream(reply)
    head = (
        f"POST http://127.0.0.1:{server.port}/form?q=1 HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
        "Proxy-Connection: keep-alive\r\nConnection: keep-alive, X-Hop\r\nX-Hop: 1\r\nContent-Length: 5\r\n"
        "Content-Type: text/plain\r\n\r\n"
    ).encode()
    answer = exchange(proxy[0].port, head + b"bo", b"dy!")
    sent = server.received[0]
    assert sent.startswith(b"POST /form?q=1 HTTP/1.1\r\n") and sent.endswith(b"\r\n\r\nbody!")
    assert b"Content-Type: text/plain\r\n" in sent and b"Connection: close\r\n" in sent
    assert b"Proxy-Connection" not in sent and b"X-Hop" not in sent and b"keep-alive" not in sent
    assert answer.startswith(b"HTTP/1.1 200 OK\r\n") and answer.endswith(b"\r\n\r\nok")
    assert b"Connection: close\r\n" in answer and b"Keep-Alive" not in answer and b"keep-alive" not in answer


def test_interim_responses_pass_unchanged_and_the_final_one_is_rewritten(
    proxy: tuple[GuardProxy, list[str]],
) -> None:
    early = b"HTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n"
    final = b"HTTP/1.1 200 OK\r\nConnection: keep-alive\r\nContent-Length: 2\r\n\r\nok"
    server = Upstream(early + final)
    answer = exchange(proxy[0].port, f"GET http://127.0.0.1:{server.port}/ HTTP/1.1\r\n\r\n".encode())
    assert answer.startswith(early)
    rest = answer[len(early) :]
    assert (
        rest.startswith(b"HTTP/1.1 200 OK\r\n")
        and b"Connection: close\r\n" in rest
        and b"keep-alive" not in rest
    )
    assert rest.endswith(b"\r\n\r\nok")


def test_a_plain_request_to_a_refused_host_is_403_and_never_sent(proxy: tuple[GuardProxy, list[str]]) -> None:
    server = Upstream(b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n")
    answer = exchange(proxy[0].port, f"GET http://127.0.0.2:{server.port}/ HTTP/1.1\r\n\r\n".encode())
    assert answer.startswith(b"HTTP/1.1 403 Forbidden\r\n") and b"X-Fermix-Guard: refused" in answer
    assert server.received == [] and "127.0.0.2" in proxy[1][0]


@pytest.mark.parametrize(
    ("request_head", "status"),
    [
        (b"GET / HTTP/1.1\r\nHost: example.com\r\n\r\n", b"400"),  # origin-form: not a proxy request
        (b"GET ftp://example.com/ HTTP/1.1\r\n\r\n", b"400"),
        (b"CONNECT example.com HTTP/1.1\r\n\r\n", b"400"),  # no port
        (b"CONNECT user@127.0.0.1:443 HTTP/1.1\r\n\r\n", b"400"),
        (b"nonsense\r\n\r\n", b"400"),
        (b"POST http://127.0.0.1:1/ HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n", b"501"),
        (b"POST http://127.0.0.1:1/ HTTP/1.1\r\nContent-Length: x\r\n\r\n", b"400"),
    ],
)
def test_malformed_requests_get_a_clear_status(
    proxy: tuple[GuardProxy, list[str]], request_head: bytes, status: bytes
) -> None:
    answer = exchange(proxy[0].port, request_head)
    assert answer.startswith(b"HTTP/1.1 " + status + b" ")
    assert proxy[1] == []  # not a guard refusal


def test_a_name_that_does_not_resolve_is_502_and_not_a_refusal(proxy: tuple[GuardProxy, list[str]]) -> None:
    answer = exchange(proxy[0].port, b"CONNECT no-such-host.invalid:443 HTTP/1.1\r\n\r\n")
    assert answer.startswith(b"HTTP/1.1 502 Bad Gateway\r\n") and b"dns_resolution_failed" in answer
    assert proxy[1] == []


def test_an_unreachable_allowed_host_is_502(proxy: tuple[GuardProxy, list[str]]) -> None:
    free = socket.create_server(("127.0.0.1", 0))
    port = free.getsockname()[1]
    free.close()
    answer = exchange(proxy[0].port, f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode())
    assert answer.startswith(b"HTTP/1.1 502 Bad Gateway\r\n") and b"cannot connect" in answer


@pytest.mark.parametrize(
    ("address", "local"),
    [
        *[("127.0.0.1", True), ("127.8.9.10", True), ("::1", True), ("0.0.0.0", True), ("::", True)],
        *[
            ("::ffff:127.0.0.1", True),
            ("::ffff:0.0.0.0", True),
            ("10.0.0.1", False),
            ("93.184.216.34", False),
        ],
    ],
)
def test_local_addresses(address: str, local: bool) -> None:
    assert is_local_address(address) is local


def test_the_request_check_refuses_the_browsers_own_ports_on_this_machine_only() -> None:
    guard = HostGuard(["127.0.0.1", "0.0.0.0"])
    ports = frozenset({9222})
    assert "own DevTools" in str(judge("http://127.0.0.1:9222/json", guard, ports))
    assert "own DevTools" in str(judge("http://0.0.0.0:9222/json", guard, ports))
    assert judge("http://127.0.0.1:9223/json", guard, ports) is None
    assert judge("http://93.184.216.34:9222/", guard, ports) is None  # the same port elsewhere is fine
