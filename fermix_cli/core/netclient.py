"""The guarded HTTP client: manual redirects, time limits and a cap on decoded body bytes.

Imported only when a client is built (`netguard.guarded_client`), so it may import httpx at the top.
"""

from __future__ import annotations

import codecs
import json as jsonlib
import re
import ssl
import time
import zlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin

import httpcore
import httpx

from fermix_cli import __version__
from fermix_cli.core.errors import ToolError
from fermix_cli.core.netguard import HostGuard, blocked, check_url
from fermix_cli.core.nettransport import GuardedTransport

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
# Headers kept when a redirect leaves the origin; credentials of any spelling are dropped.
CROSS_ORIGIN_HEADERS = frozenset(
    {"user-agent", "accept", "accept-language", "accept-encoding", "content-type"}
)
BODY_HEADERS = ("content-type", "content-length", "transfer-encoding", "content-encoding")
_LINE_END = re.compile(r"\r\n|\r|\n")


@dataclass(frozen=True)
class NetLimits:
    """Size and time limits of a guarded client; `total_timeout` None means no overall bound."""

    max_body: int = 1_048_576
    max_redirects: int = 5
    connect_timeout: float = 3.0
    read_timeout: float = 15.0
    total_timeout: float | None = 60.0


@dataclass
class GuardedResponse:
    """A finished response: status, headers, final URL and the decoded body (capped)."""

    status_code: int
    headers: httpx.Headers
    url: str
    content: bytes
    truncated: bool = False
    redirects: tuple[str, ...] = ()

    @property
    def text(self) -> str:
        """The body decoded with the charset the server declared (UTF-8 otherwise); bad bytes become U+FFFD."""
        return decode_text(self.content, self.headers)

    def json(self) -> Any:
        return jsonlib.loads(self.content)

    def raise_for_status(self) -> GuardedResponse:
        """Return self when the status is 2xx, else raise `network: HTTP N`."""
        if not 200 <= self.status_code < 300:
            raise ToolError(
                "network", f"HTTP {self.status_code}", {"status": self.status_code, "url": self.url}
            )
        return self


def decode_text(content: bytes, headers: httpx.Headers) -> str:
    """Bytes to text by the Content-Type charset, falling back to UTF-8 with replacement."""
    charset = "utf-8"
    for param in headers.get("content-type", "").split(";")[1:]:
        key, _, value = param.strip().partition("=")
        if key.lower() == "charset" and value:
            charset = value.strip("\"' ")
    try:
        return content.decode(charset, errors="replace")
    except LookupError:
        return content.decode("utf-8", errors="replace")


class _BoundedDecoder:
    """Undoes gzip/deflate content coding without ever producing more than asked for."""

    def __init__(self, content_encoding: str) -> None:
        codings = [c.strip().lower() for c in content_encoding.split(",")]
        codings = [c for c in codings if c and c != "identity"]
        self._raw_deflate_fallback = False
        self._zlib: Any = None
        if not codings:
            return
        if len(codings) == 1 and codings[0] in ("gzip", "x-gzip"):
            self._zlib = zlib.decompressobj(zlib.MAX_WBITS | 16)
        elif len(codings) == 1 and codings[0] == "deflate":
            # "deflate" should be zlib-wrapped, but some servers send raw deflate; retry once as raw.
            self._zlib = zlib.decompressobj()
            self._raw_deflate_fallback = True
        else:
            raise ToolError(
                "network",
                f"unsupported content-encoding {content_encoding!r} (fermix accepts gzip and deflate)",
                {"content_encoding": content_encoding},
            )

    def decode(self, data: bytes, max_length: int) -> bytes:
        """Decoded bytes for `data`, at most `max_length` of them (more input is then left unread)."""
        if self._zlib is None:
            return data
        try:
            out = bytes(self._zlib.decompress(data, max_length))
        except zlib.error as exc:
            if not self._raw_deflate_fallback:
                raise ToolError("network", f"could not decode the response body: {exc}") from exc
            self._raw_deflate_fallback = False
            self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
            return self.decode(data, max_length)
        if data:
            self._raw_deflate_fallback = False
        return out


@dataclass
class _Body:
    content: bytes | None = None
    json: Any = None
    data: Mapping[str, Any] | None = None

    def present(self) -> bool:
        return self.content is not None or self.json is not None or self.data is not None


@dataclass
class _Exchange:
    """One request as it moves through redirects."""

    method: str
    url: str
    headers: dict[str, str]
    body: _Body
    redirects: list[str] = field(default_factory=list)


