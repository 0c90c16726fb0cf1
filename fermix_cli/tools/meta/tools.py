"""Meta tools: documentation of the registry itself and the deferral bridges."""

from __future__ import annotations

import json
from typing import Annotated, Any

from ...core import policy
from ...core.context import ToolContext
from ...core.deferral import deferral_enabled, is_deferrable, require_deferral, unwrap_tool_call
from ...core.errors import ExitClass, ToolError
from ...core.params import Field, model_validator
from ...core.registry import Example, FailureMode, Hints, Params, ToolSpec, registry_of, specs, toolset_of
from ...core.tooldoc import tool_markdown

SEARCH_DEFAULT_LIMIT = 5
SEARCH_MAX_LIMIT = 20
DESCRIPTION_CAP = 400


def unknown_capability(name: str) -> ToolError:
    """The same answer for a tool that does not exist and one the caller may not see."""
    # The name is a value the tool looks up, not a malformed call: exit 1, as for any lookup.
    return ToolError(
        "unknown_tool", f"Unknown capability: {name}", {"tool": name}, exit_class=ExitClass.TOOL_FAILED
    )


def visible_spec(ctx: ToolContext, name: str) -> ToolSpec:
    """The spec of `name` if the caller may see it, else `Unknown capability` either way."""
    spec = toolset_of(ctx).get(name, ctx)
    if spec is None or not policy.can_see(spec, ctx):
        raise unknown_capability(name)
    return spec


# ----- tool_help ---------------------------------------------------------------------------------


class ToolNameParams(Params):
    name: Annotated[str, Field(max_length=256, description="Tool name to describe")]


def tool_help(p: ToolNameParams, ctx: ToolContext) -> dict[str, Any]:
    spec = visible_spec(ctx, p.name)
    schema = spec.schema_for(ctx)  # as this caller's model is shown it (a mode's limits: /ultra)
    return {"name": spec.name, "markdown": tool_markdown(spec, schema), "input_schema": schema}


# ----- the deferral bridges ----------------------------------------------------------------------


def _plugin_of(spec: ToolSpec) -> str:
    if spec.kind == "mcp":
        return "mcp"
    if spec.kind == "plugin":
        return spec.name.split("_", 1)[0]
    return spec.kind


def deferred_catalog(ctx: ToolContext) -> list[ToolSpec]:
    """The deferred tools this caller could dispatch, from every toolset it sees, sorted by name.

    A model run that left tools off its list to fit the model's context names them in
    `ctx.extras["unlisted_tools"]`; they are found here too.
    """
    unlisted = ctx.extras.get("unlisted_tools") or ()
    return [
        s
        for s in toolset_of(ctx).tools(ctx)
        if (is_deferrable(s) or s.name in unlisted) and policy.can_see(s, ctx)
    ]


class ToolSearchParams(Params):
    query: Annotated[
        str, Field(min_length=1, max_length=1000, description="Keywords describing the capability you need")
    ]
    limit: Annotated[int | None, Field(description="Maximum results to return (default 5, max 20)")] = None


def tool_search(p: ToolSearchParams, ctx: ToolContext) -> dict[str, Any]:
    from .bm25 import bm25_scores, tokenize

    limit = max(1, min(SEARCH_MAX_LIMIT, p.limit if p.limit is not None else SEARCH_DEFAULT_LIMIT))
    catalog = deferred_catalog(ctx)
    docs = [
        tokenize(" ".join([s.name, s.description, *s.input_schema().get("properties", {})])) for s in catalog
    ]
    scored = [(score, s) for score, s in zip(bm25_scores(p.query, docs), catalog, strict=True) if score > 0]
    scored.sort(key=lambda pair: (-pair[0], pair[1].name))
    hits = [s for _, s in scored]
    if not hits:
        needle = p.query.strip().lower()
        hits = [s for s in catalog if needle and needle in s.name.lower()]
    return {
        "query": p.query,
        "total_available": len(catalog),
        "matches": [
            {"name": s.name, "plugin": _plugin_of(s), "description": s.description[:DESCRIPTION_CAP]}
            for s in hits[:limit]
        ],
    }


def tool_describe(p: ToolNameParams, ctx: ToolContext) -> dict[str, Any]:
    spec = visible_spec(ctx, p.name)
    schema = spec.schema_for(ctx)
    markdown = (
        tool_markdown(spec, schema)
        + "\n## Input schema\n\n```json\n"
        + json.dumps(schema, indent=2)
        + "\n```\n"
    )
    return {"name": spec.name, "markdown": markdown, "input_schema": schema}


def _object_schema(schema: dict[str, Any]) -> None:
    # Any-typed so a malformed value reaches the handler's own message; models see an object.
    schema.pop("default", None)
    schema["type"] = "object"


_MISSING = object()


