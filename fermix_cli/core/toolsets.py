"""Toolsets: where a context's tools come from, and the wrappers that narrow or rename them.

A toolset lists the tools it offers a context and gets one by name. The built-ins (the registry, fed by
the catalog) are one toolset; every other source (MCP servers, later skills and subagents) is a toolset
that a family or domain declares in a module-level `TOOLSETS` tuple of factories, which the generated
catalog lists by module name. Those modules are imported only when a name misses the built-ins or a
caller asks for a full listing, so a machine call of a built-in never imports them.

Filtering (policy visibility, `allowed_tools`, toolset membership) and renaming (aliases) wrap a
toolset; deferral (`core/deferral.py`) is one more wrapper. Policy itself is still enforced at
`registry.invoke`, always: a wrapper decides what is listed, never what is allowed.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from . import policy

if TYPE_CHECKING:
    from .context import ToolContext
    from .registry import Registry, ToolSpec

ToolsetFactory = Callable[[], "Toolset"]

# MCP servers' tools are named `mcp_<server>_<tool>` (reference 1): the namespace is theirs, so no other
# source of tools (a skill) may take a name in it, and a server added later never finds its name taken.
MCP_PREFIX = "mcp_"

# The ctx.extras key a tool sets when it has changed what the toolsets list (skill_reload: the skills):
# a model loop running it lists its tools again before its next model call, narrowed as before.
TOOLS_CHANGED = "tools_changed"


class Toolset:
    """Lists the tools a context may see and gets one by name."""

    def tools(self, ctx: ToolContext) -> list[ToolSpec]:
        """Every tool this toolset offers `ctx`, sorted by name."""
        raise NotImplementedError

    def get(self, name: str, ctx: ToolContext) -> ToolSpec | None:
        """The tool `name` stands for here, or None when this toolset has no such tool."""
        raise NotImplementedError

    def tools_at_hand(self, ctx: ToolContext) -> list[ToolSpec]:
        """The tools this toolset lists without starting anything (what `fermix tool list` shows): by
        default all of them; an MCP server's are known only once it runs, so it lists none here."""
        return self.tools(ctx)

    def route(self, name: str, arguments: Any, ctx: ToolContext) -> tuple[str, Any]:
        """The call a model's `name(arguments)` really is (a bridge unwraps to its target); default: itself."""
        return name, arguments

    def failures(self) -> dict[str, str]:
        """Sources that could not be loaded (name -> why); they are skipped, not fatal."""
        return {}


