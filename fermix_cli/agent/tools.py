"""The agent domain's tool: model_routing_config, which model delegated sub-agents run on."""

from __future__ import annotations

from typing import Annotated, Any

from ..core.context import ToolContext
from ..core.errors import ToolError
from ..core.params import Field
from ..core.registry import Example, FailureMode, Hints, Params, ToolSpec, specs

ROUTING_ACTIONS = ("read", "set", "delete")
SETTABLE_KEYS = ("subagent_provider", "subagent_model", "subagent_reasoning_effort")
EFFORTS = ("none", "low", "medium", "high", "xhigh", "max")
_OPENAI_MODEL_PREFIXES = ("gpt-", "o1", "o3", "o4", "chatgpt-", "davinci", "babbage")


class RoutingParams(Params):
    # Null stands for an omitted key/value (strict-schema providers send every key), as for the memory
    # tools; action is required, so null is refused there.
    null_means_absent = frozenset({"key", "value"})
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


def _check_pair(ctx: ToolContext, routed_provider: str | None, routed_model: str | None) -> None:
    """Refuse a route whose workers would send their model to a provider that cannot run it.

    The pair checked is the one the workers will use: the same inference from the model's slug and
    the same fallbacks (`worker_route`, then `choose_provider`), so a route that works is accepted.
    """
    from .providers import choose_provider, worker_route

    provider, model = worker_route(routed_provider, routed_model)
    if model is None:
        return  # the provider's own default model: nothing to mismatch
    try:
        choice = choose_provider(ctx.config, provider=provider, model=model)
    except ToolError:
        return  # no provider resolves yet (nothing configured): the workers' call names the fix
    if _mismatch(choice.kind, choice.is_official, choice.model):
        if routed_provider:
            why, fix = "the subagent_provider", "change subagent_provider or pick a model it serves"
        else:
            why = "which workers fall back to: no subagent_provider is set and the model's name names none"
            fix = "set subagent_provider to a provider that serves it"
        raise ToolError(
            "invalid_value",
            f"model {choice.model!r} does not run on provider {choice.name!r} ({choice.kind}), {why}; {fix}",
            {"provider": choice.name, "model": choice.model},
        )


def _validated_value(ctx: ToolContext, key: str, value: str) -> str:
    from .providers import known_providers

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
        _check_pair(ctx, routing.subagent_provider, value)
    elif value not in EFFORTS:
        raise ToolError(
            "invalid_value",
            f"reasoning effort must be one of {', '.join(EFFORTS)}, got {value!r}",
            {"key": key, "value": value},
        )
    return value


def model_routing_config(p: RoutingParams, ctx: ToolContext) -> dict[str, Any]:
    from ..core.grants import update_config

    if p.action not in ROUTING_ACTIONS:
        raise ToolError("invalid_action", f"{p.action} (use read, set or delete)", {"action": p.action})
    # The key's published enum holds for every action, read included.
    if p.key is not None and p.key not in SETTABLE_KEYS:
        raise ToolError(
            "invalid_key",
            f"{p.key} (only {', '.join(SETTABLE_KEYS)} can be changed here; cron_* keys are changed by "
            "editing config.toml; meeting_* keys are read for compatibility only, fermix has no "
            "meetings feature that uses them)",
            {"key": p.key},
        )
    if p.action == "read":
        return ctx.config.fermix_core.routing.model_dump(mode="json")
    if p.key is None:
        raise ToolError("missing_parameters", "Missing required parameter: key", {"parameter": "key"})
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

    was_set = False

    def delete_value(doc: dict[str, Any]) -> dict[str, Any]:
        nonlocal was_set
        routing = doc.get("fermix_core", {}).get("routing", {})
        if key in routing:
            del routing[key]
            was_set = True
        return doc

    if ctx.paths.config_file.exists():  # no file, nothing set: and nothing to create
        update_config(ctx.paths, delete_value)
        ctx.reload_config()
    if not was_set:
        return {"deleted": False, "key": key, "message": f"{key} was not set in config.toml; nothing changed"}
    return {"deleted": key}


TOOLS = specs(
    ToolSpec(
        name="model_routing_config",
        category="config",
        policy_class="read_write",
        description=(
            "Read or change which model delegated sub-agents run on (never the main agent's). `read` returns "
            "the whole [fermix_core.routing] block; `set` and `delete` change subagent_provider, "
            "subagent_model or subagent_reasoning_effort in config.toml, applied live (deleting a key that "
            "is not set changes nothing and answers deleted: false)."
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
