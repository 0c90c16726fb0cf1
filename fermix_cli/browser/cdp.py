"""A small synchronous Chrome DevTools Protocol client over one WebSocket (`websockets.sync.client`).

One connection to the browser endpoint carries every session (`Target.attachToTarget` with
`flatten: true`), so a CLI call needs one connect and a few round trips. Events that arrive while a
call waits are kept for `wait_event`; a call can be told to give up when an event it names arrives (a
JavaScript dialog blocks the page, so the call that opened it never gets its reply).
"""

from __future__ import annotations

import contextlib
import json
import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

from ..core.errors import ToolError

Event = dict[str, Any]
POLL_STEP = 0.05


class CDPError(Exception):
    """The browser answered a command with an error."""

    def __init__(self, method: str, code: int, message: str) -> None:
        super().__init__(f"{method}: {message} ({code})")
        self.method = method
        self.code = code
        self.message = message


class Interrupted(Exception):
    """A call stopped waiting because an event it was told to watch for arrived."""

    def __init__(self, event: Event) -> None:
        super().__init__(event.get("method", ""))
        self.event = event


class ConnectionLost(Exception):
    """The browser closed the connection (it exited, crashed or was killed)."""


# Imported by websockets at load time but never used on fermix's path: `importlib.metadata` (only for an
# unreleased websockets' version string; it brings in `email`) and `urllib.request` (only to read the
# system proxy settings, and fermix passes proxy=None). Together they were a third of a browser call's
# import time (bench/browser.py). They are stood in for while websockets loads, then removed, so any
# later `import` of them gets the real module.
_UNUSED_BY_WEBSOCKETS = ("importlib.metadata", "urllib.request")


def sync_connect() -> Callable[..., Any]:
    """`websockets.sync.client.connect`, imported without the modules it loads but fermix never uses."""
    import sys

    if "websockets.sync.client" in sys.modules:
        return sys.modules["websockets.sync.client"].connect  # type: ignore[no-any-return]
    import types

    stand_ins = {}
    for name in _UNUSED_BY_WEBSOCKETS:
        if name not in sys.modules:
            stand_ins[name] = sys.modules[name] = types.ModuleType(name, "stand-in while websockets loads")
    try:
        from websockets.sync.client import connect
    finally:
        for name, module in stand_ins.items():
            if sys.modules.get(name) is module:
                del sys.modules[name]
    return connect


class CDPConnection:
    """One WebSocket to a browser's DevTools endpoint."""

    def __init__(self, ws_url: str, *, open_timeout: float = 2.0) -> None:
        connect = sync_connect()
        from websockets.exceptions import InvalidHandshake, InvalidURI

        try:
            self._ws = connect(
                ws_url,
                open_timeout=open_timeout,
                max_size=None,
                compression=None,
                proxy=None,
                ping_interval=None,
                legacy=True,
            )
        except (OSError, TimeoutError, InvalidHandshake, InvalidURI) as exc:
            raise ConnectionLost(f"cannot connect to {ws_url}: {exc}") from exc
        self._next_id = 0
        self.events: deque[Event] = deque()

    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> int:
        """Send a command without waiting for its reply; returns its id."""
        from websockets.exceptions import ConnectionClosed

        self._next_id += 1
        message: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        try:
            self._ws.send(json.dumps(message))
        except ConnectionClosed as exc:
            raise ConnectionLost(str(exc)) from exc
        return self._next_id

    def receive(self, timeout: float | None) -> dict[str, Any] | None:
        """The next message, or None when `timeout` seconds pass first."""
        from websockets.exceptions import ConnectionClosed

        try:
            raw = self._ws.recv(timeout=timeout)
        except TimeoutError:
            return None
        except ConnectionClosed as exc:
            raise ConnectionLost(str(exc)) from exc
        message: dict[str, Any] = json.loads(raw)
        return message

    def call(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        session: str | None = None,
        *,
        timeout: float = 10.0,
        interrupt: Iterable[str] = (),
        poll: Callable[[], Event | None] | None = None,
    ) -> dict[str, Any]:
        """Send a command and return its result; raises CDPError, Interrupted or ToolError(timeout).

        `poll`, when given, is asked every 50 ms while the reply is outstanding; an event it returns
        interrupts the call the way an `interrupt` event does.
        """
        watched = frozenset(interrupt)
        wanted = self.send(method, params, session)
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            step = min(left, POLL_STEP) if poll is not None else left
            message = self.receive(max(step, 0.0)) if left > 0 else None
            if message is None and poll is not None and left > 0:
                if (event := poll()) is not None:
                    raise Interrupted(event)
                continue
            if message is None:
                raise ToolError(
                    "timeout",
                    f"the browser did not answer {method} within {timeout:g} s; retry with a larger "
                    "timeout_ms, or check the page with action=status or action=snapshot",
                    {"method": method},
                )
            if message.get("id") == wanted:
                if "error" in message:
                    err = message["error"]
                    raise CDPError(method, int(err.get("code", 0)), str(err.get("message", "")))
                result: dict[str, Any] = message.get("result", {})
                return result
            if "method" in message:
                self.events.append(message)
                if message["method"] in watched and (session is None or message.get("sessionId") == session):
                    raise Interrupted(message)

    def wait_event(self, match: Callable[[Event], bool], timeout: float) -> Event | None:
        """The first event (kept or new) for which `match` is true, or None after `timeout` seconds."""
        for event in list(self.events):
            if match(event):
                self.events.remove(event)
                return event
        deadline = time.monotonic() + timeout
        while (left := deadline - time.monotonic()) > 0:
            message = self.receive(left)
            if message is None:
                return None
            if "method" in message:
                if match(message):
                    return message
                self.events.append(message)
        return None

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self._ws.close()
