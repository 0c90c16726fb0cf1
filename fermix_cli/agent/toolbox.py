"""Which tools a run offers the model and may dispatch: toolsets, `--tools`, policy and deferral."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ..core import policy
from ..core.context import ToolContext
from ..core.deferral import BRIDGES, deferral_enabled, is_deferrable
from ..core.errors import ToolError
from ..core.registry import Registry, ToolSpec
from .messages import ToolSchema

TOOLSETS = ("fermix", "coding")


@dataclass(frozen=True)
class Toolbox:
    """`advertised` go on the wire, `deferred` are listed by name, `unlisted` neither; all may run."""

    advertised: tuple[ToolSpec, ...]
    deferred: tuple[ToolSpec, ...]
    deferral: bool
    toolset: str | None
    unlisted: tuple[ToolSpec, ...] = ()

    @property
    def dispatchable(self) -> frozenset[str]:
        return frozenset(s.name for s in (*self.advertised, *self.deferred, *self.unlisted))

    def schemas(self) -> list[ToolSchema]:
        return [ToolSchema(s.name, s.description, s.input_schema()) for s in self.advertised]


def select_tools(
    registry: Registry, ctx: ToolContext, *, toolset: str | None, names: Sequence[str] | None = None
) -> Toolbox:
    """The run's tools: exactly `names` when given (each must be visible), else the toolset's."""
    deferral = deferral_enabled(ctx)
    if names is not None:
        chosen = []
        for name in dict.fromkeys(names):
            spec = registry.get(name)
            reason = policy.denial_reason(spec, ctx)
            if reason is not None:
                raise ToolError("policy_denied", f"--tools: {reason}.", {"tool": name})
            if not policy.can_see(spec, ctx) or spec.hidden_from_agent:
                raise ToolError("unknown_tool", f"--tools: {name} is not available here", {"tool": name})
            chosen.append(spec)
        return Toolbox(tuple(chosen), (), deferral, None)
    if toolset is not None and toolset not in TOOLSETS:
        raise ToolError("invalid_toolset", f"unknown toolset {toolset!r}; choose {' or '.join(TOOLSETS)}", {})
    visible = registry.visible(ctx, toolset=toolset)
    deferred = tuple(s for s in visible if deferral and is_deferrable(s))
    # With nothing deferred the bridges have nothing to find: keep them off the wire (still dispatchable).
    advertised = tuple(s for s in visible if s not in deferred and (deferred or s.name not in BRIDGES))
    bridges = tuple(s for s in visible if s.name in BRIDGES and not deferred)
    return Toolbox(advertised, deferred, deferral, toolset, bridges)
