"""The guarded HTTP client: every hop judged, redirects followed by fermix, time limits per exchange.

Imported only when a client is built (`net.client.guarded_client`), so it may import httpx at the top.
"""

from __future__ import annotations

import ssl
import time
from collections.abc import Mapping
from typing import Any, TypedDict, Unpack
from urllib.parse import urlencode, urljoin

import httpcore
import httpx

from fermix_cli import __version__
from fermix_cli.core.errors import ToolError
from fermix_cli.core.net.deadline import (
    DeadlineBackend,
    exchange_deadline,
    ran_out_of_time,
    total_timeout_error,
)
from fermix_cli.core.net.guard import (
    DEFAULT_MAX_BODY,
    HostGuard,
    blocked_url_error,
    check_url,
    encode_location,
    redact_url,
    redirect_refusal,
)
from fermix_cli.core.net.response import Closable, GuardedResponse, GuardedStream
from fermix_cli.core.net.transport import GuardedTransport

from ..records import Record, field

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
# Headers kept when a redirect leaves the origin; credentials of any spelling are dropped.
CROSS_ORIGIN_HEADERS = frozenset(
    {"user-agent", "accept", "accept-language", "accept-encoding", "content-type"}
)
BODY_HEADERS = ("content-type", "content-length", "transfer-encoding", "content-encoding")


class NetLimits(Record, frozen=True):
    """Size and time limits of a guarded client; `total_timeout` None means no overall bound."""

    max_body: int = DEFAULT_MAX_BODY
    max_redirects: int = 5
    connect_timeout: float = 3.0
    read_timeout: float = 15.0
    total_timeout: float | None = 60.0


class _Body(Record):
    content: bytes | None = None
    json: Any = None
    data: Mapping[str, Any] | None = None


class _Exchange(Record):
    """One request as it moves through redirects."""

    method: str
    url: str
    headers: dict[str, str]
    body: _Body
    redirects: list[str] = field(default_factory=list)


class RequestOptions(TypedDict, total=False):
    """What a request may carry besides its method and URL; the last three override the client's limits."""

    headers: Mapping[str, str] | None
    params: Mapping[str, Any] | None
    content: bytes | str | None
    json: Any
    data: Mapping[str, Any] | None
    max_body: int | None
    read_timeout: float | None
    total_timeout: float | None


