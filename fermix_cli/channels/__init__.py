"""Where deliveries to the owner go: one module per channel behind one small interface.

A channel sends text, and a file where it can, to an address on its platform, and says which of the
two it can do (`capabilities`). `channel_for(platform, paths, config)` gives the channel for a delivery
target's platform, or None when this fermix has none. The channels: the local inbox (`inbox`, also
spelled `local`), `telegram` (the Bot API), `webhook` (a JSON, Slack or ntfy POST), `desktop` (a
session-bus notification) and `apprise` (the optional Apprise extra). `targets` says which targets are
valid and resolves the owner's default one. Jobs, and later events, deliver through here instead of
carrying their own inbox or webhook code.

A failed send raises `ChannelError` with a stable `code`, the platform's `retry_after` hint and whether
another attempt can help (`permanent`); retrying is the caller's policy.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import Channel, ChannelError, Sent
from .targets import ALIASES, PLATFORMS

if TYPE_CHECKING:
    from ..core.paths import FermixPaths

__all__ = ["PLATFORMS", "Channel", "ChannelError", "Sent", "channel_for"]


def channel_for(platform: str, paths: FermixPaths, config: Any = None) -> Channel | None:
    """The channel that delivers to `platform`, or None when this fermix has none.

    `config` is the loaded config.toml (read from `paths` when the channel needs it and none is given).
    """
    platform = ALIASES.get(platform, platform)
    if platform == "inbox":
        from .inbox import InboxChannel

        return InboxChannel(paths)
    if platform == "desktop":
        from .desktop import DesktopChannel

        return DesktopChannel()
    if platform not in PLATFORMS:
        return None
    if config is None:
        from ..core.config import load_config

        config = load_config(paths.config_file)
    if platform == "telegram":
        from .telegram import TelegramChannel

        return TelegramChannel(config)
    if platform == "webhook":
        from .webhook import WebhookChannel

        return WebhookChannel(config)
    from .apprise_channel import AppriseChannel

    return AppriseChannel(config)
