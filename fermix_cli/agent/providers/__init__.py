"""Choosing a provider and model from flags, config and environment, and building it lazily.

Order: `--provider NAME`; else `-m NAME` when NAME is itself a provider (`-m echo`); else
`[fermix_core.agent] provider`; else the only configured provider; else `openai` when OPENAI_API_KEY
is set, then `anthropic` when ANTHROPIC_API_KEY is; else `no_provider`, naming the fix.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ...core.config import Config
from ...core.errors import ToolError
from ...core.records import Record
from ..config import PROVIDER_TYPES, ProviderConfig

if TYPE_CHECKING:
    from ...core.context import ToolContext
    from .base import Provider

OFFICIAL_BASE_URLS = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com"}
DEFAULT_MODELS = {"openai": "gpt-4o-mini", "anthropic": "claude-sonnet-4-5", "echo": "echo", "mock": "mock"}
KEY_ENV = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
# The Anthropic model of each Claude family, for a family named alone (an agent file's `model: sonnet`, as
# Claude Code writes it). A provider whose own model is of that family uses its model instead.
CLAUDE_FAMILIES = {
    "opus": "claude-opus-4-5",
    "sonnet": DEFAULT_MODELS["anthropic"],
    "haiku": "claude-haiku-4-5",
}

NO_PROVIDER_HELP = (
    "no model provider is configured. Set an API key (export OPENAI_API_KEY=... or ANTHROPIC_API_KEY=...), "
    "or configure one: fermix config set fermix_core.agent.provider openai "
    "(with [fermix_core.providers.openai] base_url and default_model for any OpenAI-compatible server). "
    "To try fermix offline: fermix ask -m echo 'hello'"
)


class ProviderChoice(Record, frozen=True):
    """A resolved provider: its configured name, its type, the model, and its settings."""

    name: str
    kind: str
    model: str
    settings: ProviderConfig

    @property
    def base_url(self) -> str:
        return (self.settings.base_url or OFFICIAL_BASE_URLS.get(self.kind, "")).rstrip("/")

    @property
    def is_official(self) -> bool:
        return self.settings.base_url is None or self.base_url == OFFICIAL_BASE_URLS.get(self.kind)

    def api_key(self, env: Mapping[str, str] | None = None) -> str | None:
        """The key from config, then the configured env var; the usual env var only for the official URL.

        A custom base_url never receives OPENAI_API_KEY or ANTHROPIC_API_KEY unasked.
        """
        env = os.environ if env is None else env
        if self.settings.api_key:
            return self.settings.api_key
        if self.settings.api_key_env:
            return env.get(self.settings.api_key_env, "").strip() or None
        if self.kind in KEY_ENV and self.is_official:
            return env.get(KEY_ENV[self.kind], "").strip() or None
        return None


def known_providers(config: Config) -> dict[str, ProviderConfig]:
    """Every provider name usable here: the configured blocks plus the built-in types."""
    out = {kind: ProviderConfig() for kind in PROVIDER_TYPES}
    out.update(config.fermix_core.providers)
    return out


def kind_of(name: str, settings: ProviderConfig) -> str:
    return settings.type or name


def infer_provider(model: str) -> str | None:
    """The provider a model slug names by its vendor prefix (gpt-*, o1/o3/o4*, chatgpt-*; claude*), or None."""
    m = model.lower()
    if m.startswith(("gpt-", "o1", "o3", "o4", "chatgpt-")):
        return "openai"
    if m.startswith("claude"):
        return "anthropic"
    return None


def worker_route(
    routed_provider: str | None,
    routed_model: str | None,
    *,
    provider: str | None = None,
    model: str | None = None,
) -> tuple[str | None, str | None]:
    """(provider, model) delegated workers ask `choose_provider` for.

    The call's `model`/`provider`, else `[fermix_core.routing] subagent_*` (`routed_*`); a model with no
    provider named for it runs on the provider its slug names. `model_routing_config` checks a new
    route through this same function, so it accepts exactly the pairs the workers will use.
    """
    if model is not None:
        return provider or infer_provider(model) or routed_provider, model
    inferred = infer_provider(routed_model) if routed_model is not None else None
    return provider or routed_provider or inferred, routed_model


def claude_family_route(
    config: Config, family: str, env: Mapping[str, str] | None = None
) -> ProviderChoice | None:
    """The Anthropic provider and model for the Claude `family` (`opus`, `sonnet`, `haiku`), or None
    when no provider of type anthropic can run here (none configured, and no ANTHROPIC_API_KEY).

    The provider: routing's subagent provider, then the agent's, when of type anthropic; then the
    configured blocks of that type, then the built-in `anthropic`. The model: that provider's own
    (`default_model`, or the agent's `model` for the agent's provider) when it is of `family`, else
    `CLAUDE_FAMILIES`.
    """
    from .anthropic_effort import ClaudeModel

    known = known_providers(config)
    agent = config.fermix_core.agent
    candidates = [
        config.fermix_core.routing.subagent_provider,
        agent.provider,
        *config.fermix_core.providers,
        "anthropic",
    ]
    for name in dict.fromkeys(n for n in candidates if n):
        settings = known.get(name)
        if settings is None or kind_of(name, settings) != "anthropic":
            continue
        own = [settings.default_model, agent.model if name == agent.provider else None]
        model = next((m for m in own if m and ClaudeModel(m).family == family), CLAUDE_FAMILIES[family])
        choice = ProviderChoice(name, "anthropic", model, settings)
        if choice.api_key(env) is not None or not choice.is_official:  # as AnthropicProvider requires
            return choice
    return None


def choose_provider(
    config: Config,
    *,
    provider: str | None = None,
    model: str | None = None,
    env: Mapping[str, str] | None = None,
) -> ProviderChoice:
    """Resolve the provider and model for a run (see the module docstring for the order)."""
    env = os.environ if env is None else env
    known = known_providers(config)
    configured = config.fermix_core.providers
    agent = config.fermix_core.agent
    name: str | None = None
    if provider:
        if provider not in known:
            raise ToolError(
                "invalid_provider",
                f"unknown provider {provider!r}; known: {', '.join(sorted(known))}. "
                f"Configure it as [fermix_core.providers.{provider}] with a type",
                {"provider": provider},
            )
        name = provider
    elif model and model in known:
        name, model = model, None
    elif agent.provider:
        if agent.provider not in known:
            raise ToolError(
                "no_provider",
                f"fermix_core.agent.provider is {agent.provider!r}, which is neither a provider type nor a "
                f"[fermix_core.providers.{agent.provider}] block. Add the block or change the key",
                {"provider": agent.provider},
            )
        name = agent.provider
    elif len(configured) == 1:
        name = next(iter(configured))
    else:
        for kind in ("openai", "anthropic"):
            if env.get(KEY_ENV[kind], "").strip():
                name = kind
                break
    if name is None:
        raise ToolError("no_provider", NO_PROVIDER_HELP, {})
    settings = known[name]
    kind = kind_of(name, settings)
    chosen_model = model
    if not chosen_model and agent.model and name == agent.provider:
        chosen_model = agent.model
    if not chosen_model:
        chosen_model = settings.default_model
    if not chosen_model and (settings.base_url is None or kind in ("echo", "mock")):
        chosen_model = DEFAULT_MODELS.get(kind)
    if not chosen_model:
        raise ToolError(
            "no_model",
            f"provider {name!r} has no model. Pass -m MODEL, or set fermix_core.providers.{name}.default_model",
            {"provider": name},
        )
    return ProviderChoice(name, kind, chosen_model, settings)


def build_provider(choice: ProviderChoice, ctx: ToolContext) -> Provider:
    """Construct the provider; HTTP providers (and httpx) are imported only here."""
    if choice.kind == "echo":
        from .echo import EchoProvider

        return EchoProvider(choice.name)
    if choice.kind == "mock":
        from .mock import MockProvider

        return MockProvider.from_settings(
            choice.name, choice.settings.script, choice.model, ctx.cwd or ctx.launch_cwd
        )
    if choice.kind == "openai":
        from .openai import OpenAIProvider

        return OpenAIProvider(choice, ctx)
    if choice.kind == "anthropic":
        from .anthropic import AnthropicProvider

        return AnthropicProvider(choice, ctx)
    raise ToolError("invalid_provider", f"unknown provider type {choice.kind!r}", {"provider": choice.name})
