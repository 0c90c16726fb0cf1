"""The MCP toolset: the configured servers' tools, `mcp_SERVER_TOOL`, as every surface sees them.

Declared in `TOOLSETS`, so the kernel finds it through the catalog and imports this module only when a
name misses the built-ins or a caller lists every tool. A server starts on first need: a name of its
own, or a listing (`tool_search`, a model run). One that fails to start is skipped in a listing (the
reason is in the fermix log and in `failures()`), and its error is raised when a caller names its tool.
Neither this module nor the client imports the `mcp` SDK: the wire layer is fermix's own (`wire.py`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.errors import ToolError
from ..core.logs import logger
from ..core.toolsets import MCP_PREFIX, Toolset

if TYPE_CHECKING:
    from ..core.context import ToolContext
    from ..core.registry import ToolSpec
    from .config import McpServerConfig

log = logger("fermix.mcp.client")

PREFIX = MCP_PREFIX


class McpToolset(Toolset):
    """Every enabled `[mcp.servers.NAME]` server's tools."""

    def __init__(self) -> None:
        self._specs: dict[str, tuple[Any, dict[str, ToolSpec]]] = {}  # server -> (connection, its tools)
        self._failed: dict[str, str] = {}
        self._owners: dict[str, str] = {}  # a listed tool's name -> its server, as `load` found it

    @staticmethod
    def servers(ctx: ToolContext) -> dict[str, McpServerConfig]:
        return {name: c for name, c in ctx.config.mcp.servers.items() if c.enabled}

    def server_tools(self, name: str, config: McpServerConfig, ctx: ToolContext) -> dict[str, ToolSpec]:
        """Server `name`'s tools, starting it if need be; raises its `mcp_unavailable` error."""
        from .client import server_specs

        conn, specs = server_specs(name, config, ctx)
        cached = self._specs.get(name)
        if cached is None or cached[0] is not conn:  # a restarted server gets new handlers
            cached = (conn, {s.name: s for s in specs})
            self._specs[name] = cached
        self._failed.pop(name, None)
        return cached[1]

    def load(self, ctx: ToolContext, only: list[str] | None = None) -> dict[str, ToolSpec]:
        """The tools of the enabled servers (or just `only`); a server that fails is skipped and logged."""
        from .client import servers_for

        out: dict[str, ToolSpec] = {}
        owner: dict[str, str] = {}  # tool name -> its server
        for name, config in sorted(self.servers(ctx).items()):
            if only is not None and name not in only:
                continue
            try:
                tools = self.server_tools(name, config, ctx)
            except ToolError as e:
                log.warning("MCP server %s skipped: %s", name, e.message)
                self._failed[name] = e.message
                continue
            for tool_name, spec in tools.items():
                # `mcp_a_b_c` is server a's `b_c` and server a_b's `c`: the server `servers_for` puts
                # first wins, as in `get`, so a listing and a call by name mean the same tool.
                other = owner.get(tool_name)
                if other is not None:
                    winner = servers_for(tool_name, (other, name))[0]
                    log.warning(
                        "MCP tool name %s is used by servers %s and %s; it means %s's tool "
                        "(rename a server in config.toml to reach both)",
                        tool_name,
                        other,
                        name,
                        winner,
                    )
                    if winner == other:
                        continue
                out[tool_name], owner[tool_name] = spec, name
        self._owners.update(owner)
        return out

    def owner(self, name: str) -> str | None:
        """The server of a tool `load` listed."""
        return self._owners.get(name)

    def tools(self, ctx: ToolContext) -> list[ToolSpec]:
        if not self.servers(ctx):
            return []
        loaded = self.load(ctx)
        return [loaded[n] for n in sorted(loaded)]

    def tools_at_hand(self, ctx: ToolContext) -> list[ToolSpec]:
        # A server's tools are known only from the server: listing them would start it.
        return []

    def get(self, name: str, ctx: ToolContext) -> ToolSpec | None:
        """The tool `name` means, found as `load` finds it: the first server in `servers_for`'s order that
        has it (only those servers are started). When none has it and one of them could not start, that
        server's `mcp_unavailable` error is raised."""
        if not name.startswith(PREFIX):
            return None
        from .client import servers_for

        servers = self.servers(ctx)
        unavailable: ToolError | None = None
        for server in servers_for(name, servers):
            try:
                spec = self.server_tools(server, servers[server], ctx).get(name)
            except ToolError as e:
                unavailable = unavailable or e
                continue
            if spec is not None:
                return spec
        if unavailable is not None:
            raise unavailable
        return None

    def failures(self) -> dict[str, str]:
        return dict(self._failed)


TOOLSETS = (McpToolset,)
