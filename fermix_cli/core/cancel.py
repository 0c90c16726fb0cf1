"""A cancel token: how whoever started a call tells the work still running in it to stop.

The caller that gives up on a call (an MCP client's `notifications/cancelled`, a server shutting down)
sets the token on the call's `ToolContext` (`ctx.cancel`); work that can run for long watches it. The
shell runner (`shell.procgroup.run_captured`) waits on `wake_fd()` next to the child's output, so a
cancel stops the child's whole process group at once instead of at the command's timeout. Setting it is
safe from any thread and idempotent; it is never unset.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Iterator


class CancelToken:
    __slots__ = ("_event", "_lock", "_wakers", "reason")

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._wakers: list[int] = []
        self.reason = ""

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self, reason: str = "the caller cancelled the call") -> None:
        """Mark the call cancelled and wake everything waiting on it (the first reason is kept)."""
        with self._lock:
            if self._event.is_set():
                return
            self.reason = reason
            self._event.set()
            for fd in self._wakers:
                with contextlib.suppress(OSError):
                    os.write(fd, b"x")

    def wait(self, timeout: float | None = None) -> bool:
        """Block until cancelled (True) or until `timeout` seconds pass (False)."""
        return self._event.wait(timeout)

    @contextlib.contextmanager
    def wake_fd(self) -> Iterator[int]:
        """A descriptor that turns readable once the token is cancelled (already readable if it is)."""
        read, write = os.pipe()
        os.set_blocking(write, False)
        with self._lock:
            self._wakers.append(write)
            if self._event.is_set():
                os.write(write, b"x")
        try:
            yield read
        finally:
            with self._lock:
                self._wakers.remove(write)
            os.close(read)
            os.close(write)
