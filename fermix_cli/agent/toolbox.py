"""Which tools a run offers the model and may dispatch: the registry's toolsets, wrapped for the run.

The run's toolset is the registry's (built-ins, then the declared toolsets such as MCP servers), renamed
for the named toolset (coding's aliases) and wrapped for deferral; what the model is shown is that,
filtered by membership or `--tools` and by what the context may see.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..core import policy
from ..core.context import ToolContext
from ..core.deferral import BRIDGES, DeferredToolset, deferral_enabled
from ..core.errors import ToolError
from ..core.records import Record
from ..core.registry import Registry, ToolSpec, unknown_tool
from ..core.toolsets import Toolset, member_of, policy_visible
from .messages import ToolSchema

TOOLSET_NAMES = ("fermix", "coding")


class Toolbox(Record, frozen=True):
    """`advertised` go on the wire, `deferred` are listed by name, `unlisted` neither; all may run.

    `tools` is the toolset the run finds names through (and routes bridge calls with).
    """

    advertised: tuple[ToolSpec, ...]
    deferred: tuple[ToolSpec, ...]
    tools: Toolset
    toolset: str | None
    unlisted: tuple[ToolSpec, ...] = ()

    @property
    def dispatchable(self) -> frozenset[str]:
        return frozenset(s.name for s in (*self.advertised, *self.deferred, *self.unlisted))

    def schemas(self, ctx: ToolContext | None = None) -> list[ToolSchema]:
        """The advertised tools' schemas, as `ctx` shapes them this turn when given."""
        return [ToolSchema(s.name, s.description, s.schema_for(ctx)) for s in self.advertised]

    def bridge_schemas(self) -> list[ToolSchema]:
        """The deferral bridges kept off the wire (nothing is deferred): what a trimmed list falls back on."""
        return [
            ToolSchema(s.name, s.description, s.input_schema()) for s in self.unlisted if s.name in BRIDGES
        ]


def select_tools(
    registry: Registry, ctx: ToolContext, *, toolset: str | None, names: Sequence[str] | None = None
) -> Toolbox:
    """The run's tools: exactly `names` when given (each must be visible), else the toolset's."""
    if names is not None:
        source = registry.toolset()
        chosen = []
        for name in dict.fromkeys(names):
            spec = source.get(name, ctx)
            if spec is None:
                raise unknown_tool(name)
            reason = policy.denial_reason(spec, ctx)
            if reason is not None:
                raise ToolError("policy_denied", f"--tools: {reason}.", {"tool": name})
            if not policy.can_see(spec, ctx) or spec.hidden_from_agent:
                raise ToolError("unknown_tool", f"--tools: {name} is not available here", {"tool": name})
            chosen.append(spec)
        return Toolbox(tuple(chosen), (), DeferredToolset(source, deferral_enabled(ctx)), None)
    if toolset is not None and toolset not in TOOLSET_NAMES:
        raise ToolError(
            "invalid_toolset", f"unknown toolset {toolset!r}; choose {' or '.join(TOOLSET_NAMES)}", {}
        )
    source, deferral = registry.toolset(toolset), deferral_enabled(ctx)
    shown = policy_visible(source if toolset is None else member_of(source, toolset))
    advertised, deferred, unlisted = DeferredToolset(shown, deferral).split(ctx)
    return Toolbox(
        tuple(advertised), tuple(deferred), DeferredToolset(source, deferral), toolset, tuple(unlisted)
    )
