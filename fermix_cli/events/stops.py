"""SIGTERM, SIGINT and SIGHUP during a reminder pass: stop between sends, never between a claim and its record.

`fermix jobs run` may be stopped (systemd, a shutdown, Ctrl-C) while it sends reminders. Outside a
send a signal only marks the pass stopped: the claim or record under way finishes, and the loop ends
before the next claim, so every reminder not yet claimed stays `pending` for the next tick. Inside a
send (`interruptible`) it raises `Stopped` at once, and that one reminder, which may or may not have
reached the channel, is the only one recorded as interrupted. The scheduled jobs' dispatcher does the
same for its runs (`jobs/runner.py`).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType
from typing import Any

from ..core.cancel import stop_signals

SIGNALS = (signal.SIGTERM, signal.SIGINT)  # and SIGHUP (the terminal closed) unless it is ignored
EXIT_CODES = {"SIGTERM": 143, "SIGINT": 130, "SIGHUP": 129}


class Stopped(BaseException):
    """A stop signal arrived during a send (a BaseException: no `except Exception` in a channel
    takes it for a failed send)."""


class StopGuard:
    """Installs the handlers while the pass runs (main thread only; elsewhere signals keep theirs)."""

    def __init__(self) -> None:
        self.stopped: str | None = None  # the signal's name once one arrived
        self._interruptible = 0
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopGuard:
        if threading.current_thread() is threading.main_thread():
            self._previous = {s: signal.signal(s, self._handler) for s in stop_signals(*SIGNALS)}
        return self

    def __exit__(self, *exc: object) -> None:
        for s, previous in self._previous.items():
            signal.signal(s, previous)
        self._previous = {}

    def _handler(self, signum: int, frame: FrameType | None) -> None:
        self.stopped = self.stopped or signal.Signals(signum).name
        if self._interruptible:
            raise Stopped(self.stopped)

    @contextlib.contextmanager
    def interruptible(self) -> Iterator[None]:
        """A block a signal cuts short (a send: it may wait on the network for a long time)."""
        if self.stopped:
            raise Stopped(self.stopped)
        self._interruptible += 1
        try:
            yield
        finally:
            self._interruptible -= 1

    @property
    def exit_code(self) -> int:
        return EXIT_CODES.get(self.stopped or "", 0)
