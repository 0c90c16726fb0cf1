"""Live MCP client sessions: one background event-loop thread, one session per configured server.

Sync code (handlers, the CLI) drives the async SDK through an anyio blocking portal. A server is
started once per process, on first need; stdio servers' stderr goes to their own log file, and URL
servers are reached through the network guard.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import threading
from typing import TYPE_CHECKING, Any

from ..core.errors import ToolError
from ..core.logs import logger
from ..core.records import Record, field

if TYPE_CHECKING:
    from anyio.from_thread import BlockingPortal
    from mcp import ClientSession

    from ..core.context import ToolContext
    from ..core.paths import FermixPaths
    from .config import McpServerConfig

log = logger("fermix.mcp.client")


class Connection(Record):
    """A started server: its session (driven through the portal) and the tools it listed."""

    name: str
    config: McpServerConfig
    portal: BlockingPortal
    session: ClientSession
    tools: list[Any]
    stack: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)

    def call(self, remote: str, arguments: dict[str, Any]) -> Any:
        """Call `remote`; past call_timeout_ms the SDK gives up and tells the server to cancel the call."""
        return self.portal.call(self._call, remote, arguments, self.config.call_timeout_ms / 1000)

    async def _call(self, remote: str, arguments: dict[str, Any], timeout: float) -> Any:
        return await self.session.call_tool(remote, arguments, read_timeout_seconds=timeout)

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.stack.close()


class ClientPool:
    """The process's MCP sessions and the event-loop thread they run on."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._portal: BlockingPortal | None = None
        self._thread: threading.Thread | None = None
        self.connections: dict[str, Connection] = {}
        self.failures: dict[str, ToolError] = {}

    def portal(self) -> BlockingPortal:
        """Start the loop thread on first use. It is a daemon, so a stuck server never blocks exit."""
        if self._portal is None:
            import queue

            import anyio
            from anyio.from_thread import BlockingPortal

            ready: queue.Queue[Any] = queue.Queue()

            async def loop() -> None:
                async with BlockingPortal() as portal:
                    ready.put(portal)
                    await portal.sleep_until_stopped()

            def run() -> None:
                try:
                    anyio.run(loop)
                except BaseException as e:  # surfaced to the waiting caller below
                    ready.put(e)

            self._thread = threading.Thread(target=run, name="fermix-mcp-client", daemon=True)
            self._thread.start()
            got = ready.get()
            if isinstance(got, BaseException):
                raise got
            self._portal = got
            atexit.register(self.close)
        return self._portal

    def connect(self, name: str, config: McpServerConfig, ctx: ToolContext) -> Connection:
        """The session with server `name`, started (and its tools listed) on first call."""
        with self._lock:
            if name in self.connections:
                return self.connections[name]
            if name in self.failures:
                raise self.failures[name]
            try:
                conn = _start(
                    name, config, self.portal(), ctx.paths, ctx.config.fermix_core.net.allowed_private_hosts
                )
            except ToolError as e:
                self.failures[name] = e
                raise
            self.connections[name] = conn
            return conn

    def close(self) -> None:
        """End every session (stdio servers are terminated), then the loop thread."""
        with self._lock:
            conns, self.connections = list(self.connections.values()), {}
            for conn in conns:
                conn.close()
            if self._portal is not None:
                with contextlib.suppress(Exception):
                    self._portal.call(self._portal.stop, True)
                self._portal = None
            if self._thread is not None:
                self._thread.join(timeout=5)
                self._thread = None


_POOL: ClientPool | None = None


def pool() -> ClientPool:
    global _POOL
    if _POOL is None:
        _POOL = ClientPool()
    return _POOL


def unavailable(name: str, why: str) -> ToolError:
    return ToolError(
        "mcp_unavailable",
        f"MCP server {name} is unavailable: {why}. Check [mcp.servers.{name}] in config.toml, "
        f"the server's log, or run: fermix doctor",
        {"server": name},
    )


def _start(
    name: str, config: McpServerConfig, portal: BlockingPortal, paths: FermixPaths, allowed_hosts: list[str]
) -> Connection:
    import anyio
    from mcp import ClientSession
    from mcp.types import PaginatedRequestParams

    if config.url is not None:
        _preflight(name, config.url, allowed_hosts)
    stack = contextlib.ExitStack()
    try:
        transport = (
            _stdio(name, config, paths) if config.command is not None else _http(config, allowed_hosts)
        )
        streams = stack.enter_context(portal.wrap_async_context_manager(transport))
        read, write = streams[0], streams[1]
        session = stack.enter_context(portal.wrap_async_context_manager(ClientSession(read, write)))

        async def handshake() -> list[Any]:
            with anyio.fail_after(config.startup_timeout_ms / 1000):
                await session.initialize()
                tools: list[Any] = []
                cursor: str | None = None
                while True:
                    page = await session.list_tools(params=PaginatedRequestParams(cursor=cursor))
                    tools += page.tools
                    cursor = page.next_cursor
                    if not cursor:
                        return tools

        tools = portal.call(handshake)
    except ToolError:
        stack.close()
        raise
    except TimeoutError:
        with contextlib.suppress(Exception):
            stack.close()
        raise unavailable(name, f"no answer within {config.startup_timeout_ms} ms") from None
    except Exception as e:
        log.warning("MCP server %s failed to start", name, exc_info=e)
        with contextlib.suppress(Exception):
            stack.close()
        raise unavailable(name, describe_error(e)) from None
    if config.tools is not None:
        wanted = set(config.tools)
        tools = [t for t in tools if t.name in wanted]
    return Connection(name, config, portal, session, tools, stack)


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


@contextlib.asynccontextmanager
async def _stdio(name: str, config: McpServerConfig, paths: FermixPaths) -> Any:
    from mcp import StdioServerParameters
    from mcp.client.stdio import stdio_client

    from ..core.paths import make_private_dirs

    env = {k: os.environ[k] for k in config.env_passthrough if k in os.environ}
    env.update(config.env)
    params = StdioServerParameters(
        command=os.path.expanduser(config.command or ""),
        args=list(config.args),
        env=env,
        cwd=os.path.expanduser(config.cwd) if config.cwd else None,
    )
    # The server's stderr goes to its own log, never to ours: fermix's stderr is the error channel.
    make_private_dirs(paths.log_dir)
    fd = os.open(
        paths.log_dir / f"mcp-{name}.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600
    )
    with os.fdopen(fd, "a", encoding="utf-8") as errlog:
        async with stdio_client(params, errlog=errlog) as streams:
            yield streams


@contextlib.asynccontextmanager
async def _http(config: McpServerConfig, allowed_hosts: list[str]) -> Any:
    """A URL server, over the network guard: its host must be public or in allowed_private_hosts."""
    from .http import guarded_httpx2_client

    if config.transport == "sse":
        from mcp.client.sse import sse_client

        def factory(headers: Any = None, timeout: Any = None, auth: Any = None) -> Any:
            return guarded_httpx2_client(allowed_hosts, headers=headers, timeout=timeout, auth=auth)

        async with sse_client(
            config.url or "", headers=dict(config.headers), httpx_client_factory=factory
        ) as s:
            yield s
    else:
        from mcp.client.streamable_http import streamable_http_client

        async with (
            guarded_httpx2_client(allowed_hosts, headers=dict(config.headers)) as client,
            streamable_http_client(config.url or "", http_client=client) as s,
        ):
            yield s
