"""The rules a new or edited job must pass: text fields, expiry, timeouts, route pin, tools, skill, delivery.

Each check raises a `ToolError` whose tag is in the reference catalogue where it names one
(`invalid_route_pin`, `unknown_skill`, ...) and a fermix tag otherwise; every message says how to fix it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from ..channels import PLATFORMS
from ..channels import targets as channel_targets
from ..core.errors import ExitClass, ToolError
from ..core.records import Record
from .job import DELIVERY_MODES

if TYPE_CHECKING:
    from ..core.config import Config
    from ..core.context import ToolContext
    from .config import JobsConfig

NAME_MAX = 200
TASK_MAX = 20_000
DESCRIPTION_MAX = 1_000
TIMEOUT_MAX = 86_400

# Channel targets (reference 8.2): a platform plus one address key, optionally a thread; the rules
# live with the channels (fermix_cli/channels/targets.py).
ADDRESS_KEYS = channel_targets.ADDRESS_KEYS
THREAD_KEYS = channel_targets.THREAD_KEYS
# The platforms a channel exists for (fermix_cli/channels); a target on any other is refused.
DELIVERABLE_PLATFORMS = PLATFORMS
INBOX_NAME = channel_targets.NAME

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_INSTANT = re.compile(
    r"[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt ][0-9]{2}:[0-9]{2}(?::[0-9]{2}(?:\.[0-9]{1,6})?)?(?:[Zz]|[+-][0-9]{2}:[0-9]{2})",
    re.ASCII,
)


def clean_text(field: str, value: str, limit: int, *, one_line: bool = False) -> str:
    """A required text field, trimmed: blank is `missing_parameters`, over the limit `invalid_input`."""
    text = value.strip()
    if not text:
        raise ToolError("missing_parameters", f"{field} must not be blank.", {"field": field})
    if len(text) > limit:
        raise ToolError(
            "invalid_input",
            f"{field} is {len(text)} characters; the limit is {limit}. Shorten it.",
            {"field": field, "limit": limit, "length": len(text)},
        )
    if one_line and ("\n" in text or "\r" in text or _CONTROL.search(text)):
        raise ToolError(
            "invalid_input", f"{field} must be one line without control characters.", {"field": field}
        )
    return text


def parse_expires_at(value: str, now: datetime) -> datetime:
    """`expires_at`: an ISO-8601 instant with an offset, in the future; returned as aware UTC."""
    text = value.strip()
    from .schedule import aware_instant

    instant = aware_instant(text) if _INSTANT.fullmatch(text) else None
    if instant is None:
        raise ToolError(
            "invalid_expires_at",
            f"expires_at `{value}` is not an ISO-8601 date and time with an offset between years 0001 and "
            "9998; write it like `2026-12-31T23:00:00Z` or `2026-12-31T23:00:00+01:00`.",
            {"expires_at": value},
        )
    if instant <= now:
        raise ToolError(
            "invalid_expires_at",
            f"expires_at {instant.isoformat()} is not in the future (now is {now.astimezone(UTC).isoformat()}).",
            {"expires_at": value, "now": now.astimezone(UTC).isoformat()},
        )
    return instant


def resolve_timeouts(timeout: int | None, inactivity: int | None, jobs: JobsConfig) -> tuple[int, int]:
    """(timeout_seconds, inactivity_timeout_seconds): defaults from config; inactivity within the timeout."""
    wall = jobs.default_timeout_seconds if timeout is None else timeout
    if inactivity is None:
        return wall, min(jobs.default_inactivity_timeout_seconds, wall)
    if inactivity > wall:
        raise ToolError(
            "invalid_timeout",
            f"inactivity_timeout_seconds ({inactivity}) is longer than timeout_seconds ({wall}); "
            "the run would hit its wall-clock timeout first. Lower it or raise timeout_seconds.",
            {"timeout_seconds": wall, "inactivity_timeout_seconds": inactivity},
        )
    return wall, inactivity


def known_providers(config: Config) -> set[str]:
    """Provider names a job may pin: the built-in types plus the configured `[fermix_core.providers.*]`."""
    from ..agent.providers import known_providers as agent_known

    return set(agent_known(config))


def check_route_pin(provider: str | None, model: str | None, config: Config) -> tuple[str, str] | None:
    """The (provider, model) pin, both or neither; an unknown provider is `invalid_route_pin`."""
    if provider is None and model is None:
        return None
    if provider is None or model is None:
        given = "provider" if provider is not None else "model"
        missing = "model" if provider is not None else "provider"
        raise ToolError(
            "invalid_route_pin",
            f"provider and model pin a job together: {given} was given without {missing}. "
            f"Give both, or neither to use the default routing.",
            {"provider": provider, "model": model},
        )
    provider, model = provider.strip(), model.strip()
    if not provider or not model:
        raise ToolError(
            "invalid_route_pin",
            "provider and model must not be blank.",
            {"provider": provider, "model": model},
        )
    known = known_providers(config)
    if provider not in known:
        raise ToolError(
            "invalid_route_pin",
            f"unknown provider {provider!r}; known: {', '.join(sorted(known))}.",
            {"provider": provider, "known": sorted(known)},
        )
    return provider, model


def check_allowed_tools(names: Iterable[str], ctx: ToolContext) -> tuple[str, ...]:
    """The narrowing list, de-duplicated and sorted; every name must be a tool the caller can see."""
    from ..core import policy
    from ..core.registry import default_registry

    wanted = sorted({n.strip() for n in names})
    registry = default_registry()
    missing: list[str] = []
    for name in wanted:
        try:
            spec = registry.get(name) if name else None
        except ToolError:
            spec = None
        if spec is None or spec.hidden_from_agent or not policy.can_see(spec, ctx):
            missing.append(name or "(blank)")
    if missing:
        raise ToolError(
            "tool_not_allowed",
            f"tools not available to the caller: {', '.join(missing)}",
            {"tools": missing},
        )
    return tuple(wanted)


def check_skill(name: str, ctx: ToolContext) -> str:
    """A skill name that discovery finds under the skills directory, or `unknown_skill`."""
    from ..core.skillrefs import discover

    skill = name.strip()
    found = discover(ctx)
    if skill not in found:
        raise ToolError(
            "unknown_skill",
            f"{skill or '(blank)'}: no such skill (known: {', '.join(sorted(found)) or 'none'}). "
            "Skills live in <fermix home>/skills/<name>/SKILL.md.",
            {"skill_name": skill, "known": sorted(found)},
        )
    return skill


# ----- delivery ------------------------------------------------------------------------------------


class Delivery(Record, frozen=True):
    mode: str
    target: dict[str, Any] | None


def check_target(
    target: Mapping[str, Any], *, source: str = "delivery_target", config: Any = None
) -> dict[str, Any]:
    """A channel target (`fermix_cli.channels.targets.check_target`): valid, deliverable and set up."""
    return channel_targets.check_target(target, source=source, config=config)


def _origin_target(ctx: ToolContext) -> dict[str, Any]:
    origin = ctx.extras.get("origin_target")
    if not isinstance(origin, Mapping):
        raise ToolError(
            "invalid_delivery",
            f"delivery_mode origin replies to the chat the job was created from, and this {ctx.origin} call "
            'has none. Use delivery_mode local, or channel with a target such as {"platform": "inbox", '
            '"recipient": "owner"}.',
            {"origin": ctx.origin},
        )
    return check_target(origin, source="origin chat", config=ctx.config)


def resolve_delivery(
    mode: str | None, target: Mapping[str, Any] | None, ctx: ToolContext, jobs: JobsConfig
) -> Delivery:
    """Mode and target as snapshotted at creation (reference 8.2 "Resolution")."""
    if mode is not None and mode not in DELIVERY_MODES:
        raise ToolError(
            "invalid_delivery",
            f"delivery_mode {mode!r} is not one of {', '.join(DELIVERY_MODES)}.",
            {"delivery_mode": mode},
        )
    if mode is None and target is None:
        return _from_config(ctx, jobs)
    if target is not None and mode in ("none", "local", "origin"):
        raise ToolError(
            "invalid_delivery",
            f"delivery_target is only for channel mode; delivery_mode {mode} takes none.",
            {"delivery_mode": mode},
        )
    if mode == "origin":
        return Delivery("origin", _origin_target(ctx))
    if mode in ("none", "local"):
        return Delivery(mode, None)
    if target is None:  # channel without a target: the configured default target, if any
        if jobs.default_delivery_target is None:
            raise ToolError(
                "invalid_delivery",
                "delivery_mode channel needs a delivery_target (and no "
                "[fermix_core.jobs] default_delivery_target is configured).",
                {"delivery_mode": mode},
            )
        return Delivery("channel", _config_target(jobs, ctx))
    return Delivery("channel", check_target(target, config=ctx.config))


def _config_target(jobs: JobsConfig, ctx: ToolContext) -> dict[str, Any]:
    assert jobs.default_delivery_target is not None
    return check_target(
        jobs.default_delivery_target, source=channel_targets.DEFAULT_TARGET_KEY, config=ctx.config
    )


def _from_config(ctx: ToolContext, jobs: JobsConfig) -> Delivery:
    mode = jobs.default_delivery_mode
    if mode is None:
        return (
            Delivery("channel", _config_target(jobs, ctx))
            if jobs.default_delivery_target
            else Delivery("none", None)
        )
    if mode == "channel":
        if jobs.default_delivery_target is None:
            raise ToolError(
                "invalid_delivery",
                "[fermix_core.jobs] default_delivery_mode is channel but default_delivery_target is not set.",
                {},
                exit_class=ExitClass.TOOL_FAILED,
            )
        return Delivery("channel", _config_target(jobs, ctx))
    if mode == "origin":
        return Delivery("origin", _origin_target(ctx))
    return Delivery(mode, None)
