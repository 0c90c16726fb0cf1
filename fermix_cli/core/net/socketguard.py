"""The network guard at the socket, for libraries that open their own connections (Apprise).

fermix's own HTTP goes through `GuardedTransport`, which resolves, judges and pins every connection. A
library with its own network stack cannot be handed that transport, and judging the URL it was given is
not enough: its plugins speak many URL forms, follow redirects and resolve names again. `guarded_sockets()`
judges what the library really does instead: while the block runs, in the thread that runs it, every
`socket.getaddrinfo` and every `connect`, `connect_ex` and `sendto` of an internet socket is checked with
the guard's rules (`guard`, `iptable`), whatever the URL scheme and however many redirects led there.

- A host name that `allowed_private_hosts` lists resolves as usual, and the addresses it resolved to are
  approved for the port asked for (any port when none was), for the rest of the block.
- Any other local-only name (`localhost`, `*.local`, ...) is refused before it is resolved.
- A connection to a non-global address is refused unless that address was approved as above or is itself
  listed; a global address is allowed. A name handed straight to `connect` is resolved here and the
  socket connects to the judged answer.

A refusal raises `GuardRefusal`, an OSError as the library expects of a failed connect, and is recorded
in `SocketGuard.refusals`, so the caller can report `blocked_url` whatever the library made of the error.

Limits: connections opened from other threads (a thread pool the library starts) are not seen, so run
the library in the calling thread; code that bypasses Python's `socket` module (a C extension's own
sockets) is not seen either. The patches are installed while at least one block is active, in any thread,
and do nothing in threads without one.
"""

from __future__ import annotations

import errno
import socket
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any

from ..errors import ToolError
from .guard import CONFIG_HINT, blocked_url_error, is_blocked_name, normalise_allowed_host, normalise_host
from .iptable import blocked_range, parse_address

_INET = (socket.AF_INET, socket.AF_INET6)


class GuardRefusal(PermissionError):
    """A connection the network guard refused; `error` is the `blocked_url` ToolError."""

    def __init__(self, error: ToolError) -> None:
        super().__init__(errno.EACCES, error.message)
        self.error = error


class SocketGuard:
    """What one guarded block allows and what it refused."""

    def __init__(self, allowed_private_hosts: Iterable[str] = ()) -> None:
        self.allowed = frozenset(normalise_allowed_host(h) for h in allowed_private_hosts)
        self.approved: set[tuple[str, int]] = set()  # (address, port); port 0 means any port
        self.refusals: list[ToolError] = []

    def refuse(self, error: ToolError) -> GuardRefusal:
        self.refusals.append(error)
        return GuardRefusal(error)

    def resolve(self, original: Any, host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        """`socket.getaddrinfo` judged: an allowed host's answers are approved, a local-only name refused."""
        name = host.decode("ascii", "replace") if isinstance(host, bytes) else host
        normal = None
        if isinstance(name, str) and name:
            try:
                normal = normalise_host(name)
            except ToolError:
                normal = None  # not a host name the guard knows; its answers are judged at connect
        if normal is not None and normal not in self.allowed and is_blocked_name(normal):
            raise self.refuse(
                blocked_url_error(
                    "blocked_name",
                    f"{normal!r} is a local-only host name; to allow it add it to {CONFIG_HINT}",
                    host=normal,
                )
            )
        infos = original(host, port, *args, **kwargs)
        if normal is not None and normal in self.allowed:
            for *_, sockaddr in infos:
                if isinstance(sockaddr, tuple) and len(sockaddr) >= 2:
                    ip = parse_address(str(sockaddr[0]))
                    if ip is not None:
                        self.approved.add((str(ip), int(sockaddr[1])))
        return infos

    def judge(self, sock: socket.socket, address: Any) -> Any:
        """The address to connect `sock` to; raises GuardRefusal for a non-global, unapproved one."""
        if sock.family not in _INET or not isinstance(address, tuple) or len(address) < 2:
            return address  # a Unix socket or something the socket module will refuse itself
        host, port = address[0], address[1]
        ip = parse_address(host) if isinstance(host, str) else None
        if ip is None:
            # A name given straight to connect: resolve it here (judged) and use a judged answer.
            infos = self.resolve(_originals["getaddrinfo"], host, port, sock.family, sock.type)
            if not infos:
                raise OSError(errno.EHOSTUNREACH, f"no address for {host!r}")
            address = infos[0][4]
            ip = parse_address(str(address[0]))
            if ip is None:
                return address
        text = str(ip)
        if text in self.allowed or (text, int(port)) in self.approved or (text, 0) in self.approved:
            return address
        row = blocked_range(ip)
        if row is None:
            return address
        raise self.refuse(
            blocked_url_error(
                "non_global_address",
                f"a connection to {text} port {port} was refused: the address is not global ({row.name}); "
                f"to allow a host add it to {CONFIG_HINT}",
                ip=text,
                port=int(port),
                range=str(row.network),
            )
        )


_local = threading.local()
_lock = threading.Lock()
_active = 0
_originals: dict[str, Any] = {}


def _current() -> SocketGuard | None:
    guard: SocketGuard | None = getattr(_local, "guard", None)
    return guard


def _getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
    guard = _current()
    original = _originals["getaddrinfo"]
    if guard is None:
        return original(host, port, *args, **kwargs)
    return guard.resolve(original, host, port, *args, **kwargs)


def _connect(self: socket.socket, address: Any) -> None:
    guard = _current()
    if guard is not None:
        address = guard.judge(self, address)
    _originals["connect"](self, address)


def _connect_ex(self: socket.socket, address: Any) -> int:
    guard = _current()
    if guard is not None:
        try:
            address = guard.judge(self, address)
        except GuardRefusal:
            return errno.EACCES
    result: int = _originals["connect_ex"](self, address)
    return result


def _sendto(self: socket.socket, data: Any, *rest: Any) -> int:
    guard = _current()
    if guard is not None and rest:
        rest = (*rest[:-1], guard.judge(self, rest[-1]))
    sent: int = _originals["sendto"](self, data, *rest)
    return sent


_PATCHES: dict[str, tuple[Any, Any]] = {
    "getaddrinfo": (socket, _getaddrinfo),
    "connect": (socket.socket, _connect),
    "connect_ex": (socket.socket, _connect_ex),
    "sendto": (socket.socket, _sendto),
}


def _install() -> None:
    global _active
    with _lock:
        if _active == 0:
            for name, (owner, patch) in _PATCHES.items():
                current = getattr(owner, name)
                if current is not patch:  # ours may still be in place under someone else's patch
                    _originals[name] = current
                    setattr(owner, name, patch)
        _active += 1


def _uninstall() -> None:
    global _active
    with _lock:
        _active -= 1
        if _active == 0:
            for name, (owner, patch) in _PATCHES.items():
                if getattr(owner, name) is patch:  # someone patched over ours: leave theirs alone
                    setattr(owner, name, _originals[name])


@contextmanager
def guarded_sockets(allowed_private_hosts: Iterable[str] = ()) -> Iterator[SocketGuard]:
    """Judge every connection this thread opens inside the block; see the module docstring."""
    guard = SocketGuard(allowed_private_hosts)
    _install()
    previous = _current()
    _local.guard = guard
    try:
        yield guard
    finally:
        _local.guard = previous
        _uninstall()
