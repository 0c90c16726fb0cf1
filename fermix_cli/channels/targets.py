"""Delivery targets: which are valid, and the owner's default one (reference 8.2, 9.2 "Delivery target").

A target is `{"platform": P, <one address key>: A}` plus optionally a thread (`message_thread_id`, a
positive integer, or `thread_ts`, a string; never both). The platforms are fermix's channels:

| platform | address | what it is |
| --- | --- | --- |
| `inbox` (also `local`) | an inbox name | `$FERMIX_HOME/inbox/NAME.jsonl`, read with `fermix inbox NAME` |
| `telegram` | a chat id or `@channel` | the owner's bot, `[fermix_core.channels.telegram]` |
| `webhook` | a name | `[fermix_core.channels.webhooks.NAME]`: JSON, Slack or ntfy POST |
| `desktop` | any name | a notification on this session's bus |
| `apprise` | a name | `[fermix_core.channels.apprise.NAME]`, the optional Apprise extra |

The seed's platform list is telegram, slack, discord, signal and whatsapp. fermix has a channel only for
Telegram of those: a Slack channel is reached through a `webhook` in `slack` format, Discord, Signal and
WhatsApp through `apprise`. A target on a platform with no channel is refused (`unsupported_channel`, the
message naming the way there), never accepted and dropped; `cli` is refused with its own message, and so
are the keys `reply_to` and `req_options`. A target on a channel that is not set up in config.toml (no
bot token, no such named webhook) is refused when it is checked (`channel_not_configured`).

`resolve_default_target(config)` is the one place the owner's default target comes from: the configured
`[fermix_core.jobs] default_delivery_target` first (invalid: the call fails, never falling through),
otherwise derived from the first channel with an explicit owner id (Telegram; fermix has no Signal or
WhatsApp channel), otherwise `no_default_target`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from ..core.errors import ToolError
from ..core.records import Record

PLATFORMS = ("inbox", "telegram", "webhook", "desktop", "apprise")
ALIASES = {"local": "inbox"}
ADDRESS_KEYS = ("chat_id", "channel_id", "recipient", "target", "reply_target")
THREAD_KEYS = ("thread_ts", "message_thread_id")
REFUSED_KEYS = ("reply_to", "req_options")
DEFAULT_TARGET_KEY = "[fermix_core.jobs] default_delivery_target"

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
TELEGRAM_CHAT = re.compile(r"-?[0-9]{1,20}|@[A-Za-z][A-Za-z0-9_]{3,31}")

# Platforms of the seed (and a few more) that fermix reaches through another channel.
ROUTES = {
    "slack": 'a Slack incoming webhook: add [fermix_core.channels.webhooks.NAME] with format = "slack" and '
    'use {"platform": "webhook", "recipient": NAME}',
    "discord": 'Apprise (discord://...): add [fermix_core.channels.apprise.NAME] and use {"platform": "apprise", '
    '"recipient": NAME}',
    "signal": 'Apprise (signal://...): add [fermix_core.channels.apprise.NAME] and use {"platform": "apprise", '
    '"recipient": NAME}',
    "whatsapp": 'Apprise (whatsapp://...): add [fermix_core.channels.apprise.NAME] and use {"platform": '
    '"apprise", "recipient": NAME}',
}


def _invalid(source: str, message: str, **details: Any) -> ToolError:
    return ToolError("invalid_delivery", f"{source}: {message}", {"source": source, **details})


def check_target(
    target: Mapping[str, Any], *, source: str = "delivery_target", config: Any = None
) -> dict[str, Any]:
    """A valid target, cleaned (platform aliases resolved); a `ToolError` saying what to fix otherwise.

    With `config`, a target on a channel that is not set up there is refused too.
    """
    platform_raw = target.get("platform")
    if platform_raw == "cli":
        raise _invalid(
            source,
            "platform cli is not a delivery target: a command line has no chat to deliver to later. Use "
            '{"platform": "inbox", "recipient": "owner"} and read it with `fermix inbox`.',
            platform="cli",
        )
    refused = [k for k in REFUSED_KEYS if k in target]
    if refused:
        raise _invalid(
            source,
            f"{', '.join(refused)} cannot be part of a stored target (a delivery starts a new message; it "
            "never replies to one). Remove it.",
            keys=refused,
        )
    allowed = {"platform", *ADDRESS_KEYS, *THREAD_KEYS}
    unknown = sorted(set(target) - allowed)
    if unknown:
        raise _invalid(
            source,
            f"unknown keys: {', '.join(unknown)}. A target is "
            f"{{platform, one of {'|'.join(ADDRESS_KEYS)}, optional {'|'.join(THREAD_KEYS)}}}.",
            keys=unknown,
        )
    for key, value in target.items():
        if isinstance(value, bool) or not isinstance(value, str | int) or str(value).strip() == "":
            raise _invalid(source, f"{key} must be a non-empty string or integer.", key=key)
    platform = str(target.get("platform", "")).strip()
    platform = ALIASES.get(platform, platform)
    addresses = [k for k in ADDRESS_KEYS if k in target]
    if not platform or len(addresses) != 1:
        raise _invalid(
            source,
            f"a target needs `platform` and exactly one of {', '.join(ADDRESS_KEYS)} "
            '(e.g. {"platform": "inbox", "recipient": "owner"}).',
            target=dict(target),
        )
    if platform not in PLATFORMS:
        route = ROUTES.get(platform.lower())
        raise ToolError(
            "unsupported_channel",
            f"{source}: fermix cannot deliver to platform {platform!r}: it has no such channel. "
            + (f"Reach it through {route}." if route else f"The channels are {', '.join(PLATFORMS)}.")
            + ' The local inbox always works: {"platform": "inbox", "recipient": NAME}.',
            {"platform": platform, "deliverable": list(PLATFORMS), "source": source},
        )
    address_key = addresses[0]
    address: str | int = target[address_key]
    address = address.strip() if isinstance(address, str) else address
    _check_address(platform, address, source)
    clean: dict[str, Any] = {"platform": platform, address_key: address}
    _check_thread(platform, target, source, clean)
    if config is not None:
        check_configured(clean, config, source)
    return clean


def _check_address(platform: str, address: str | int, source: str) -> None:
    text = str(address)
    if platform == "telegram":
        if not TELEGRAM_CHAT.fullmatch(text):
            raise _invalid(
                source,
                f"Telegram chat id {text!r}: give the numeric chat id (your user id for a private chat with "
                "the bot) or a public @channel name.",
                address=text,
            )
        return
    if not NAME.fullmatch(text):
        what = "inbox name" if platform == "inbox" else f"{platform} name"
        raise _invalid(
            source,
            f"{what} {text!r}: use 1-64 letters, digits, '_', '.' or '-', starting with a letter or digit.",
            address=text,
        )


def _check_thread(platform: str, target: Mapping[str, Any], source: str, clean: dict[str, Any]) -> None:
    if "thread_ts" in target and "message_thread_id" in target:
        raise _invalid(
            source,
            "give a thread as either message_thread_id (Telegram) or thread_ts (Slack), never both.",
        )
    if "message_thread_id" in target:
        value = target["message_thread_id"]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise _invalid(source, "message_thread_id must be a positive integer.", key="message_thread_id")
        clean["message_thread_id"] = value
    if "thread_ts" in target:
        if platform == "telegram":
            raise _invalid(
                source,
                "thread_ts is Slack's thread key; a Telegram topic is message_thread_id.",
                key="thread_ts",
            )
        clean["thread_ts"] = str(target["thread_ts"]).strip()


def check_configured(target: Mapping[str, Any], config: Any, source: str = "delivery_target") -> None:
    """Refuse a target whose channel is not set up in config.toml (`channel_not_configured`)."""
    platform = target["platform"]
    address = str(next(target[k] for k in ADDRESS_KEYS if k in target))
    channels = config.fermix_core.channels
    missing: str | None = None
    if platform == "telegram":
        telegram = channels.telegram
        if telegram.bot_token is None and telegram.bot_token_env is None:
            missing = (
                "Telegram has no bot token: set [fermix_core.channels.telegram] bot_token or bot_token_env."
            )
    elif platform == "webhook" and address not in channels.webhooks:
        missing = f"there is no webhook named {address!r}: add [fermix_core.channels.webhooks.{address}] with its url."
    elif platform == "apprise" and address not in channels.apprise:
        missing = f"there is no Apprise URL named {address!r}: add [fermix_core.channels.apprise.{address}]."
    if missing is not None:
        raise ToolError(
            "channel_not_configured",
            f"{source}: {missing}",
            {"platform": platform, "address": address, "source": source},
        )


class DefaultTarget(Record, frozen=True):
    """The owner's default target and where it came from: `configured` or `derived`."""

    target: dict[str, Any]
    source: str

    def as_dict(self) -> dict[str, Any]:
        return {"target": self.target, "source": self.source}


