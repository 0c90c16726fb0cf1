"""The warden's guarding forward proxy: every connection Chromium opens, judged where it is made.

CDP `Fetch` interception sees requests, not connections: it never sees a page's WebSocket, and it judges
a host by its own DNS lookup while Chromium connects after a lookup of its own (a host can answer a
public address to the first and a private one to the second). So Chromium is started with
`--proxy-server=http://127.0.0.1:PORT --proxy-bypass-list=<-loopback>` (loopback included: nothing
bypasses the proxy), and this proxy, running in the warden, makes every connection itself:

- `CONNECT host:port` (https, and WebSockets: Chromium tunnels `ws://` as well as `wss://` through an
  HTTP proxy with CONNECT) is answered `200` and relayed once the host is allowed;
- an absolute-form request (`GET http://host:port/path HTTP/1.1`, plain http) is sent on as an
  origin-form request with `Connection: close`, its response relayed back, one request per connection
  (a connection to the proxy is never reused for a second, unjudged host).

The host is resolved here, once, every answer judged by the network guard's `HostGuard` (the same
rules and `allowed_private_hosts` as everywhere else), and the connection goes to an address that was
judged: no second lookup, so no DNS window. On top of the guard, a loopback (or unspecified) address at
the DevTools port or at the proxy's own port is always refused, allowed host or not: the DevTools
endpoint would give a page the whole browser, and the proxy's own port would only loop. A refusal is a
`403` (for CONNECT the browser reports `ERR_TUNNEL_CONNECTION_FAILED`) and is reported through
`on_refused`; a name that does not resolve, or an address that does not answer, is a `502`.
"""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Callable, Iterable
from urllib.parse import urlsplit

from ..core.errors import ToolError
from ..core.net.guard import HostGuard
from .netrules import is_local_address, own_port_reason

MAX_HEAD = 65_536
HEAD_TIMEOUT = 30.0  # seconds for a client to send its request head
CONNECT_TIMEOUT = 10.0  # seconds to open the upstream connection
IDLE_TIMEOUT = 600.0  # seconds a plain-http request or response may stay silent
CHUNK = 65_536

# Headers that belong to one hop (RFC 9110 section 7.6.1), never forwarded as they are.
HOP_BY_HOP = frozenset(
    {
        "connection",
        "proxy-connection",
        "keep-alive",
        "proxy-authorization",
        "proxy-authenticate",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
    }
)


class Refused(Exception):
    """A request the proxy will not carry: `status` and the reason shown to the browser and the console."""

    def __init__(self, status: int, reason: str) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason


