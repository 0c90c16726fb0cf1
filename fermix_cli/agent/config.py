"""The model loop's config: `[fermix_core.providers.NAME]`, `[fermix_core.agent]`, `[fermix_core.routing]`."""

from __future__ import annotations

from typing import Annotated, Literal

from ..core.config import Endpoint, Name, Secret, Section
from ..core.errors import ToolError
from ..core.params import AfterValidator, Field

PROVIDER_TYPES = ("openai", "anthropic", "mock", "echo")
ProviderType = Literal["openai", "anthropic", "mock", "echo"]
ReasoningEffort = Literal["none", "low", "medium", "high", "xhigh", "max"]


class ProviderConfig(Section):
    """One `[fermix_core.providers.NAME]` block. NAME is the type unless `type` says otherwise."""

    type: ProviderType | None = None
    base_url: Endpoint | None = None
    default_model: Name | None = None
    api_key: Secret | None = None
    api_key_env: Name | None = None
    headers: dict[str, str] = {}
    max_tokens: Annotated[int, Field(ge=1, le=1_000_000)] | None = None
    max_retries: Annotated[int, Field(ge=0, le=10)] = 3
    read_timeout: Annotated[float, Field(gt=0, le=3600)] = 120.0
    script: Name | None = None
    schema_profile: Literal["full", "grammar"] | None = None
    context_window: Annotated[int, Field(ge=256, le=10_000_000)] | None = None
    tool_choice: Name | None = None
    # Whether the model takes images (tool screenshots). Unset: yes for Anthropic and OpenAI's own API,
    # no for other OpenAI-compatible servers, which get a text line naming the image file instead.
    vision: bool | None = None


class AgentConfig(Section):
    """`[fermix_core.agent]`: the main agent's defaults (the model loop behind ask and agent)."""

    provider: Name | None = None
    model: Name | None = None
    system_prompt: Annotated[str, Field(max_length=100_000)] | None = None
    toolset: Literal["fermix", "coding"] = "fermix"
    max_iterations: Annotated[int, Field(ge=1, le=10_000)] = 25
    # Interactive turns (`fermix agent`, channel conversations), sub-agents and scheduled jobs.
    max_iterations_scheduled: Annotated[int, Field(ge=1, le=10_000)] = 100
    repeat_limit: Annotated[int, Field(ge=2, le=100)] = 3


class RoutingConfig(Section):
    """`[fermix_core.routing]`: which model delegated sub-agents and unpinned scheduled runs use.

    `meeting_*` are accepted and shown by `model_routing_config read` (the reference's routing block has
    them, for the original's meetings tools) but fermix has no meetings feature: nothing reads them.
    """

    subagent_provider: Name | None = None
    subagent_model: Name | None = None
    subagent_reasoning_effort: ReasoningEffort | None = None
    cron_provider: Name | None = None
    cron_model: Name | None = None
    cron_reasoning_effort: ReasoningEffort | None = None
    meeting_provider: Name | None = None
    meeting_model: Name | None = None
    meeting_reasoning_effort: ReasoningEffort | None = None


def _typed(providers: dict[str, ProviderConfig]) -> dict[str, ProviderConfig]:
    """A provider block not named after a type must say its type."""
    for name, block in providers.items():
        if block.type is None and name not in PROVIDER_TYPES:
            key = f"fermix_core.providers.{name}.type"
            raise ToolError(
                "invalid_config",
                f"{key}: missing; a provider named {name!r} must say its type "
                f"({', '.join(PROVIDER_TYPES)}). Fix or remove this block.",
                {"key": key, "errors": [{"key": key, "message": "missing"}]},
            )
    return providers


Providers = Annotated[dict[Name, ProviderConfig], AfterValidator(_typed)]

CONFIG_SECTIONS = {
    "fermix_core.providers": Providers,
    "fermix_core.agent": AgentConfig,
    "fermix_core.routing": RoutingConfig,
}
