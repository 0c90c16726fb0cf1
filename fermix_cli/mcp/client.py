"""fermix as an MCP client: each `[mcp.servers.NAME]` server's tools become registry tools `mcp_NAME_TOOL`.

They are ordinary `ToolSpec`s (kind "mcp", deferred, policy class from the server's config), so every
call goes through `registry.invoke` and the policy layer like any other tool; the handler forwards the
arguments to the server. Sessions live on one background event-loop thread and are driven from sync
code through an anyio blocking portal; each server is started once per process, on first need.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import os
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import ConfigDict

from ..core.errors import ToolError
from ..core.registry import FailureMode, Hints, Params, Registry, ToolSpec

if TYPE_CHECKING:
    from anyio.from_thread import BlockingPortal
    from mcp import ClientSession

    from ..core.config import McpServerConfig
    from ..core.context import ToolContext
    from ..core.paths import FermixPaths

log = logging.getLogger("fermix.mcp.client")

PREFIX = "mcp_"
MAX_NAME = 64  # what provider APIs accept for a function name
TOOLSETS = frozenset({"fermix", "coding"})
_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def tool_name(server: str, remote: str) -> str | None:
    """`mcp_<server>_<tool>`, with characters providers refuse replaced; None when it would be too long."""
    name = f"{PREFIX}{server}_{_UNSAFE.sub('_', remote)}"
    return name if len(name) <= MAX_NAME else None


class McpArguments(Params):
    """Arguments for a remote tool: any object; the server's own JSON schema is checked in the handler."""

    model_config = ConfigDict(strict=True, extra="allow", defer_build=True)


# ----- one live session ---------------------------------------------------------------------------


@dataclass
class Connection:
    """A started server: its session (driven through the portal) and the tools it listed."""

    name: str
    config: McpServerConfig
    portal: BlockingPortal
    session: ClientSession
    tools: list[Any]
    stack: contextlib.ExitStack = field(default_factory=contextlib.ExitStack)

    def call(self, remote: str, arguments: dict[str, Any]) -> Any:
        from datetime import timedelta

        timeout = timedelta(milliseconds=self.config.call_timeout_ms)
        return self.portal.call(self._call, remote, arguments, timeout)

    async def _call(self, remote: str, arguments: dict[str, Any], timeout: Any) -> Any:
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


def _unavailable(name: str, why: str) -> ToolError:
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
                    page = await session.list_tools(cursor=cursor)
                    tools += page.tools
                    cursor = page.nextCursor
                    if not cursor:
                        return tools

        tools = portal.call(handshake)
    except ToolError:
        stack.close()
        raise
    except TimeoutError:
        with contextlib.suppress(Exception):
            stack.close()
        raise _unavailable(name, f"no answer within {config.startup_timeout_ms} ms") from None
    except Exception as e:
        log.warning("MCP server %s failed to start", name, exc_info=e)
        with contextlib.suppress(Exception):
            stack.close()
        raise _unavailable(name, _describe(e)) from None
    if config.tools is not None:
        wanted = set(config.tools)
        tools = [t for t in tools if t.name in wanted]
    return Connection(name, config, portal, session, tools, stack)


def _preflight(name: str, url: str, allowed_hosts: list[str]) -> None:
    """Judge a URL server's host up front, so a refusal says why (the transport judges every request too)."""
    from ..core.netguard import HostGuard, check_url

    try:
        HostGuard(allowed_hosts).addresses(check_url(url).host)
    except ToolError as e:
        if e.code != "blocked_url":
            raise _unavailable(name, e.message) from None
        hint = " (a server on this machine needs its host in [fermix_core.net] allowed_private_hosts)"
        raise ToolError(
            "blocked_url", f"MCP server {name}: {e.message}{hint}", {**e.details, "server": name}
        ) from None


def _describe(e: BaseException) -> str:
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
    from ..core.nettransport_async import guarded_async_client

    def factory(headers: Any = None, timeout: Any = None, auth: Any = None) -> Any:
        return guarded_async_client(
            allowed_private_hosts=allowed_hosts, headers=headers, timeout=timeout, auth=auth
        )

    if config.transport == "sse":
        from mcp.client.sse import sse_client

        async with sse_client(
            config.url or "", headers=dict(config.headers), httpx_client_factory=factory
        ) as s:
            yield s
    else:
        from mcp.client.streamable_http import streamablehttp_client

        async with streamablehttp_client(
            config.url or "", headers=dict(config.headers), httpx_client_factory=factory
        ) as s:
            yield s


# ----- registry tools -----------------------------------------------------------------------------


def _hints(annotations: Any) -> Hints:
    if annotations is None:
        return Hints(open_world=True)
    return Hints(
        read_only=bool(annotations.readOnlyHint),
        destructive=bool(annotations.destructiveHint) if annotations.readOnlyHint is not True else False,
        idempotent=bool(annotations.idempotentHint),
        open_world=annotations.openWorldHint is not False,
    )


def _schema(raw: Any) -> dict[str, Any]:
    schema = dict(raw or {})
    schema.setdefault("type", "object")
    schema.setdefault("properties", {})
    return schema


def result_payload(result: Any) -> dict[str, Any]:
    """A CallToolResult as fermix returns it: the joined text, the content blocks, structured content."""
    blocks = [b.model_dump(mode="json", by_alias=True, exclude_none=True) for b in result.content]
    text = "\n".join(b.text for b in result.content if getattr(b, "type", "") == "text")
    out: dict[str, Any] = {"text": text, "content": blocks}
    if result.structuredContent is not None:
        out["structured_content"] = result.structuredContent
    return out


