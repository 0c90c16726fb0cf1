"""The total deadline of a guarded exchange, enforced on every socket wait, headers included.

A server that sends its status line and headers one byte at a time resets the per-read timeout with each
byte; only an absolute deadline checked by every read stops it. `GuardedClient` sets the deadline for the
thread while it sends and while its stream is read; `DeadlineBackend` wraps each socket so that a read or
write never waits past it. Imported only when a client is built, so it may import httpcore at the top.
"""

from __future__ import annotations

import contextlib
import contextvars
import ssl
import time
from collections.abc import Iterable, Iterator
from typing import Any

import httpcore

from fermix_cli.core.errors import ToolError
from fermix_cli.core.net.guard import redact_url

TOTAL_TIMEOUT_MESSAGE = "the exchange took longer than its total time limit"

# The monotonic time by which the exchange running in this thread must end (None: no overall bound).
_deadline: contextvars.ContextVar[float | None] = contextvars.ContextVar("fermix_net_deadline", default=None)


@contextlib.contextmanager
def exchange_deadline(deadline: float | None) -> Iterator[None]:
    """Bound every socket read and write in this block by `deadline` (see `DeadlineBackend`)."""
    token = _deadline.set(deadline)
    try:
        yield
    finally:
        _deadline.reset(token)


def total_timeout_error(url: str) -> ToolError:
    """The `timeout` error of an exchange that ran past its total time limit."""
    return ToolError("timeout", TOTAL_TIMEOUT_MESSAGE, {"url": redact_url(url)})


def ran_out_of_time(exc: ToolError) -> bool:
    """Whether a transport error was a socket wait cut short by the exchange's deadline."""
    return isinstance(exc.__cause__, _TotalTimeout)


class _TotalTimeout(httpcore.ReadTimeout):
    """A socket wait cut short by the exchange's total deadline rather than by the read timeout."""


class DeadlineStream(httpcore.NetworkStream):
    """A network stream whose every wait ends by the exchange's deadline, not only by the per-read timeout.

    A server that sends its status line and headers one byte at a time resets the read timeout with each
    byte; only an absolute deadline per read stops it.
    """

    def __init__(self, inner: httpcore.NetworkStream) -> None:
        self._inner = inner

    def _timeout(self, timeout: float | None) -> tuple[float | None, bool]:
        deadline = _deadline.get()
        if deadline is None:
            return timeout, False
        left = deadline - time.monotonic()
        if left <= 0:
            raise _TotalTimeout(TOTAL_TIMEOUT_MESSAGE)
        if timeout is None or left < timeout:
            return left, True
        return timeout, False

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        bounded, by_deadline = self._timeout(timeout)
        try:
            return self._inner.read(max_bytes, bounded)
        except httpcore.ReadTimeout as exc:
            if by_deadline:
                raise _TotalTimeout(TOTAL_TIMEOUT_MESSAGE) from exc
            raise

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        bounded, by_deadline = self._timeout(timeout)
        try:
            self._inner.write(buffer, bounded)
        except httpcore.WriteTimeout as exc:
            if by_deadline:
                raise _TotalTimeout(TOTAL_TIMEOUT_MESSAGE) from exc
            raise

    def close(self) -> None:
        self._inner.close()

    def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.NetworkStream:
        bounded, _ = self._timeout(timeout)
        return DeadlineStream(self._inner.start_tls(ssl_context, server_hostname, bounded))

    def get_extra_info(self, info: str) -> Any:
        return self._inner.get_extra_info(info)


class DeadlineBackend(httpcore.NetworkBackend):
    """Opens sockets through `inner` and wraps each in a `DeadlineStream`."""

    def __init__(self, inner: httpcore.NetworkBackend | None = None) -> None:
        self._inner = inner or httpcore.SyncBackend()

    def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.NetworkStream:
        stream = self._inner.connect_tcp(
            host, port, timeout=timeout, local_address=local_address, socket_options=socket_options
        )
        return DeadlineStream(stream)

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)
