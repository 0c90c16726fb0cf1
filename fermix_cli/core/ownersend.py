"""Sending a message to the owner from background work, through whatever delivers it.

The channels are a domain of their own; a domain that reports to the owner from a `fermix jobs run`
tick (a coding run a job launched, say) does not reach for them. The tick puts a sender in
`ctx.extras["owner_send"]` before it runs the due-work sources, and they call `send_to_owner`. The sender
delivers to `[fermix_core.jobs] default_delivery_target` and says where the message went.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from .context import ToolContext
from .errors import ToolError

# (text, meta) -> where it went (the channel's receipt as JSON); raises ToolError when it was not sent.
OwnerSend = Callable[[str, Mapping[str, Any]], str]
OWNER_SEND_KEY = "owner_send"


def send_to_owner(ctx: ToolContext, text: str, meta: Mapping[str, Any]) -> str:
    """Deliver `text` to the owner; the receipt as JSON. `no_owner_channel` when nothing here delivers."""
    send = ctx.extras.get(OWNER_SEND_KEY)
    if not callable(send):
        raise ToolError(
            "no_owner_channel",
            "nothing in this process delivers to the owner; `fermix jobs run` delivers these messages",
            {},
        )
    result: str = send(text, dict(meta))
    return result