class ToolCallParams(Params):
    name: Annotated[str, Field(max_length=256, description="Deferred tool name to invoke")]
    arguments: Annotated[
        Any, Field(description="The tool's arguments, as a JSON object", json_schema_extra=_object_schema)
    ]

    @model_validator(mode="before")
    @classmethod
    def _arguments_are_an_object(cls, value: Any) -> Any:
        """Missing, null or non-object `arguments` answer in the reference's words, never reach a tool."""
        if isinstance(value, dict) and isinstance(value.get("name"), str):
            arguments = value.get("arguments", _MISSING)
            if not isinstance(arguments, dict):
                raise malformed_tool_call(value["name"], arguments)
        return value


def _json_kind(value: Any) -> str:
    """A JSON value's type in JSON's words (`null`, `a string`), never Python's (`NoneType`, `str`)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "an array"
    return "an object" if isinstance(value, dict) else f"a {type(value).__name__}"


def malformed_tool_call(name: Any, arguments: Any) -> ToolError:
    got = "no arguments" if arguments is _MISSING else f"arguments {_json_kind(arguments)}"
    return ToolError(
        "invalid_tool_call",
        f"Malformed tool_call (got name={name!r}, {got}): "
        'call it as {"name": "<tool>", "arguments": {...}} with an object of arguments (`{}` for none), '
        "or call the tool directly by its name",
        {"name": name},
    )


def tool_call(p: ToolCallParams, ctx: ToolContext) -> Any:
    # A model run routes tool_call to its target before dispatch; this runs for direct and malformed calls.
    target = unwrap_tool_call({"name": p.name, "arguments": p.arguments})
    if target is None:
        raise malformed_tool_call(p.name, p.arguments)
    name, arguments = target
    visible_spec(ctx, name)
    return registry_of(ctx).invoke(name, arguments, ctx)


def _bridge_gate(name: str) -> Any:
    return lambda ctx: require_deferral(ctx, name)


# ----- declarations ------------------------------------------------------------------------------

_BRIDGE_NOTE = " Registered when tool-schema deferral is on ([fermix_core.tools.tool_search] enabled)."

TOOLS = specs(
    ToolSpec(
        name="tool_help",
        category="meta",
        policy_class="read_only",
        description=(
            "Return the full documentation of one registered tool as the caller may see it: description, "
            "parameters, examples and failure modes."
        ),
        params=ToolNameParams,
        handler=tool_help,
        render=lambda r: r["markdown"],
        hints=Hints(read_only=True, idempotent=True),
        when_to_use="Check a tool's parameters before calling it.",
        examples=(Example({"name": "file_read"}, "document file_read"),),
        failure_modes=(FailureMode("unknown_tool", "no such tool, or one outside the caller's permissions"),),
        toolsets=frozenset({"fermix", "coding"}),
    ),
    ToolSpec(
        name="tool_search",
        category="meta",
        policy_class="read_only",
        description=(
            "Keyword search over the deferred plugin and MCP tools this caller could run (BM25 over name, "
            "description and parameter names; a name substring match when nothing scores)." + _BRIDGE_NOTE
        ),
        params=ToolSearchParams,
        handler=tool_search,
        hints=Hints(read_only=True, idempotent=True),
        when_to_use="You know roughly what you need but not the tool's name.",
        examples=(Example({"query": "create github issue", "limit": 3}, "find an issue-filing tool"),),
        failure_modes=(FailureMode("unknown_tool", "deferral is off, so the bridge does not exist"),),
        available=deferral_enabled,
        gate=_bridge_gate("tool_search"),
    ),
    ToolSpec(
        name="tool_describe",
        category="meta",
        policy_class="read_only",
        description="Return the full documentation and input schema of one deferred tool." + _BRIDGE_NOTE,
        params=ToolNameParams,
        handler=tool_describe,
        render=lambda r: r["markdown"],
        hints=Hints(read_only=True, idempotent=True),
        when_to_use="After tool_search, to read a tool's parameters before calling it.",
        examples=(Example({"name": "mcp_github_create_issue"}, "the schema of a deferred MCP tool"),),
        failure_modes=(FailureMode("unknown_tool", "no such tool, or one outside the caller's permissions"),),
        available=deferral_enabled,
        gate=_bridge_gate("tool_describe"),
    ),
    ToolSpec(
        name="tool_call",
        category="meta",
        policy_class="read_only",
        description=(
            "Invoke a deferred tool by name with an object of arguments. Policy and logs see the real tool; "
            "calling the tool directly by its name works too." + _BRIDGE_NOTE
        ),
        params=ToolCallParams,
        handler=tool_call,
        hints=Hints(open_world=True),
        when_to_use="Run a tool found with tool_search.",
        examples=(
            Example(
                {"name": "mcp_github_create_issue", "arguments": {"title": "Bug"}}, "run a deferred tool"
            ),
        ),
        failure_modes=(
            FailureMode(
                "invalid_tool_call", "arguments is missing, null or not an object, or the target is a bridge"
            ),
            FailureMode("unknown_tool", "no such tool, or one outside the caller's permissions"),
        ),
        available=deferral_enabled,
        gate=_bridge_gate("tool_call"),
    ),
)