def listen() -> socket.socket:
    """The proxy's listening socket on 127.0.0.1 and an ephemeral port (bound before Chromium starts)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(256)
    return sock


class GuardProxy:
    """Serves `sock` on daemon threads: one per client connection, one more per relay direction."""

    def __init__(
        self,
        sock: socket.socket,
        guard: HostGuard,
        *,
        forbidden_local_ports: Iterable[int] = (),
        on_refused: Callable[[str], None] = lambda text: None,
    ) -> None:
        self.sock = sock
        self.port = int(sock.getsockname()[1])
        self.guard = guard
        self.forbidden_local_ports = frozenset({self.port, *forbidden_local_ports})
        self.on_refused = on_refused
        self._closed = False

    def start(self) -> None:
        threading.Thread(target=self._accept_loop, name="guard-proxy", daemon=True).start()

    def close(self) -> None:
        self._closed = True
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        self.sock.close()

    def _accept_loop(self) -> None:
        while not self._closed:
            try:
                client, _ = self.sock.accept()
            except OSError:
                if self._closed:
                    return
                continue
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    # -- one client connection -------------------------------------------------------------------

    def _serve(self, client: socket.socket) -> None:
        upstream: socket.socket | None = None
        try:
            client.settimeout(HEAD_TIMEOUT)
            head, rest = read_head(client)
            if not head:
                return
            method, target, headers = parse_request(head)
            if method == "CONNECT":
                host, port = split_authority(target, default_port=None)
                upstream = self.open(host, port, f"CONNECT {target}")
                client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
                if rest:
                    upstream.sendall(rest)
                relay(client, upstream)
            else:
                upstream = self.forward(client, method, target, headers, rest)
        except Refused as refused:
            with contextlib.suppress(OSError):
                client.sendall(error_response(refused.status, refused.reason))
        except OSError:
            pass  # a side went away mid-request: nothing to answer
        finally:
            for sock in (client, upstream):
                if sock is not None:
                    with contextlib.suppress(OSError):
                        sock.close()

    def open(self, host: str, port: int, what: str) -> socket.socket:
        """A connection to `host:port` at an address the guard judged; Refused otherwise."""
        try:
            addresses = self.guard.addresses(host)
        except ToolError as exc:
            if exc.code == "dns_failure":
                # Not a refusal: the name does not resolve (Chromium's own background requests, offline,
                # end here too, so they stay out of the console).
                raise Refused(502, exc.message) from None
            self.refuse(what, exc.message)
        local = [a for a in addresses if is_local_address(a)]
        if local and port in self.forbidden_local_ports:
            self.refuse(what, own_port_reason(port))
        error: OSError | None = None
        for address in addresses:
            family = socket.AF_INET6 if ":" in address else socket.AF_INET
            sock = socket.socket(family, socket.SOCK_STREAM)
            sock.settimeout(CONNECT_TIMEOUT)
            try:
                sock.connect((address, port))
            except OSError as exc:
                sock.close()
                error = exc
                continue
            sock.settimeout(IDLE_TIMEOUT)
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            return sock
        raise Refused(502, f"cannot connect to {host}:{port}: {error}")

    def refuse(self, what: str, why: str) -> None:
        reason = f"fermix network guard refused {what[:300]}: {why}"
        self.on_refused(reason)
        raise Refused(403, reason)

    def forward(
        self, client: socket.socket, method: str, target: str, headers: list[tuple[str, str]], rest: bytes
    ) -> socket.socket:
        """Send one absolute-form request on to its origin and relay the response; the upstream socket."""
        if not target.lower().startswith("http://"):
            raise Refused(400, f"this proxy takes CONNECT or absolute http:// requests, not {target[:100]!r}")
        parts = urlsplit(target)
        host, port = split_authority(parts.netloc, default_port=80)
        names = {name.lower() for name, _ in headers}
        if "transfer-encoding" in names:
            raise Refused(501, "request bodies of unknown length (Transfer-Encoding) are not relayed")
        length = content_length(headers)
        upstream = self.open(host, port, f"{method} {target}")
        path = parts.path or "/"
        if parts.query:
            path += "?" + parts.query
        upstream.sendall(f"{method} {path} HTTP/1.1\r\n".encode("latin-1") + end_to_end(headers))
        body = rest[:length]
        if body:
            upstream.sendall(body)
        left = length - len(body)
        client.settimeout(IDLE_TIMEOUT)
        while left > 0:
            data = client.recv(min(CHUNK, left))
            if not data:
                return upstream
            upstream.sendall(data)
            left -= len(data)
        head, rest = read_head(upstream)
        while head[:9] in (b"HTTP/1.1 ", b"HTTP/1.0 ") and head[9:10] == b"1":
            client.sendall(head)  # an interim response (100 Continue, 103 Early Hints): the final one follows
            head, rest = read_head(upstream, rest)
        if not head:
            raise Refused(502, f"{host}:{port} closed the connection without a response")
        client.sendall(rewrite_response_head(head) + rest)
        while data := upstream.recv(CHUNK):
            client.sendall(data)
        return upstream


# -- HTTP/1.1 message heads ------------------------------------------------------------------------


def read_head(sock: socket.socket, buffer: bytes = b"") -> tuple[bytes, bytes]:
    """A message head (through the blank line) and the bytes read after it; (b'', b'') on a clean close.

    `buffer` holds bytes already read from `sock` (what followed the previous head).
    """
    while b"\r\n\r\n" not in buffer:
        if len(buffer) > MAX_HEAD:
            raise Refused(431, "the message head is too large")
        data = sock.recv(CHUNK)
        if not data:
            if buffer:
                raise Refused(400, "the connection closed inside a message head")
            return b"", b""
        buffer += data
    end = buffer.index(b"\r\n\r\n") + 4
    return buffer[:end], buffer[end:]


def parse_request(head: bytes) -> tuple[str, str, list[tuple[str, str]]]:
    lines = head.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/1."):
        raise Refused(400, "malformed request line")
    headers: list[tuple[str, str]] = []
    for line in lines[1:]:
        if not line:
            continue
        name, colon, value = line.partition(":")
        if not colon or not name or name != name.strip():
            raise Refused(400, "malformed header line")
        headers.append((name, value.strip()))
    return parts[0], parts[1], headers


def split_authority(authority: str, default_port: int | None) -> tuple[str, int]:
    """Host and port of `host:port` or `[v6]:port`; Refused(400) when malformed."""
    if "@" in authority:
        raise Refused(400, "user:password@ in the authority is refused")
    if authority.startswith("["):
        host, _, tail = authority[1:].partition("]")
        port_text = tail[1:] if tail.startswith(":") else ("" if not tail else "x")
    else:
        host, _, port_text = authority.partition(":")
    if not port_text and default_port is not None:
        return host, default_port
    if not port_text.isascii() or not port_text.isdigit() or not 0 < int(port_text) < 65536 or not host:
        raise Refused(400, f"malformed host and port {authority[:100]!r}")
    return host, int(port_text)


def content_length(headers: list[tuple[str, str]]) -> int:
    values = {value for name, value in headers if name.lower() == "content-length"}
    if not values:
        return 0
    if len(values) > 1 or not next(iter(values)).isdigit():
        raise Refused(400, "malformed Content-Length")
    return int(next(iter(values)))


def _named_in_connection(headers: list[tuple[str, str]]) -> set[str]:
    named: set[str] = set()
    for name, value in headers:
        if name.lower() in ("connection", "proxy-connection"):
            named.update(token.strip().lower() for token in value.split(","))
    return named


def end_to_end(headers: list[tuple[str, str]]) -> bytes:
    """The request's end-to-end headers, then `Connection: close` and the blank line."""
    dropped = HOP_BY_HOP | _named_in_connection(headers)
    kept = "".join(f"{name}: {value}\r\n" for name, value in headers if name.lower() not in dropped)
    return (kept + "Connection: close\r\n\r\n").encode("latin-1")