class GuardedStream:
    """An open response whose body is read on demand: decoded, capped and bounded in time."""

    def __init__(
        self, response: httpx.Response, *, max_body: int, deadline: float | None, redirects: tuple[str, ...]
    ) -> None:
        self._response = response
        self._max_body = max_body
        self._deadline = deadline
        self.status_code = response.status_code
        self.headers = response.headers
        self.url = str(response.request.url)
        self.redirects = redirects
        self.truncated = False

    def iter_bytes(self, *, truncate: bool = False) -> Iterator[bytes]:
        """Decoded body chunks; past `max_body` bytes raise `too_large`, or stop with `truncated` set."""
        limit = self._max_body
        length = self._response.headers.get("content-length", "")
        encoded = self._response.headers.get("content-encoding", "identity").strip().lower() != "identity"
        if not truncate and not encoded and length.isdigit() and int(length) > limit:
            self.close()
            raise self._too_large()
        produced = 0
        try:
            decoder = _BoundedDecoder(self._response.headers.get("content-encoding", ""))
            for raw in self._response.iter_raw():
                self._check_deadline()
                chunk = decoder.decode(raw, limit - produced + 1)
                if produced + len(chunk) > limit:
                    if not truncate:
                        raise self._too_large()
                    self.truncated = True
                    if limit > produced:
                        yield chunk[: limit - produced]
                    return
                produced += len(chunk)
                if chunk:
                    yield chunk
        finally:
            self.close()

    def iter_lines(self) -> Iterator[str]:
        """Decoded body as text lines without their endings (`\\n`, `\\r\\n` or `\\r`), e.g. for SSE."""
        decoder = _utf8_decoder()
        pending = ""
        for chunk in self.iter_bytes():
            lines, pending = _split_lines(pending + decoder.decode(chunk), final=False)
            yield from lines
        lines, pending = _split_lines(pending + decoder.decode(b"", final=True), final=True)
        yield from lines
        if pending:
            yield pending

    def read(self, *, truncate: bool = False) -> bytes:
        """The whole decoded body (see `iter_bytes` for the cap)."""
        return b"".join(self.iter_bytes(truncate=truncate))

    def close(self) -> None:
        self._response.close()

    def __enter__(self) -> GuardedStream:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _too_large(self) -> ToolError:
        return ToolError(
            "too_large",
            f"response body exceeded {self._max_body} bytes",
            {"limit": self._max_body, "url": self.url},
        )

    def _check_deadline(self) -> None:
        if self._deadline is not None and time.monotonic() > self._deadline:
            raise ToolError(
                "network", "the exchange took longer than its total time limit", {"url": self.url}
            )


def _utf8_decoder() -> codecs.IncrementalDecoder:
    return codecs.getincrementaldecoder("utf-8")(errors="replace")


def _split_lines(text: str, *, final: bool) -> tuple[list[str], str]:
    """Complete lines of `text` and the unfinished rest; a final lone `\\r` waits for a possible `\\n`."""
    lines: list[str] = []
    start = 0
    for match in _LINE_END.finditer(text):
        if match.group() == "\r" and match.end() == len(text) and not final:
            break
        lines.append(text[start : match.start()])
        start = match.end()
    return lines, text[start:]