def _render(payload: Any) -> str:
    import json

    if isinstance(payload, dict) and payload.get("text"):
        return str(payload["text"])
    if isinstance(payload, dict) and "structured_content" in payload:
        return json.dumps(payload["structured_content"], ensure_ascii=False, separators=(",", ":"))
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":"))


def _handler(name: str, server: str, remote: str, schema: dict[str, Any], conn: Connection) -> Any:
    def handle(params: McpArguments, ctx: ToolContext) -> dict[str, Any]:
        arguments = dict(params.model_extra or {})
        _validate(name, schema, arguments)
        try:
            result = conn.call(remote, arguments)
        except Exception as e:
            raise _call_error(server, remote, e) from None
        payload = result_payload(result)
        if result.isError:
            raise ToolError(
                "mcp_tool_error",
                payload["text"] or f"{remote} on MCP server {server} reported an error",
                {"server": server, "tool": remote, "content": payload["content"]},
            )
        return payload

    return handle


def _validate(name: str, schema: dict[str, Any], arguments: dict[str, Any]) -> None:
    import jsonschema

    try:
        validator = jsonschema.validators.validator_for(schema)(schema)
        error = jsonschema.exceptions.best_match(validator.iter_errors(arguments))
    except jsonschema.exceptions.SchemaError:
        return  # the server's schema is broken; let the server judge the arguments
    if error is not None:
        where = ".".join(str(p) for p in error.absolute_path) or "(input)"
        raise ToolError(
            "invalid_input",
            f"{where}: {error.message}. Run: fermix tool {name} --schema",
            {"errors": [{"field": where, "message": error.message}]},
        )


def _call_error(server: str, remote: str, e: BaseException) -> ToolError:
    from mcp.shared.exceptions import McpError

    if isinstance(e, ToolError):
        return e
    if isinstance(e, McpError):
        code = getattr(e.error, "code", None)
        if code == 408:
            return ToolError(
                "timeout",
                f"{remote} on MCP server {server} did not answer in time",
                {"server": server, "tool": remote},
            )
        return ToolError(
            "mcp_error",
            f"MCP server {server}: {e.error.message}",
            {"server": server, "tool": remote, "code": code},
        )
    return _unavailable(server, _describe(e))


FAILURES = (
    FailureMode("mcp_tool_error", "the MCP server ran the tool and reported an error"),
    FailureMode("mcp_unavailable", "the MCP server could not be started or the connection was lost"),
    FailureMode("timeout", "the server did not answer within call_timeout_ms"),
    FailureMode("invalid_input", "the arguments do not match the tool's input schema"),
)


def specs_for(conn: Connection) -> list[ToolSpec]:
    """One deferred registry tool per remote tool (names that would not fit are skipped and logged)."""
    out: list[ToolSpec] = []
    for tool in conn.tools:
        name = tool_name(conn.name, tool.name)
        if name is None:
            log.warning(
                "MCP server %s: tool %r skipped, its fermix name would be too long", conn.name, tool.name
            )
            continue
        schema = _schema(tool.inputSchema)
        title = getattr(tool.annotations, "title", None) or tool.title
        description = (tool.description or title or f"{tool.name} (MCP server {conn.name})").strip()
        out.append(
            ToolSpec(
                name=name,
                category="mcp",
                policy_class=conn.config.policy_class,
                description=description,
                params=McpArguments,
                handler=_handler(name, conn.name, tool.name, schema, conn),
                hints=_hints(tool.annotations),
                failure_modes=FAILURES,
                toolsets=TOOLSETS,
                kind="mcp",
                deferred=True,
                render=_render,
                _schema=schema,
            )
        )
    return out


# ----- loading into a registry --------------------------------------------------------------------


@dataclass
class LoadReport:
    registered: list[str] = field(default_factory=list)
    failed: dict[str, str] = field(default_factory=dict)


def load_servers(
    registry: Registry, ctx: ToolContext, *, only: Iterable[str] | None = None, strict: bool = False
) -> LoadReport:
    """Start the enabled servers (or just `only`) and register their tools; failures are reported.

    With `strict` a server that fails raises its `mcp_unavailable` error instead of being skipped.
    """
    report = LoadReport()
    servers = ctx.config.mcp.servers
    wanted = sorted(servers) if only is None else sorted(set(only))
    for name in wanted:
        config = servers.get(name)
        if config is None or not config.enabled:
            continue
        try:
            conn = pool().connect(name, config, ctx)
        except ToolError as e:
            if strict:
                raise
            log.warning("MCP server %s skipped: %s", name, e.message)
            report.failed[name] = e.message
            continue
        for spec in specs_for(conn):
            try:
                registry.register(spec)
            except ToolError:
                continue  # already registered in this process, or a clash with a built-in
            report.registered.append(spec.name)
    return report


def server_for(name: str, servers: Iterable[str]) -> str | None:
    """Which configured server an `mcp_<server>_<tool>` name belongs to (the longest match)."""
    matches = [s for s in servers if name.startswith(f"{PREFIX}{s}_")]
    return max(matches, key=len) if matches else None


def ensure_tool(registry: Registry, name: str, make_context: Callable[[], ToolContext]) -> None:
    """Make `mcp_<server>_<tool>` callable by name: start its server and register its tools."""
    if name in registry.names():
        return
    from ..core.logs import setup_logging

    ctx = make_context()
    setup_logging(ctx.paths.log_file)  # start-up failures go to the log, never to stderr
    try:
        server = server_for(name, [s for s, c in ctx.config.mcp.servers.items() if c.enabled])
        if server is not None:
            load_servers(registry, ctx, only=[server], strict=True)
    finally:
        ctx.close()
