"""The owner's sender that a `fermix jobs run` tick lends its due-work sources (`core/ownersend.py`).

It delivers to `[fermix_core.jobs] default_delivery_target` through that target's channel; nothing of
the channels is imported until a message is sent.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from ..core.context import ToolContext
from ..core.ownersend import OWNER_SEND_KEY


def lend_owner_send(ctx: ToolContext) -> ToolContext:
    """Put the owner's sender in `ctx.extras` (unless one is there already); returns `ctx`."""
    ctx.extras.setdefault(OWNER_SEND_KEY, lambda text, meta: _send(ctx, text, meta))
    return ctx


def _send(ctx: ToolContext, text: str, meta: Mapping[str, Any]) -> str:
    from ..channels import ChannelError, channel_for
    from ..channels.targets import ADDRESS_KEYS, THREAD_KEYS, resolve_default_target
    from ..core.errors import ToolError

    target = resolve_default_target(ctx.config).target
    address_key = next(k for k in ADDRESS_KEYS if k in target)
    channel = channel_for(str(target["platform"]), ctx.paths, ctx.config)
    if channel is None:
        raise ToolError("unsupported_channel", f"no channel delivers to {target['platform']}", {})
    full = {**meta, **{k: target[k] for k in THREAD_KEYS if k in target}}
    try:
        sent = channel.send_text(str(target[address_key]), text, full)
    except ChannelError as e:
        raise ToolError(e.code, str(e), {"permanent": e.permanent}) from None
    return json.dumps(sent.as_dict())