def rewrite_response_head(head: bytes) -> bytes:
    """A response head with its hop-by-hop connection headers replaced by `Connection: close`."""
    lines = head.decode("latin-1").split("\r\n")
    headers = []
    for line in lines[1:]:
        name, colon, value = line.partition(":")
        if line and colon:
            headers.append((name, value.strip()))
    dropped = {"connection", "proxy-connection", "keep-alive"} | (
        _named_in_connection(headers) - {"transfer-encoding"}
    )
    kept = "".join(f"{name}: {value}\r\n" for name, value in headers if name.lower() not in dropped)
    return f"{lines[0]}\r\n{kept}Connection: close\r\nProxy-Connection: close\r\n\r\n".encode("latin-1")


def error_response(status: int, reason: str) -> bytes:
    phrases = {400: "Bad Request", 403: "Forbidden", 431: "Request Header Fields Too Large"}
    phrases.update({501: "Not Implemented", 502: "Bad Gateway"})
    body = (reason + "\n").encode("utf-8", "replace")
    return (
        f"HTTP/1.1 {status} {phrases.get(status, 'Error')}\r\nContent-Type: text/plain; charset=utf-8\r\n"
        f"Content-Length: {len(body)}\r\nConnection: close\r\nProxy-Connection: close\r\n"
        "X-Fermix-Guard: refused\r\n\r\n"
    ).encode("latin-1") + body


# -- relaying --------------------------------------------------------------------------------------


def relay(a: socket.socket, b: socket.socket) -> None:
    """Copy bytes both ways until both sides have finished sending (half-closes passed on).

    No idle timeout: a tunnel (a WebSocket) may rightly stay silent for hours; it ends when a side closes.
    """
    a.settimeout(None)
    b.settimeout(None)
    other = threading.Thread(target=_pump, args=(b, a), daemon=True)
    other.start()
    _pump(a, b)
    other.join()


def _pump(source: socket.socket, sink: socket.socket) -> None:
    try:
        while data := source.recv(CHUNK):
            sink.sendall(data)
    except OSError:
        # One side failed (reset, timeout): end both directions so the other pump stops too.
        for sock in (source, sink):
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
        return
    with contextlib.suppress(OSError):
        sink.shutdown(socket.SHUT_WR)
