"""Reading a guarded response: decoded bytes under a cap, bounded decompression, text and lines.

Imported only when a client is built (`net.client.guarded_client`), so it may import httpx at the top.
"""

from __future__ import annotations

import codecs
import json as jsonlib
import re
import time
import zlib
from collections.abc import Iterator
from typing import Any, Self

import httpx

from fermix_cli.core.errors import ToolError
from fermix_cli.core.net.deadline import exchange_deadline, ran_out_of_time, total_timeout_error
from fermix_cli.core.net.guard import redact_url

from ..records import Record

_LINE_END = re.compile(r"\r\n|\r|\n")


class GuardedResponse(Record):
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
                "network",
                f"HTTP {self.status_code}",
                {"status": self.status_code, "url": redact_url(self.url)},
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
    except (LookupError, UnicodeError):  # unknown, or a codec that refuses to replace (idna, punycode)
        return content.decode("utf-8", errors="replace")


GZIP_MAGIC = b"\x1f\x8b"


class BoundedDecoder:
    """Undoes gzip/deflate content coding without ever producing more than asked for.

    A gzip body may hold several members one after another (RFC 1952); each is decoded in turn. Bytes
    after the last member that do not start another one (padding) are ignored, as gzip(1) does.
    """

    def __init__(self, content_encoding: str) -> None:
        codings = [c.strip().lower() for c in content_encoding.split(",")]
        codings = [c for c in codings if c and c != "identity"]
        self._raw_deflate_fallback = False
        self._gzip = False
        self._between = False  # a gzip member ended; the next input starts another one (or is padding)
        self._carry = b""  # input of the next gzip member, not yet decoded
        self._done = False  # padding after the last gzip member: ignore the rest
        self._zlib: Any = None
        if not codings:
            return
        if len(codings) == 1 and codings[0] in ("gzip", "x-gzip"):
            self._zlib = zlib.decompressobj(zlib.MAX_WBITS | 16)
            self._gzip = True
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

    @property
    def active(self) -> bool:
        """Whether the body is compressed (identity bodies pass through `decode` unchanged)."""
        return self._zlib is not None

    def decode_pieces(self, data: bytes, piece: int) -> Iterator[bytes]:
        """All decoded bytes of `data`, in pieces of at most `piece` bytes (for a consumer that caps)."""
        out = self.decode(data, piece)
        while True:
            if out:
                yield out
            # Input zlib left for lack of room; once a member ended, what follows is in `_carry`.
            live = self._zlib is not None and not self._between
            tail = self._zlib.unconsumed_tail if live else b""
            if not tail and len(self._carry) < len(GZIP_MAGIC):
                return
            out = self.decode(tail, piece)

    def decode(self, data: bytes, max_length: int) -> bytes:
        """Decoded bytes for `data`, at most `max_length` of them (more input is then left unread)."""
        if self._zlib is None:
            return data
        out = b""
        while not self._done and (data or (self._between and self._carry)):
            if self._between:  # a gzip member ended: what follows starts another, or is padding
                data, self._carry = self._carry + data, b""
                if len(data) < len(GZIP_MAGIC) and GZIP_MAGIC.startswith(data):
                    self._carry = data  # perhaps the start of another member: wait for more
                    break
                if not data.startswith(GZIP_MAGIC):
                    self._done = True
                    break
                if len(out) >= max_length:
                    self._carry = data  # the next member waits for the next call
                    break
                self._between = False
                self._zlib = zlib.decompressobj(zlib.MAX_WBITS | 16)
            out += self._inflate(data, max_length - len(out))
            if not (self._gzip and self._zlib.eof):
                break
            data, self._between = self._zlib.unused_data, True
        return out

    def _inflate(self, data: bytes, max_length: int) -> bytes:
        try:
            out = bytes(self._zlib.decompress(data, max_length))
        except zlib.error as exc:
            if not self._raw_deflate_fallback:
                raise ToolError("network", f"could not decode the response body: {exc}") from exc
            self._raw_deflate_fallback = False
            self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)
            return self._inflate(data, max_length)
        if data:
            self._raw_deflate_fallback = False
        return out


class Closable:
    """Something to close when done; `with` closes it."""

    def close(self) -> None:
        raise NotImplementedError

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class GuardedStream(Closable):
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
            decoder = BoundedDecoder(self._response.headers.get("content-encoding", ""))
            for raw in self._raw_chunks():
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

    def _raw_chunks(self) -> Iterator[bytes]:
        # Each socket wait runs under the deadline, which is set only around the wait itself: a
        # generator must not leave it set in its consumer's context between chunks.
        chunks = self._response.iter_raw()
        while True:
            try:
                with exchange_deadline(self._deadline):
                    raw = next(chunks, None)
            except ToolError as exc:
                if ran_out_of_time(exc):
                    raise total_timeout_error(self.url) from exc
                raise
            if raw is None:
                return
            yield raw

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

    def _too_large(self) -> ToolError:
        return ToolError(
            "too_large",
            f"response body exceeded {self._max_body} bytes",
            {"limit": self._max_body, "url": redact_url(self.url)},
        )

    def _check_deadline(self) -> None:
        if self._deadline is not None and time.monotonic() > self._deadline:
            raise total_timeout_error(self.url)


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
