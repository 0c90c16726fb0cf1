"""Live MCP client sessions, one per configured server, over fermix's own wire layer (`wire.py`).

A server is started once per process, on first need; stdio servers' stderr goes to their own log file,
and URL servers are reached through the network guard. Nothing here imports the `mcp` SDK.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
import time
from typing import TYPE_CHECKING, Any

from ..core.errors import ToolError
from ..core.logs import logger
from ..core.records import Record

if TYPE_CHECKING:
    from pathlib import Path

    from ..core.context import ToolContext
    from ..core.paths import FermixPaths
    from .config import McpServerConfig
    from .wire import Session, Transport

log = logger("fermix.mcp.client")


class Connection(Record):
    """A started server: its session and the tools it listed (plain MCP `Tool` objects)."""

    name: str
    config: McpServerConfig
    session: Session
    tools: list[dict[str, Any]]

    def call(self, remote: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Call `remote`; past call_timeout_ms the server is told to cancel and TimeoutError raised."""
        return self.session.call_tool(remote, arguments, self.config.call_timeout_ms / 1000)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.session.close()


class ClientPool:
    """The process's MCP sessions, one per server, started on first need and closed at exit."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._registered = False
        self.connections: dict[str, Connection] = {}
        self.failures: dict[str, ToolError] = {}

    def connect(self, name: str, config: McpServerConfig, ctx: ToolContext) -> Connection:
        """The session with server `name`, started (and its tools listed) on first call."""
        with self._lock:
            if name in self.connections:
                return self.connections[name]
            if name in self.failures:
                raise self.failures[name]
            if not self._registered:
                atexit.register(self.close)
                self._registered = True
            try:
                conn = _start(name, config, ctx.paths, ctx.config.fermix_core.net.allowed_private_hosts)
            except ToolError as e:
                self.failures[name] = e
                raise
            self.connections[name] = conn
            return conn

    def close(self) -> None:
        """End every session (stdio servers are terminated, then killed after a grace period)."""
        with self._lock:
            conns, self.connections = list(self.connections.values()), {}
        for conn in conns:
            conn.close()


_POOL: ClientPool | None = None


def pool() -> ClientPool:
    global _POOL
    if _POOL is None:
        _POOL = ClientPool()
    return _POOL


def server_log(paths: FermixPaths, name: str) -> Path:
    """Where a stdio server's stderr goes."""
    return paths.log_dir / f"mcp-{name}.log"


def unavailable(name: str, why: str, log_file: Path | None = None) -> ToolError:
    """The server could not be started or was lost; `log_file` is a stdio server's stderr log."""
    where = f" and the server's log ({log_file})" if log_file is not None else ""
    return ToolError(
        "mcp_unavailable",
        f"MCP server {name} is unavailable: {why}. Check [mcp.servers.{name}] in config.toml{where}; "
        f"try it again with: fermix mcp tools {name}",
        {"server": name, **({"log": str(log_file)} if log_file is not None else {})},
    )


def _start(name: str, config: McpServerConfig, paths: FermixPaths, allowed_hosts: list[str]) -> Connection:
    from .wire import Session

    if config.url is not None:
        _preflight(name, config.url, allowed_hosts)
    session: Session | None = None
    log_file = server_log(paths, name) if config.command is not None else None
    try:
        deadline = time.monotonic() + config.startup_timeout_ms / 1000
        transport = (
            _stdio(name, config, paths) if config.command is not None else _http(config, allowed_hosts)
        )
        session = Session(transport)
        session.initialize(deadline - time.monotonic())
        tools = session.list_tools(deadline - time.monotonic())
    except ToolError as e:
        if session is not None:
            session.close()
        if e.code == "blocked_url":  # the guard refused a request (a redirect to a private host, say)
            raise
        raise unavailable(name, e.message, log_file) from None
    except TimeoutError:
        if session is not None:
            with contextlib.suppress(Exception):
                session.close()
        raise unavailable(name, f"no answer within {config.startup_timeout_ms} ms", log_file) from None
    except Exception as e:
        log.warning("MCP server %s failed to start", name, exc_info=e)  # the log file only, never stderr
        if session is not None:
            with contextlib.suppress(Exception):
                session.close()
        raise unavailable(name, describe_error(e), log_file) from None
    if config.tools is not None:
        wanted = set(config.tools)
        tools = [t for t in tools if t["name"] in wanted]
    return Connection(name, config, session, tools)


def _preflight(name: str, url: str, allowed_hosts: list[str]) -> None:
    """Judge a URL server's host up front, so a refusal says why (the transport judges every request too)."""
    from ..core.net.guard import HostGuard, check_url

    try:
        HostGuard(allowed_hosts).addresses(check_url(url).host)
    except ToolError as e:
        if e.code != "blocked_url":
            raise unavailable(name, e.message) from None
        hint = " (a server on this machine needs its host in [fermix_core.net] allowed_private_hosts)"
        raise ToolError(
            "blocked_url", f"MCP server {name}: {e.message}{hint}", {**e.details, "server": name}
        ) from None


def describe_error(e: BaseException) -> str:
    """A one-line reason, looking inside exception groups (anyio task groups wrap failures)."""
    while isinstance(e, BaseExceptionGroup) and e.exceptions:
        e = e.exceptions[0]
    text = str(e).strip().splitlines()[0] if str(e).strip() else ""
    return f"{type(e).__name__}: {text}" if text else type(e).__name__


def _stdio(name: str, config: McpServerConfig, paths: FermixPaths) -> Transport:
    from ..core.paths import make_private_dirs
    from .wire import DEFAULT_INHERITED_ENV, StdioTransport

    # The server sees a minimal environment: the basics, the passed-through names, its own `env`.
    env = {
        k: os.environ[k]
        for k in DEFAULT_INHERITED_ENV
        if k in os.environ and not os.environ[k].startswith("()")
    }
    env.update({k: os.environ[k] for k in config.env_passthrough if k in os.environ})
    env.update(config.env)
    # The server's stderr goes to its own log, never to ours: fermix's stderr is the error channel.
    make_private_dirs(paths.log_dir)
    log_path = server_log(paths, name)
    fd = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        return StdioTransport(
            os.path.expanduser(config.command or ""),
            list(config.args),
            env,
            os.path.expanduser(config.cwd) if config.cwd else None,
            stderr=fd,
            stderr_log=str(log_path),
        )
    finally:
        os.close(fd)  # the child holds its own copy


def _http(config: McpServerConfig, allowed_hosts: list[str]) -> Transport:
    """A URL server, over the network guard: its host must be public or in allowed_private_hosts."""
    from .wire import SseTransport, StreamableHttpTransport, http_client

    client = http_client(allowed_hosts, dict(config.headers))
    if config.transport == "sse":
        return SseTransport(config.url or "", client)
    return StreamableHttpTransport(config.url or "", client)
