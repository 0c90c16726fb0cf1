"""Meta tools: documentation of the registry itself, the deferral bridges, and model routing."""

from __future__ import annotations

import json
from typing import Annotated, Any

from ...core import policy
from ...core.context import ToolContext
from ...core.deferral import deferral_enabled, is_deferrable, require_deferral, unwrap_tool_call
from ...core.errors import ToolError
from ...core.params import Field
from ...core.registry import Example, FailureMode, Hints, Params, ToolSpec, registry_of, specs, toolset_of
from ...core.tooldoc import tool_markdown

SEARCH_DEFAULT_LIMIT = 5
SEARCH_MAX_LIMIT = 20
DESCRIPTION_CAP = 400


def unknown_capability(name: str) -> ToolError:
    """The same answer for a tool that does not exist and one the caller may not see."""
    return ToolError("unknown_tool", f"Unknown capability: {name}", {"tool": name})


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
    return {"name": spec.name, "markdown": tool_markdown(spec), "input_schema": spec.input_schema()}


# ----- the deferral bridges ----------------------------------------------------------------------


def _plugin_of(spec: ToolSpec) -> str:
    if spec.kind == "mcp":
        return "mcp"
    if spec.kind == "plugin":
        return spec.name.split("_", 1)[0]
    return spec.kind


def deferred_catalog(ctx: ToolContext) -> list[ToolSpec]:
    """The deferred tools this caller could dispatch, from every toolset it sees, sorted by name."""
    return [s for s in toolset_of(ctx).tools(ctx) if is_deferrable(s) and policy.can_see(s, ctx)]


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
    schema = spec.input_schema()
    markdown = (
        tool_markdown(spec) + "\n## Input schema\n\n```json\n" + json.dumps(schema, indent=2) + "\n```\n"
    )
    return {"name": spec.name, "markdown": markdown, "input_schema": schema}


def _object_schema(schema: dict[str, Any]) -> None:
    # Any-typed so a malformed value reaches the handler's own message; models see an object.
    schema.pop("default", None)
    schema["type"] = "object"


class ToolCallParams(Params):
    name: Annotated[str, Field(max_length=256, description="Deferred tool name to invoke")]
    arguments: Annotated[
        Any, Field(description="The tool's arguments, as a JSON object", json_schema_extra=_object_schema)
    ] = None


