"""The active channel's reply port: how a tool answers the person in the conversation it runs for.

A front end that holds a conversation (`fermix agent`/`ask` in a terminal, `fermix serve telegram`)
puts its port in `ctx.extras[REPLY_PORT]` before the run, and the files the person sent with this
turn's message in `ctx.extras[INBOUND]`. A scheduled job whose delivery is origin or channel has a port
to its delivery target (fermix_cli/jobs/attachments.py); one whose delivery is local or none sets
`ctx.extras[SENDS_REFUSED]` instead, saying why it sends no files. Tools reach the person only through the
port; with neither (a subagent, a plain `fermix tool` call) there is no active channel.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal, Protocol

from .errors import ToolError
from .records import Record
from .registry import MODEL_STEP

if TYPE_CHECKING:
    from .context import ToolContext

REPLY_PORT = "reply_port"
# Set instead of a port where a run has a destination of sorts that takes no files (a scheduled job whose
# delivery is local or none): the ToolError that send_attachment answers with, rather than "unknown tool".
SENDS_REFUSED = "sends_refused"
INBOUND = "inbound_files"
# Set by a tool whose delivered result answers the turn by itself (a reaction): the loop ends the turn
# without another model call when the model said nothing besides such calls.
ENDS_TURN = "ends_turn"
# The model step (see core.registry.MODEL_STEP) that made a channel call, and the tool that made it.
CHANNEL_STEP = "channel_call_step"

AttachmentKind = Literal["image", "document", "audio", "video", "voice"]


class InboundFile(Record, frozen=True):
    """A file the person sent with this turn's message, saved locally (`inbound:N` counts from 1)."""

    path: str
    kind: AttachmentKind
    mime_type: str
    name: str = ""
    duration: int | None = None  # seconds, for voice, audio and video
    label: str = ""  # what the platform called it (Telegram: photo, voice, video note, ...)


class ReplyPort(Protocol):
    platform: str
    # The emojis this channel accepts as reactions; None when it has no reactions at all.
    reactions: frozenset[str] | None

    def send_attachment(
        self,
        data: bytes,
        *,
        kind: AttachmentKind,
        caption: str | None,
        filename: str,
        mime_type: str,
        source: str,
    ) -> dict[str, Any]:
        """Deliver a file's bytes (read from `source`); where it went, as a JSON-able dict. Raises ToolError."""
        ...

    def react(self, emoji: str) -> dict[str, Any]:
        """React to the person's current message with `emoji` (one of `reactions`). Raises ToolError."""
        ...


def reply_port(ctx: ToolContext) -> ReplyPort | None:
    port: ReplyPort | None = ctx.extras.get(REPLY_PORT)
    return port


def require_port(ctx: ToolContext, tool: str) -> ReplyPort:
    port = reply_port(ctx)
    if port is None:
        raise ToolError(
            "no_active_channel",
            f"{tool} needs an active conversation channel (fermix agent, fermix ask or fermix serve telegram); "
            "this call has none. Write the file somewhere the owner can find it and say where instead.",
            {"tool": tool},
        )
    return port


def refuse_sends(ctx: ToolContext) -> None:
    """Gate: raise the refusal a front end set in `ctx.extras[SENDS_REFUSED]`, if any (a fresh copy)."""
    refusal = ctx.extras.get(SENDS_REFUSED)
    if isinstance(refusal, ToolError):
        raise ToolError(refusal.code, refusal.message, dict(refusal.details), exit_class=refusal.exit_class)


def claim_channel_step(ctx: ToolContext, tool: str) -> None:
    """Take this model step's one channel side effect (reference §14), or refuse: call it next step.

    Outside a model loop (a plain `fermix tool` call) every call is a step of its own.
    """
    step = ctx.extras.get(MODEL_STEP)
    if step is None:
        return
    claimed = ctx.extras.get(CHANNEL_STEP)
    if claimed is not None and claimed[0] == step:
        raise ToolError(
            "channel_call_limit",
            f"{tool} was not run: {claimed[1]} already used this step's channel call, and each model step "
            "may make only one. If it is still needed, call it again next step.",
            {"tool": tool, "used_by": claimed[1]},
        )
    ctx.extras[CHANNEL_STEP] = (step, tool)


def inbound_files(ctx: ToolContext) -> Sequence[InboundFile]:
    files = ctx.extras.get(INBOUND)
    return tuple(files) if files else ()


def supports_reactions(ctx: ToolContext) -> bool:
    port = reply_port(ctx)
    return port is not None and bool(port.reactions)