def resolve_default_target(config: Any) -> DefaultTarget:
    """The owner's default delivery target (reference 9.2): configured, else derived, else `no_default_target`.

    A `default_delivery_mode` of none, origin or local is refused before either step, and a configured
    target that is invalid (or on a channel not set up) fails here instead of falling through.
    """
    jobs = config.fermix_core.jobs
    mode = jobs.default_delivery_mode
    if mode in ("none", "origin", "local"):
        raise ToolError(
            "invalid_delivery",
            f"[fermix_core.jobs] default_delivery_mode is {mode}, which delivers nothing to the owner's "
            "inbox; set it to channel (or remove it) to have a default target.",
            {"default_delivery_mode": mode, "source": "configured"},
        )
    if jobs.default_delivery_target is not None:
        target = check_target(jobs.default_delivery_target, source=DEFAULT_TARGET_KEY, config=config)
        return DefaultTarget(target, "configured")
    telegram = config.fermix_core.channels.telegram
    if telegram.owner_user_id is not None and (
        telegram.bot_token is not None or telegram.bot_token_env is not None
    ):
        return DefaultTarget({"platform": "telegram", "chat_id": telegram.owner_user_id}, "derived")
    raise ToolError(
        "no_default_target",
        "there is no default delivery target: set [fermix_core.jobs] default_delivery_target (for example "
        '{ platform = "inbox", recipient = "owner" }), or set up a channel with an owner id '
        "([fermix_core.channels.telegram] bot_token and owner_user_id).",
        {},
    )