class GuardedClient:
    """The HTTP client every fermix request goes through (build it with `netguard.guarded_client`)."""

    def __init__(
        self,
        guard: HostGuard,
        *,
        limits: NetLimits | None = None,
        follow_redirects: bool = True,
        user_agent: str | None = None,
        verify: ssl.SSLContext | None = None,
        socket_backend: httpcore.NetworkBackend | None = None,
    ) -> None:
        self.guard = guard
        self.limits = limits or NetLimits()
        self.follow_redirects = follow_redirects
        self.user_agent = user_agent or f"fermix/{__version__}"
        # This client judges each hop itself, before httpx parses the URL (httpx refuses spellings such
        # as 0177.0.0.1 that the resolver accepts); the transport still judges every new connection.
        self.transport = GuardedTransport(
            guard, verify=verify, socket_backend=socket_backend, judge_each_request=False
        )

    def request(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        params: Mapping[str, Any] | None = None,
        content: bytes | str | None = None,
        json: Any = None,
        data: Mapping[str, Any] | None = None,
        truncate: bool = False,
        max_body: int | None = None,
        read_timeout: float | None = None,
        total_timeout: float | None = None,
    ) -> GuardedResponse:
        """Send a request, follow redirects, and read the whole body (any status; see `raise_for_status`).

        The last four override the client's limits for this call (None keeps the client's). With
        `truncate`, a body over the cap is cut and `truncated` set instead of raising `too_large`.
        """
        with self.stream(
            method,
            url,
            headers=headers,
            params=params,
            content=content,
            json=json,
            data=data,
            max_body=max_body,
            read_timeout=read_timeout,
            total_timeout=total_timeout,
        ) as response:
            body = response.read(truncate=truncate)
            return GuardedResponse(
                status_code=response.status_code,
                headers=response.headers,
                url=response.url,
                content=body,
                truncated=response.truncated,
                redirects=response.redirects,
            )

    def get(self, url: str, **kwargs: Any) -> GuardedResponse:
        return self.request("GET", url, **kwargs)

    def post(self, url: str, **kwargs: Any) -> GuardedResponse:
        return self.request("POST", url, **kwargs)

    def stream(
        self,
        method: str,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        params: Mapping[str, Any] | None = None,
        content: bytes | str | None = None,
        json: Any = None,
        data: Mapping[str, Any] | None = None,
        max_body: int | None = None,
        read_timeout: float | None = None,
        total_timeout: float | None = None,
    ) -> GuardedStream:
        """Send a request and follow redirects; the body is read from the returned stream (close it).

        Use as `with client.stream("POST", url, json=...) as response: for line in response.iter_lines()`.
        """
        timeout = self.limits.total_timeout if total_timeout is None else total_timeout
        deadline = None if timeout is None else time.monotonic() + timeout
        checked = check_url(url).url
        if params:
            checked = check_url(str(httpx.URL(checked).copy_merge_params(dict(params)))).url
        raw = content.encode("utf-8") if isinstance(content, str) else content
        exchange = _Exchange(method.upper(), checked, self._headers(headers), _Body(raw, json, data))
        read = self.limits.read_timeout if read_timeout is None else read_timeout
        response = self._follow(exchange, read, deadline)
        return GuardedStream(
            response,
            max_body=self.limits.max_body if max_body is None else max_body,
            deadline=deadline,
            redirects=tuple(exchange.redirects),
        )

    def close(self) -> None:
        self.transport.close()

    def __enter__(self) -> GuardedClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _headers(self, extra: Mapping[str, str] | None) -> dict[str, str]:
        headers = {"user-agent": self.user_agent, "accept": "*/*"}
        headers.update({k.lower(): v for k, v in (extra or {}).items()})
        # The body decoder only undoes gzip and deflate, each bounded; never ask for anything else.
        headers["accept-encoding"] = "gzip, deflate"
        return headers

    def _follow(self, exchange: _Exchange, read_timeout: float, deadline: float | None) -> httpx.Response:
        while True:
            response = self._send(exchange, read_timeout, deadline)
            if not self.follow_redirects or response.status_code not in REDIRECT_STATUSES:
                return response
            location = response.headers.get("location", "").strip()
            response.close()
            if not location:
                raise ToolError("network", "redirect missing location", {"url": exchange.url})
            if len(exchange.redirects) >= self.limits.max_redirects:
                raise ToolError(
                    "redirect_limit",
                    f"exceeded {self.limits.max_redirects} redirects",
                    {"url": exchange.url, "redirects": [*exchange.redirects, exchange.url]},
                )
            self._redirect(exchange, response.status_code, urljoin(exchange.url, location))

    def _redirect(self, exchange: _Exchange, status: int, target: str) -> None:
        """Move `exchange` to the next hop, re-checking its URL (the address is checked at connect)."""
        next_url = check_url(target).url
        if (status == 303 and exchange.method != "HEAD") or (
            status in (301, 302) and exchange.method == "POST"
        ):
            exchange.method = "GET"
            exchange.body = _Body()
            for name in BODY_HEADERS:
                exchange.headers.pop(name, None)
        if _origin(next_url) != _origin(exchange.url):
            exchange.headers = {k: v for k, v in exchange.headers.items() if k in CROSS_ORIGIN_HEADERS}
        exchange.redirects.append(exchange.url)
        exchange.url = next_url

    def _send(self, exchange: _Exchange, read_timeout: float, deadline: float | None) -> httpx.Response:
        connect, read = self.limits.connect_timeout, read_timeout
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise ToolError(
                    "network", "the exchange took longer than its total time limit", {"url": exchange.url}
                )
            connect, read = min(connect, remaining), min(read, remaining)
        self.guard.addresses(check_url(exchange.url).host)
        body = exchange.body
        try:
            request = httpx.Request(
                exchange.method,
                exchange.url,
                headers=exchange.headers,
                content=body.content,
                json=body.json,
                data=body.data,
                extensions={"timeout": {"connect": connect, "read": read, "write": read, "pool": connect}},
            )
        except httpx.InvalidURL as exc:
            raise blocked(
                "invalid_url",
                f"cannot send to this URL ({exc}); spell IPv4 addresses as a.b.c.d",
                url=exchange.url,
            ) from exc
        return self.transport.handle_request(request)


def _origin(url: str) -> tuple[str, str, int | None]:
    parsed = httpx.URL(url)
    return parsed.scheme, parsed.host, parsed.port
