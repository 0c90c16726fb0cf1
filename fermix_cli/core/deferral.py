"""Tool-schema deferral: plugin and MCP tools stay off the provider wire, found through three bridges.

`[fermix_core.tools.tool_search] enabled` (default true) turns it on. Built-ins and the bridges are never
deferred. When it is off the bridges do not exist and every schema goes inline; either way the same
tools can be dispatched.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .errors import ToolError

if TYPE_CHECKING:
    from .context import ToolContext
    from .registry import ToolSpec

BRIDGES = ("tool_search", "tool_describe", "tool_call")
DEFERRABLE_KINDS = frozenset({"plugin", "mcp"})


def deferral_enabled(ctx: ToolContext) -> bool:
    return ctx.config.fermix_core.tools.tool_search.enabled


def is_deferrable(spec: ToolSpec) -> bool:
    """Whether `spec` leaves the wire when deferral is on."""
    return spec.name not in BRIDGES and (spec.deferred or spec.kind in DEFERRABLE_KINDS)


def require_deferral(ctx: ToolContext, name: str) -> None:
    """The bridges' gate: with deferral off they answer as if they did not exist."""
    if not deferral_enabled(ctx):
        raise ToolError("unknown_tool", f"Unknown capability: {name}", {"tool": name})
