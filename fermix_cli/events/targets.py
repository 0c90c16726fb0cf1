"""Where an event's reminders go (reference 9.2 "Delivery target"): the configured default target, else
the owner inbox derived from the first channel with an explicit owner id, else `no_default_target`.

Kept minimal; `fermix_cli.channels.targets.resolve_default_target` replaces it once channels has one.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..core.errors import ToolError

if TYPE_CHECKING:
    from ..core.config import Config
    from ..core.paths import FermixPaths

ADDRESS_KEYS = ("chat_id", "channel_id", "recipient", "target", "reply_target")
THREAD_KEYS = ("message_thread_id", "thread_ts")
KEY = "[fermix_core.jobs] default_delivery_target"


def _invalid(message: str, **details: Any) -> ToolError:
    return ToolError("invalid_delivery_target", f"{KEY}: {message}", details)


def check_configured(target: dict[str, Any]) -> dict[str, Any]:
    """A configured target as a channel can deliver it, or an error naming what is wrong (no fall-through)."""
    from ..channels import PLATFORMS

    platform = str(target.get("platform", "")).strip()
    if platform == "cli":
        raise _invalid(
            "platform cli is the terminal, which is not there when a reminder is due; name a channel."
        )
    refused = sorted({"reply_to", "req_options"} & set(target))
    if refused:
        raise _invalid(f"{', '.join(refused)} cannot be part of a default target.", keys=refused)
    unknown = sorted(set(target) - {"platform", *ADDRESS_KEYS, *THREAD_KEYS})
    if unknown:
        raise _invalid(f"unknown keys {', '.join(unknown)}.", keys=unknown)
    if all(k in target for k in THREAD_KEYS):
        raise _invalid("give message_thread_id (Telegram) or thread_ts (Slack), never both.")
    addresses = [k for k in ADDRESS_KEYS if k in target]
    if not platform or len(addresses) != 1 or not str(target[addresses[0]]).strip():
        raise _invalid(f"needs platform and exactly one of {', '.join(ADDRESS_KEYS)}.")
    if platform not in PLATFORMS:
        raise _invalid(
            f"platform {platform!r} has no channel in this fermix (channels: {', '.join(PLATFORMS)}).",
            platform=platform,
        )
    out = {"platform": platform, "address": str(target[addresses[0]]).strip()}
    out.update({k: target[k] for k in THREAD_KEYS if k in target})
    return out


def resolve_default_target(config: Config, paths: FermixPaths) -> tuple[dict[str, Any], str]:
    """(target, source) with source `configured` or `derived`; never the current chat."""
    jobs = config.fermix_core.jobs
    if jobs.default_delivery_mode in ("none", "origin", "local"):
        raise ToolError(
            "invalid_delivery_target",
            f"[fermix_core.jobs] default_delivery_mode is {jobs.default_delivery_mode}, which delivers no "
            "reminder; set it to channel (or remove it) and set a default_delivery_target.",
            {"mode": jobs.default_delivery_mode},
        )
    if jobs.default_delivery_target:
        return check_configured(dict(jobs.default_delivery_target)), "configured"
    # Derivation needs a channel configured with an explicit owner id (Telegram, Signal, WhatsApp); this
    # fermix has no such channel sections yet, so there is nothing to derive from.
    raise ToolError(
        "no_default_target",
        "No delivery target for reminders: set [fermix_core.jobs] default_delivery_target (for example "
        '{platform = "inbox", recipient = "owner"}), or configure a Telegram, Signal or WhatsApp channel '
        "with an explicit owner_user_id so fermix can derive the owner's inbox.",
        {},
    )
