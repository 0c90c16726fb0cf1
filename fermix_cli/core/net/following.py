"""A guarded transport for a stock `httpx.Client`: redirects followed and bodies decoded as fermix does.

httpx's own redirect handling forwards every header but `Authorization` to another origin (an
`x-api-key` would leak), and its decoders inflate a gzip body whole. `FollowingTransport` wraps the
guarded transport and does both the way `GuardedClient` does: each hop is checked, only
`CROSS_ORIGIN_HEADERS` cross an origin, and gzip/deflate are undone by `BoundedDecoder` under a cap.
Give the client `follow_redirects=False`: the transport follows them. Imported only when a client is
built, so it may import httpx at the top.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx

from fermix_cli.core.errors import ToolError
from fermix_cli.core.net.guard import DEFAULT_MAX_BODY, redact_url, redirect_refusal
from fermix_cli.core.net.httpclient import (
    BODY_HEADERS,
    CROSS_ORIGIN_HEADERS,
    REDIRECT_STATUSES,
    checked_redirect,
    origin_of,
)
from fermix_cli.core.net.response import BoundedDecoder

DECODE_PIECE = 65_536  # decoded bytes per step, so no single network chunk inflates without bound


class _DecodedStream(httpx.SyncByteStream):
    """A compressed body, inflated piece by piece; more than `max_body` decoded bytes raise `too_large`."""

    def __init__(self, raw: httpx.SyncByteStream, decoder: BoundedDecoder, max_body: int, url: str) -> None:
        self._raw, self._decoder, self._max_body, self._url = raw, decoder, max_body, url

    def __iter__(self) -> Iterator[bytes]:
        produced = 0
        for chunk in self._raw:
            for piece in self._decoder.decode_pieces(chunk, DECODE_PIECE):
                produced += len(piece)
                if produced > self._max_body:
                    raise ToolError(
                        "too_large",
                        f"response body exceeded {self._max_body} bytes once decoded",
                        {"limit": self._max_body, "url": redact_url(self._url)},
                    )
                yield piece

    def close(self) -> None:
        self._raw.close()


class FollowingTransport(httpx.BaseTransport):
    """Follows redirects (each hop checked, credentials kept to their origin) and bounds decoded bodies."""

    def __init__(
        self, inner: httpx.BaseTransport, *, max_redirects: int = 5, max_body: int = DEFAULT_MAX_BODY
    ) -> None:
        self._inner = inner
        self._max_redirects = max_redirects
        self._max_body = max_body

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        redirects: list[str] = []
        while True:
            # The decoder below undoes gzip and deflate only; never ask for anything else.
            request.headers["accept-encoding"] = "gzip, deflate"
            try:
                response = self._inner.handle_request(request)
            except ToolError as exc:
                if exc.code != "blocked_url" or not redirects:
                    raise
                raise redirect_refusal(exc, redirects[-1], str(request.url)) from exc
            if response.status_code not in REDIRECT_STATUSES:
                return self._decoded(response, request)
            location = response.headers.get("location", "").strip()
            response.close()
            url = str(request.url)
            if not location:
                raise ToolError("network", "redirect missing location", {"url": redact_url(url)})
            if len(redirects) >= self._max_redirects:
                raise ToolError(
                    "redirect_limit",
                    f"exceeded {self._max_redirects} redirects",
                    {"url": redact_url(url), "redirects": [redact_url(u) for u in [*redirects, url]]},
                )
            redirects.append(url)
            request = self._next(request, response.status_code, checked_redirect(url, location))

    def close(self) -> None:
        self._inner.close()

    def _next(self, request: httpx.Request, status: int, target: str) -> httpx.Request:
        method = request.method
        headers = {k: v for k, v in request.headers.items() if k != "host"}
        content: bytes | None = request.read()
        if (status == 303 and method != "HEAD") or (status in (301, 302) and method == "POST"):
            method, content = "GET", None
            headers = {k: v for k, v in headers.items() if k not in BODY_HEADERS}
        if origin_of(target) != origin_of(str(request.url)):
            headers = {k: v for k, v in headers.items() if k in CROSS_ORIGIN_HEADERS}
        return httpx.Request(method, target, headers=headers, content=content, extensions=request.extensions)

    def _decoded(self, response: httpx.Response, request: httpx.Request) -> httpx.Response:
        decoder = BoundedDecoder(response.headers.get("content-encoding", ""))
        if not decoder.active:
            return response
        # httpx must not decode again (unbounded): the body it sees is already plain.
        headers = [
            (k, v)
            for k, v in response.headers.multi_items()
            if k.lower() not in ("content-encoding", "content-length")
        ]
        assert isinstance(response.stream, httpx.SyncByteStream)
        return httpx.Response(
            response.status_code,
            headers=headers,
            stream=_DecodedStream(response.stream, decoder, self._max_body, str(request.url)),
            extensions=response.extensions,
            request=request,
        )
