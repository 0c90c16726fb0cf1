"""Tool-schema deferral: plugin and MCP tools stay off the provider wire, found through three bridges.

`[fermix_core.tools.tool_search] enabled` (default true) turns it on. Built-ins and the bridges are never
deferred. When it is off the bridges do not exist and every schema goes inline; either way the same
tools can be dispatched. `DeferredToolset` is the wrapper a model run sees its tools through: it splits
them into what goes on the wire and what is only listed by name, and routes a `tool_call` bridge call to
its target so policy, logs and loop detection see the real tool.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .errors import ToolError
from .toolsets import Toolset, WrapperToolset

if TYPE_CHECKING:
    from .context import ToolContext
    from .registry import ToolSpec

BRIDGES = ("tool_search", "tool_describe", "tool_call")
CALL_BRIDGE = "tool_call"
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


def unwrap_tool_call(raw_args: Any) -> tuple[str, dict[str, Any]] | None:
    """(target, arguments) of a well-formed tool_call, or None (the call then reaches the bridge itself)."""
    if not isinstance(raw_args, dict):
        return None
    name, arguments = raw_args.get("name"), raw_args.get("arguments")
    if set(raw_args) - {"name", "arguments"} or not isinstance(name, str) or name in BRIDGES:
        return None
    if not isinstance(arguments, dict):  # missing or null too: `arguments` is required, `{}` for none
        return None
    return name, arguments


class DeferredToolset(WrapperToolset):
    """A toolset as a model sees it: deferrable tools listed by name only, reached through the bridges."""

    def __init__(self, wrapped: Toolset, enabled: bool) -> None:
        super().__init__(wrapped)
        self.enabled = enabled

    def split(self, ctx: ToolContext) -> tuple[list[ToolSpec], list[ToolSpec], list[ToolSpec]]:
        """(advertised, deferred, unlisted): schemas on the wire, names in the prompt, neither.

        With nothing deferred the bridges have nothing to find: they stay off the wire (still dispatchable).
        """
        listed = self.wrapped.tools(ctx)
        # Callable by name only: neither on the wire nor named in the prompt.
        by_name = [s for s in listed if s.advertise is not None and not s.advertise(ctx)]
        quiet = {s.name for s in by_name}
        deferred = [s for s in listed if self.enabled and is_deferrable(s) and s.name not in quiet]
        bridges = [s for s in listed if s.name in BRIDGES and not deferred]
        # By name: a listing's names are unique, and comparing whole ToolSpecs field by field cost ~8 ms a run.
        held = {s.name for s in deferred} | {s.name for s in bridges} | quiet
        advertised = [s for s in listed if s.name not in held]
        return advertised, deferred, bridges + by_name

    def route(self, name: str, arguments: Any, ctx: ToolContext) -> tuple[str, Any]:
        if self.enabled and name == CALL_BRIDGE:
            target = unwrap_tool_call(arguments)
            if target is not None:
                return target
        return self.wrapped.route(name, arguments, ctx)