class RegistryToolset(Toolset):
    """The registry's tools: the built-ins of the catalog, plus any registered at run time."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry

    def tools(self, ctx: ToolContext) -> list[ToolSpec]:
        return self.registry.all()

    def get(self, name: str, ctx: ToolContext) -> ToolSpec | None:
        return self.registry.find(name)


class CombinedToolset(Toolset):
    """Several toolsets as one; on a name clash the earlier toolset wins."""

    def __init__(self, toolsets: Sequence[Toolset]) -> None:
        self.toolsets = tuple(toolsets)

    def members(self) -> tuple[Toolset, ...]:
        return self.toolsets

    def tools(self, ctx: ToolContext) -> list[ToolSpec]:
        return self._merged([t.tools(ctx) for t in self.members()])

    def tools_at_hand(self, ctx: ToolContext) -> list[ToolSpec]:
        return self._merged([t.tools_at_hand(ctx) for t in self.members()])

    @staticmethod
    def _merged(listings: list[list[ToolSpec]]) -> list[ToolSpec]:
        out: dict[str, ToolSpec] = {}
        for listing in listings:
            for spec in listing:
                out.setdefault(spec.name, spec)
        return [out[n] for n in sorted(out)]

    def get(self, name: str, ctx: ToolContext) -> ToolSpec | None:
        for toolset in self.members():
            spec = toolset.get(name, ctx)
            if spec is not None:
                return spec
        return None

    def route(self, name: str, arguments: Any, ctx: ToolContext) -> tuple[str, Any]:
        for toolset in self.members():
            routed = toolset.route(name, arguments, ctx)
            if routed[0] != name or routed[1] is not arguments:
                return routed
        return name, arguments

    def failures(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for toolset in self.members():
            out.update(toolset.failures())
        return out


class DeclaredToolsets(CombinedToolset):
    """The toolsets that `modules` declare in `TOOLSETS`, each module imported on first use."""

    def __init__(self, modules: Iterable[str]) -> None:
        super().__init__(())
        self.modules = tuple(modules)
        self._loaded = False

    def members(self) -> tuple[Toolset, ...]:
        if not self._loaded:
            factories: list[ToolsetFactory] = []
            for module in self.modules:
                factories += getattr(importlib.import_module(module), "TOOLSETS", ())
            self.toolsets = tuple(factory() for factory in factories)
            self._loaded = True
        return self.toolsets


class WrapperToolset(Toolset):
    """A toolset around another; subclasses change what they need and delegate the rest."""

    def __init__(self, wrapped: Toolset) -> None:
        self.wrapped = wrapped

    def tools(self, ctx: ToolContext) -> list[ToolSpec]:
        return self.wrapped.tools(ctx)

    def tools_at_hand(self, ctx: ToolContext) -> list[ToolSpec]:
        return self.wrapped.tools_at_hand(ctx)

    def get(self, name: str, ctx: ToolContext) -> ToolSpec | None:
        return self.wrapped.get(name, ctx)

    def route(self, name: str, arguments: Any, ctx: ToolContext) -> tuple[str, Any]:
        return self.wrapped.route(name, arguments, ctx)

    def failures(self) -> dict[str, str]:
        return self.wrapped.failures()


class FilteredToolset(WrapperToolset):
    """Only the tools `keep(spec, ctx)` accepts are listed or found."""

    def __init__(self, wrapped: Toolset, keep: Callable[[ToolSpec, ToolContext], bool]) -> None:
        super().__init__(wrapped)
        self.keep = keep

    def tools(self, ctx: ToolContext) -> list[ToolSpec]:
        return [s for s in self.wrapped.tools(ctx) if self.keep(s, ctx)]

    def tools_at_hand(self, ctx: ToolContext) -> list[ToolSpec]:
        return [s for s in self.wrapped.tools_at_hand(ctx) if self.keep(s, ctx)]

    def get(self, name: str, ctx: ToolContext) -> ToolSpec | None:
        spec = self.wrapped.get(name, ctx)
        return spec if spec is not None and self.keep(spec, ctx) else None


class RenamedToolset(WrapperToolset):
    """Extra names for tools: `aliases` maps alias -> tool name, and an alias shadows a tool of that name.

    The listing keeps the real names (the aliases are what a model may also call them).
    """

    def __init__(self, wrapped: Toolset, aliases: Mapping[str, str]) -> None:
        super().__init__(wrapped)
        self.aliases = dict(aliases)

    def get(self, name: str, ctx: ToolContext) -> ToolSpec | None:
        return self.wrapped.get(self.aliases.get(name, name), ctx)


# ----- the usual filters ----------------------------------------------------------------------------


def policy_visible(wrapped: Toolset) -> FilteredToolset:
    """What a context may see: policy (trust, ceiling, `allowed_tools`), availability, not agent-hidden."""
    return FilteredToolset(wrapped, lambda s, ctx: not s.hidden_from_agent and policy.can_see(s, ctx))


def member_of(wrapped: Toolset, toolset: str) -> FilteredToolset:
    """The tools that belong to the named toolset (`fermix`, `coding`)."""
    return FilteredToolset(wrapped, lambda s, ctx: toolset in s.toolsets)


def only_named(wrapped: Toolset, names: Iterable[str]) -> FilteredToolset:
    """Exactly the tools called `names`."""
    wanted = frozenset(names)
    return FilteredToolset(wrapped, lambda s, ctx: s.name in wanted)