def malformed_tool_call(name: Any, arguments: Any) -> ToolError:
    return ToolError(
        "invalid_tool_call",
        f"Malformed tool_call (got name={name!r}, arguments of type {type(arguments).__name__}): "
        'call it as {"name": "<tool>", "arguments": {...}} with an object of arguments, '
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


# ----- model_routing_config ----------------------------------------------------------------------

ROUTING_ACTIONS = ("read", "set", "delete")
SETTABLE_KEYS = ("subagent_provider", "subagent_model", "subagent_reasoning_effort")
EFFORTS = ("none", "low", "medium", "high", "xhigh", "max")
_OPENAI_MODEL_PREFIXES = ("gpt-", "o1", "o3", "o4", "chatgpt-", "davinci", "babbage")


class RoutingParams(Params):
    action: Annotated[
        str, Field(description="read, set or delete", json_schema_extra={"enum": list(ROUTING_ACTIONS)})
    ]
    key: Annotated[
        str | None,
        Field(
            description="For set/delete: subagent_provider, subagent_model or subagent_reasoning_effort",
            json_schema_extra={"enum": list(SETTABLE_KEYS)},
        ),
    ] = None
    value: Annotated[str | None, Field(max_length=256, description="New value, for set")] = None


def _mismatch(kind: str, official: bool, model: str) -> bool:
    """A provider/model pair that cannot work: an OpenAI model on Anthropic, or Claude on OpenAI itself."""
    m = model.lower()
    if kind == "anthropic":
        return m.startswith(_OPENAI_MODEL_PREFIXES)
    if kind == "openai" and official:
        return m.startswith("claude")
    return False


def _check_pair(ctx: ToolContext, provider: str | None, model: str | None) -> None:
    from ...agent.providers import OFFICIAL_BASE_URLS, kind_of, known_providers

    known = known_providers(ctx.config)
    if provider is None or model is None or provider not in known:
        return
    settings = known[provider]
    kind = kind_of(provider, settings)
    official = settings.base_url is None or settings.base_url.rstrip("/") == OFFICIAL_BASE_URLS.get(kind)
    if _mismatch(kind, official, model):
        raise ToolError(
            "invalid_value",
            f"model {model!r} does not run on provider {provider!r} ({kind}); set a matching pair",
            {"provider": provider, "model": model},
        )


def _validated_value(ctx: ToolContext, key: str, value: str) -> str:
    from ...agent.providers import known_providers

    routing = ctx.config.fermix_core.routing
    value = value.strip()
    if not value:
        raise ToolError("invalid_value", f"{key} cannot be empty; use delete to unset it", {"key": key})
    if key == "subagent_provider":
        known = known_providers(ctx.config)
        if value not in known:
            raise ToolError(
                "invalid_value",
                f"unknown provider {value!r}; known: {', '.join(sorted(known))}",
                {"key": key, "value": value},
            )
        _check_pair(ctx, value, routing.subagent_model)
    elif key == "subagent_model":
        if any(c.isspace() for c in value):
            raise ToolError("invalid_value", f"model {value!r} contains whitespace", {"key": key})
        _check_pair(ctx, routing.subagent_provider or ctx.config.fermix_core.agent.provider, value)
    elif value not in EFFORTS:
        raise ToolError(
            "invalid_value",
            f"reasoning effort must be one of {', '.join(EFFORTS)}, got {value!r}",
            {"key": key, "value": value},
        )
    return value


def model_routing_config(p: RoutingParams, ctx: ToolContext) -> dict[str, Any]:
    from ...core.grants import update_config

    if p.action not in ROUTING_ACTIONS:
        raise ToolError("invalid_action", f"{p.action} (use read, set or delete)", {"action": p.action})
    if p.action == "read":
        return ctx.config.fermix_core.routing.model_dump(mode="json")
    if p.key is None:
        raise ToolError("missing_parameters", "Missing required parameter: key", {"parameter": "key"})
    if p.key not in SETTABLE_KEYS:
        raise ToolError(
            "invalid_key",
            f"{p.key} (only {', '.join(SETTABLE_KEYS)} can be changed here; cron_* and meeting_* keys "
            "are changed by editing config.toml)",
            {"key": p.key},
        )
    key = p.key

    def section(doc: dict[str, Any]) -> dict[str, Any]:
        core = doc.setdefault("fermix_core", {})
        routing: dict[str, Any] = core.setdefault("routing", {})
        return routing

    if p.action == "set":
        if p.value is None:
            raise ToolError("missing_parameters", "Missing required parameter: value", {"parameter": "value"})
        value = _validated_value(ctx, key, p.value)

        def set_value(doc: dict[str, Any]) -> dict[str, Any]:
            section(doc)[key] = value
            return doc

        update_config(ctx.paths, set_value)
        ctx.reload_config()
        return {"updated": key, "value": value}

    def delete_value(doc: dict[str, Any]) -> dict[str, Any]:
        section(doc).pop(key, None)
        return doc

    update_config(ctx.paths, delete_value)
    ctx.reload_config()
    return {"deleted": key}


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
            FailureMode("invalid_tool_call", "arguments is not an object, or the target is a bridge"),
            FailureMode("unknown_tool", "no such tool, or one outside the caller's permissions"),
        ),
        available=deferral_enabled,
        gate=_bridge_gate("tool_call"),
    ),
    ToolSpec(
        name="model_routing_config",
        category="config",
        policy_class="read_write",
        description=(
            "Read or change which model delegated sub-agents run on (never the main agent's). `read` returns "
            "the whole [fermix_core.routing] block; `set` and `delete` change subagent_provider, "
            "subagent_model or subagent_reasoning_effort in config.toml, applied live."
        ),
        params=RoutingParams,
        handler=model_routing_config,
        hints=Hints(idempotent=True),
        when_to_use="Run sub-agents on a smaller or different model.",
        examples=(
            Example({"action": "read"}, "show the routing block"),
            Example({"action": "set", "key": "subagent_model", "value": "gpt-4o-mini"}, "a cheaper model"),
            Example({"action": "delete", "key": "subagent_reasoning_effort"}, "back to the default"),
        ),
        failure_modes=(
            FailureMode("invalid_action", "action is not read, set or delete"),
            FailureMode("invalid_key", "the key is not one of the three sub-agent keys"),
            FailureMode("invalid_value", "unknown provider, bad effort, or a mismatched provider/model pair"),
            FailureMode("missing_parameters", "set without key or value, delete without key"),
        ),
    ),
)
