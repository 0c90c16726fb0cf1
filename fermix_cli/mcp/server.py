"""`fermix mcp serve`: the registry's tools over MCP (stdio), called through `registry.invoke`.

Every call gets its own `origin="mcp"` context (model-driven, not attended), narrowed to the served
tools, so the policy layer refuses anything else exactly as it would for any other caller. Its toolset
is the built-ins alone: fermix does not pass other MCP servers' tools on (nor start them, which could be
this very server). Tool calls run in a worker thread; each builds and closes its own context, so no
SQLite handle crosses threads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from .. import __version__
from ..core.errors import ToolError
from ..core.logs import logger
from .exposure import listing, served_names

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

    from ..core.context import ToolContext
    from ..core.registry import Registry

log = logger("fermix.mcp.server")

INSTRUCTIONS = (
    "fermix tools: JSON in, JSON out, over fermix's sandbox and policy layer. Errors read `code: message`; "
    "the message says how to recover. Shell and file-writing tools are served only when the operator "
    "allowed them."
)

ContextFactory = Callable[[], "ToolContext"]


def mcp_context(base: ToolContext, served: frozenset[str], registry: Registry) -> ToolContext:
    """A model-driven MCP context: origin mcp, not attended, narrowed to the served tools."""
    from ..core.toolsets import RegistryToolset

    return base.derive(
        origin="mcp",
        attended=False,
        allowed_tools=served,
        record_calls=True,
        toolsets=RegistryToolset(registry),
        extras={**base.extras, "registry": registry},
    )


def build_server(registry: Registry, make_context: ContextFactory, allow: Iterable[str] = ()) -> Server:
    """An MCP server over `registry`. `make_context` returns a fresh base context per call."""
    import anyio
    import mcp.types as types
    from mcp.server.lowlevel import Server

    served = served_names(registry, allow)
    probe = mcp_context(make_context(), served, registry)
    try:
        specs = [s for s in registry.visible(probe) if s.name in served]
    finally:
        probe.close()
    tools = [types.Tool.model_validate(listing(s)) for s in specs]

    server: Server = Server("fermix", version=__version__, instructions=INSTRUCTIONS)

    @server.list_tools()
    async def _list_tools() -> list[types.Tool]:
        return tools

    def call_sync(name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
        ctx = mcp_context(make_context(), served, registry)
        try:
            ok, text, payload = registry.invoke_for_model(name, arguments or {}, ctx)
        finally:
            ctx.close()
        structured = payload if ok else {"error": payload}
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)],
            structuredContent=structured if isinstance(structured, dict) else None,
            isError=not ok,
        )

    # fermix validates strictly itself (its messages say how to recover), so the SDK's check is off.
    @server.call_tool(validate_input=False)
    async def _call_tool(name: str, arguments: dict[str, Any] | None) -> types.CallToolResult:
        if not isinstance(arguments, dict | None):
            err = ToolError("invalid_input", "arguments must be a JSON object", {"tool": name})
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=err.model_text())],
                structuredContent={"error": err.to_dict()},
                isError=True,
            )
        return await anyio.to_thread.run_sync(call_sync, name, arguments)

    return server


def serve_stdio(registry: Registry, make_context: ContextFactory, allow: Iterable[str] = ()) -> None:
    """Serve over this process's stdin and stdout until the client closes the pipe."""
    import anyio
    from mcp.server.stdio import stdio_server

    server = build_server(registry, make_context, allow)

    async def run() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(run)


def served_tools(registry: Registry, make_context: ContextFactory, allow: Iterable[str] = ()) -> list[str]:
    """The names `fermix mcp serve` would list with this `allow` (for `--list`)."""
    served = served_names(registry, allow)
    probe = mcp_context(make_context(), served, registry)
    try:
        return [s.name for s in registry.visible(probe) if s.name in served]
    finally:
        probe.close()
