"""Where deliveries to the owner go: one module per channel behind one small interface.

A channel sends text, and a file where it can, to an address on its platform, and says which of the
two it can do (`capabilities`). `channel_for(platform, paths)` gives the channel for a delivery
target's platform, or None when this fermix has none. Today there is the local inbox (`inbox`); jobs,
and later events, deliver through here instead of carrying their own inbox or webhook code.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .base import Channel, ChannelError, Sent

if TYPE_CHECKING:
    from ..core.paths import FermixPaths

PLATFORMS = ("inbox",)  # the platforms a channel exists for; a target on any other is refused

__all__ = ["PLATFORMS", "Channel", "ChannelError", "Sent", "channel_for"]


def channel_for(platform: str, paths: FermixPaths) -> Channel | None:
    """The channel that delivers to `platform`, or None when this fermix has none."""
    if platform == "inbox":
        from .inbox import InboxChannel

        return InboxChannel(paths)
    return None
