"""Meta tools: documentation of the registry itself."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field

from ..core import policy
from ..core.context import ToolContext
from ..core.errors import ToolError
from ..core.registry import Example, FailureMode, Hints, Params, ToolSpec, default_registry, specs
from ..core.tooldoc import tool_markdown


def unknown_capability(name: str) -> ToolError:
    """The same answer for a tool that does not exist and one the caller may not see."""
    return ToolError("unknown_tool", f"Unknown capability: {name}", {"tool": name})


class ToolHelpParams(Params):
    name: Annotated[str, Field(max_length=256, description="Tool name to describe")]


def tool_help(p: ToolHelpParams, ctx: ToolContext) -> dict[str, Any]:
    try:
        spec = default_registry().get(p.name)
    except ToolError:
        raise unknown_capability(p.name) from None
    if not policy.can_see(spec, ctx):
        raise unknown_capability(p.name)
    return {"name": spec.name, "markdown": tool_markdown(spec), "input_schema": spec.input_schema()}


TOOLS = specs(
    ToolSpec(
        name="tool_help",
        category="meta",
        policy_class="read_only",
        description=(
            "Return the full documentation of one registered tool as the caller may see it: description, "
            "parameters, examples and failure modes."
        ),
        params=ToolHelpParams,
        handler=tool_help,
        render=lambda r: r["markdown"],
        hints=Hints(read_only=True, idempotent=True),
        when_to_use="Check a tool's parameters before calling it.",
        examples=(Example({"name": "file_read"}, "document file_read"),),
        failure_modes=(FailureMode("unknown_tool", "no such tool, or one outside the caller's permissions"),),
        toolsets=frozenset({"fermix", "coding"}),
    ),
)