class GuardedClient(Closable):
    """The HTTP client every fermix request goes through (build it with `net.client.guarded_client`)."""

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
            guard,
            verify=verify,
            socket_backend=DeadlineBackend(socket_backend),
            judge_each_request=False,
        )

    def request(
        self, method: str, url: str, *, truncate: bool = False, **options: Unpack[RequestOptions]
    ) -> GuardedResponse:
        """Send a request, follow redirects, and read the whole body (any status; see `raise_for_status`).

        `max_body`, `read_timeout` and `total_timeout` override the client's limits (None keeps them; pass
        `math.inf` as `total_timeout` for no overall bound). With `truncate`, a body over the cap is cut
        and `truncated` set instead of raising `too_large`.
        """
        with self.stream(method, url, **options) as response:
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

    def stream(self, method: str, url: str, **options: Unpack[RequestOptions]) -> GuardedStream:
        """Send a request and follow redirects; the body is read from the returned stream (close it).

        Use as `with client.stream("POST", url, json=...) as response: for line in response.iter_lines()`.
        """
        total_timeout = options.get("total_timeout")
        timeout = self.limits.total_timeout if total_timeout is None else total_timeout
        deadline = None if timeout is None else time.monotonic() + timeout
        checked = check_url(url).url
        params = options.get("params")
        if params:
            separator = "&" if "?" in checked else "?"
            checked = check_url(checked + separator + urlencode(params, doseq=True)).url
        content = options.get("content")
        raw = content.encode("utf-8") if isinstance(content, str) else content
        body = _Body(raw, options.get("json"), options.get("data"))
        exchange = _Exchange(method.upper(), checked, self._headers(options.get("headers")), body)
        read_timeout = options.get("read_timeout")
        read = self.limits.read_timeout if read_timeout is None else read_timeout
        response = self._follow(exchange, read, deadline)
        max_body = options.get("max_body")
        return GuardedStream(
            response,
            max_body=self.limits.max_body if max_body is None else max_body,
            deadline=deadline,
            redirects=tuple(exchange.redirects),
        )

    def close(self) -> None:
        self.transport.close()

    def _headers(self, extra: Mapping[str, str] | None) -> dict[str, str]:
        headers = {"user-agent": self.user_agent, "accept": "*/*"}
        headers.update({k.lower(): v for k, v in (extra or {}).items()})
        # The body decoder only undoes gzip and deflate, each bounded; never ask for anything else.
        headers["accept-encoding"] = "gzip, deflate"
        return headers

    def _follow(self, exchange: _Exchange, read_timeout: float, deadline: float | None) -> httpx.Response:
        while True:
            try:
                response = self._send(exchange, read_timeout, deadline)
            except ToolError as exc:
                if exc.code != "blocked_url" or not exchange.redirects:
                    raise
                raise redirect_refusal(exc, exchange.redirects[-1], exchange.url) from exc
            if not self.follow_redirects or response.status_code not in REDIRECT_STATUSES:
                return response
            location = response.headers.get("location", "").strip()
            response.close()
            if not location:
                raise ToolError("network", "redirect missing location", {"url": redact_url(exchange.url)})
            if len(exchange.redirects) >= self.limits.max_redirects:
                raise ToolError(
                    "redirect_limit",
                    f"exceeded {self.limits.max_redirects} redirects",
                    {
                        "url": redact_url(exchange.url),
                        "redirects": [redact_url(u) for u in [*exchange.redirects, exchange.url]],
                    },
                )
            self._redirect(exchange, response.status_code, location)

    def _redirect(self, exchange: _Exchange, status: int, location: str) -> None:
        """Move `exchange` to the next hop, re-checking its URL (the address is checked at connect)."""
        next_url = checked_redirect(exchange.url, location)
        if (status == 303 and exchange.method != "HEAD") or (
            status in (301, 302) and exchange.method == "POST"
        ):
            exchange.method = "GET"
            exchange.body = _Body()
            for name in BODY_HEADERS:
                exchange.headers.pop(name, None)
        if origin_of(next_url) != origin_of(exchange.url):
            exchange.headers = {k: v for k, v in exchange.headers.items() if k in CROSS_ORIGIN_HEADERS}
        exchange.redirects.append(exchange.url)
        exchange.url = next_url

    def _send(self, exchange: _Exchange, read_timeout: float, deadline: float | None) -> httpx.Response:
        connect, read = self.limits.connect_timeout, read_timeout
        if deadline is not None:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise total_timeout_error(exchange.url)
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
            raise blocked_url_error(
                "invalid_url",
                f"cannot send to this URL ({exc}); spell IPv4 addresses as a.b.c.d",
                url=exchange.url,
            ) from exc
        try:
            with exchange_deadline(deadline):
                return self.transport.handle_request(request)
        except ToolError as exc:
            if ran_out_of_time(exc):
                raise total_timeout_error(exchange.url) from exc
            raise


def checked_redirect(source: str, location: str) -> str:
    """The checked URL a redirect from `source` with this `Location` leads to; raises `blocked_url`.

    Spaces and non-ASCII in the path and query are percent-encoded first, as browsers do; a refusal
    names the redirect and where it came from.
    """
    target = urljoin(source, encode_location(location))
    try:
        return check_url(target).url
    except ToolError as exc:
        raise redirect_refusal(exc, source, target) from exc


def origin_of(url: str) -> tuple[str, str, int]:
    """Scheme, host and port: what decides whether credentials may follow a redirect."""
    checked = check_url(url)
    return checked.scheme, checked.host, checked.port
